"""What a transport or performance check module works with: the registered transport, its
endpoints, transfers.

One `TransportContext` per run, kept under `conformance.rdt.fixtures.CONTEXT` in the run's stash
(`conformance.rdt.fixtures.module_context`). It owns the endpoint pools; pools whose endpoints
hold devices are stopped at the end of each module, so a device held by an endpoint is free again
before the next module's checks start.

`RdtCtx` is the per-check part: the check's context (conformance.run.check_context) with a typed
reference to the run's TransportContext. The transport and performance areas' contexts
(`TransportCtx`, `PerformanceCtx`) subclass it.

Transfers are always "producer on one endpoint returns the payload through the transport,
consumer on another endpoint takes the ref as an argument", with every wait bounded
(conformance.rdt.transfer).
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Callable, Iterable

from conformance.cluster.manager import SHARED
from conformance.handles import Actor
from conformance.rdt import payloads
from conformance.rdt.config import INTRA_NODE_ENDPOINTS, LATER_DEVICE_BYTES
from conformance.rdt.device import is_host
from conformance.rdt.each_device import on_each_device
from conformance.rdt.pool import Endpoints, PoolCache, alive_nodes, harness_ready, start_endpoints
from conformance.rdt.registration import TransportSetup
from conformance.rdt.transfer import GET_TIMEOUT_S, TransferError, ray_get
from conformance.rdt.warm import WarmActors
from conformance.run.check_context import CheckContext

if TYPE_CHECKING:
    from conformance.run.check_context import RunView

MAX_REBUILDS = 2              # knob: endpoint rebuilds per check after transfers killed them


@dataclass
class CaseResult:
    case_id: str
    problems: list[str] = field(default_factory=list)
    error: str | None = None
    not_run: bool = False

    @property
    def ok(self) -> bool:
        return not self.problems and self.error is None and not self.not_run

    def summary(self) -> str:
        if self.not_run:
            return f"{self.case_id}: not run ({self.error})"
        if self.error:
            return f"{self.case_id}: {self.error}"
        return "; ".join(self.problems)


class TransportContext:
    """The registered transport plus endpoint pools on the shared cluster."""

    def __init__(self, run: RunView, setup: TransportSetup) -> None:
        self.run = run
        self.setup = setup
        self.resource: str = run.manifest.resource_name
        self.pools = PoolCache()
        self.warm = WarmActors()   # the usage checks' lent actors (conformance.rdt.warm)
        # the check now using these pools records the nodes of the endpoints it gets (rdt.fixtures.open_context)
        self.observer: Callable[[Endpoints], None] | None = None
        self.cache: dict[str, Any] = {}

    @property
    def name(self) -> str:
        return self.setup.name

    @property
    def devices(self) -> tuple[str, ...]:
        return self.setup.config.devices

    @property
    def primary_device(self) -> str:
        """The device type performance is measured on: the first non-CPU one, else cpu."""
        return self.setup.device

    def cluster(self) -> Any:
        return self.run.cluster(SHARED)

    # ------------------------------------------------------------------ endpoints
    def intra_node(self, device: str, n: int = 2) -> Endpoints:
        """At least `n` endpoints on one node (the head node first), as many as the node's devices
        allow when the tensors live on one; at most INTRA_NODE_ENDPOINTS.

        Most checks move tensors between two endpoints; the ones that want a third (concurrent
        routes, another consumer) ask for it, and the pool grows by it then. Each endpoint is a
        worker that imports torch (seconds of CPU), and a run that needs only pairs never pays
        for the third. A pool in a collective group (GLOO/NCCL) cannot grow, since an actor joins
        one group per backend: it is started again with all of them."""
        handle = self.cluster()
        key = f"intra/{device}"

        def node_and_cap() -> tuple[dict[str, Any], int]:
            need = None if is_host(device) else self.resource
            nodes = alive_nodes(need)
            if not nodes:
                raise TransferError(f"no node offers {self.resource} for {device} endpoints")
            cap = INTRA_NODE_ENDPOINTS
            if need:
                cap = min(cap, int(nodes[0]["Resources"].get(self.resource, 0)))
            return nodes[0], cap

        def factory(count: int) -> Endpoints:
            node, cap = node_and_cap()
            return start_endpoints(self.setup, self.resource, device=device, nodes=[node["NodeID"]] * min(count, cap),
                                   ready=harness_ready(self.run.machinery))

        eps = self.pools.get(key, handle, lambda: factory(n))
        if len(eps) >= n:
            return self.observed(eps)
        node, cap = node_and_cap()
        want = min(n, cap)
        if len(eps) >= want:
            return self.observed(eps)
        if eps.group is not None or self.setup.collective_backend:
            self.pools.drop(key)
            return self.observed(self.pools.get(key, handle, lambda: factory(want)))
        more = start_endpoints(self.setup, self.resource, device=device, nodes=[eps.node_of(0)] * (want - len(eps)),
                               ready=harness_ready(self.run.machinery))
        eps.actors.extend(more.actors)
        eps.infos.extend(more.infos)
        return self.observed(eps)

    def cross_node(self, device: str) -> Endpoints | None:
        """Two endpoints on two different nodes, or None when the cluster has one node."""
        handle = self.cluster()
        nodes = alive_nodes(None if is_host(device) else self.resource)
        if len(nodes) < 2:
            return None
        return self.observed(self.pools.get(f"cross/{device}", handle, lambda: start_endpoints(
            self.setup, self.resource, device=device, nodes=[nodes[0]["NodeID"], nodes[1]["NodeID"]],
            ready=harness_ready(self.run.machinery))))

    def observed(self, eps: Endpoints) -> Endpoints:
        """`eps`, after the check using the pools recorded the nodes its endpoints are on."""
        if self.observer is not None:
            self.observer(eps)
        return eps

    def release(self, key_prefix: str = "") -> None:
        for key in list(self.pools._pools):
            if key.startswith(key_prefix):
                self.pools.drop(key)

    def release_device_pools(self) -> None:
        """Stop the endpoints that hold accelerator units (pool keys are "<kind>/<device>") and the
        idle lent actors that hold one, and wait until Ray has the units back, so the next check
        finds every device free."""
        dropped = False
        for key in list(self.pools._pools):
            if not is_host(key.rpartition("/")[2]):
                self.pools.drop(key)
                dropped = True
        idle = self.warm.take_idle(holding_units=True) + self.warm.take_lent()   # lent now: a check left them
        if idle:
            import ray
            for a in idle:
                try:
                    ray.kill(a)
                except Exception:  # noqa: BLE001 - already gone with its cluster
                    pass
            dropped = True
        if dropped:
            self.wait_units_free()

    def wait_units_free(self) -> None:
        """Every unit of the resource free again after endpoints ended: Ray's accounting, awaited as
        Ray's machinery with the run's record, recorded in the check running (conformance.run.release)."""
        import ray

        from conformance.run.release import await_released
        if ray.is_initialized():
            await_released(self.resource, "every device to be free after the transport's endpoints ended",
                           machinery=self.run.machinery)

    def close(self) -> None:
        self.pools.close()

    # ------------------------------------------------------------------ transfers
    def produce(self, src: Actor, case: dict[str, Any], transport: str | None = None) -> Any:
        return src.make.options(tensor_transport=transport or self.name).remote(case)

    def transfer(self, src: Actor, dst: Actor, case: dict[str, Any], transport: str | None = None,
                 timeout: float = GET_TIMEOUT_S) -> tuple[Any, Any]:
        """(sent digest, received digest) of one case moved src -> dst."""
        ref = self.produce(src, case, transport)
        try:
            got = ray_get(dst.receive.remote(ref), timeout, f"{case['id']}: consumer")
            sent = ray_get(src.sent_digest.remote(case["id"]), timeout, f"{case['id']}: producer")
        finally:
            del ref   # a ref kept alive by a traceback would pin the object on the source
        return sent, got

    def run_cases(self, device: str, cases: Iterable[dict[str, Any]], fields: tuple[str, ...],
                  endpoints: Callable[[], Endpoints] | None = None, src: int = 0, dst: int = 1,
                  timeout: float = GET_TIMEOUT_S) -> list[CaseResult]:
        """Move each case src -> dst, one at a time, comparing `fields`.

        When a failed transfer took the endpoints down (Ray kills both actors of a transport
        that cannot abort), the pool is rebuilt up to MAX_REBUILDS times; cases after that are
        reported as not run.
        """
        get_eps = endpoints or (lambda: self.intra_node(device))
        eps = get_eps()
        results: list[CaseResult] = []
        rebuilds = 0
        for case in cases:
            if rebuilds > MAX_REBUILDS:
                results.append(CaseResult(case["id"], not_run=True,
                                          error=f"endpoints lost {rebuilds} times after failed transfers"))
                continue
            try:
                sent, got = self.transfer(eps.actors[src], eps.actors[dst], case, timeout=timeout)
                results.append(CaseResult(case["id"], problems=payloads.compare(sent, got, fields)))
            except TransferError as exc:
                error = str(exc)
                if "ActorDiedError" in error and not self.setup.can_abort:
                    error += (" (Ray kills both actors when a transfer fails on a transport that cannot abort; "
                              "the cause is in the source's worker log)")
                results.append(CaseResult(case["id"], error=error))
                if not eps.healthy(5.0):
                    rebuilds += 1
                    if rebuilds <= MAX_REBUILDS:
                        eps = get_eps()
        return results


@dataclass(kw_only=True)
class RdtCtx(CheckContext):
    """One check that moves tensors with the run's transport: its CheckContext plus the run's
    TransportContext (per-run: endpoint pools, caches such as the performance sweep, shared by
    every check of the transport and performance modules)."""

    transport: TransportContext
    device: str = ""     # the device type the check is on now (each_device sets it)

    @property
    def first_device(self) -> bool:
        """Whether the check is on the first declared device type (later ones may move less)."""
        return not self.device or self.device == self.transport.devices[0]

    def each_device(self, run_one: Callable[[str, bool], None]) -> None:
        """Run `run_one(device, first)` on each device type the manifest's transport declares
        (conformance.rdt.each_device: per-type metrics, not applicable per type with the reason),
        with `self.device` the type it is on."""
        def one(device: str, first: bool) -> None:
            self.device = device
            run_one(device, first)
        on_each_device(self, self.transport.devices, one)


def later_bytes(nbytes: int, first: bool) -> int:
    """A payload size on the second and later device types (RdtCtx.each_device): the smallest
    that still moves real bytes through the transport, or nbytes when it is smaller."""
    return int(nbytes) if first else min(int(nbytes), LATER_DEVICE_BYTES)


def failures(results: list[CaseResult], limit: int = 4) -> str:
    bad = [r for r in results if not r.ok]
    shown = "; ".join(r.summary() for r in bad[:limit])
    more = f" (+{len(bad) - limit} more)" if len(bad) > limit else ""
    return f"{len(bad)}/{len(results)} cases wrong: {shown}{more}"
