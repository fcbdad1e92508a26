"""Driver side of the transport-usage checks (TR-015..TR-020): what users do with RDT refs
beyond one produce-then-consume, and the failures around it.

These checks run on the shared cluster, beside the data and lifecycle checks, with Ray's
default RDT fetch timeout. They transfer with the fault-injecting twin of the manifest's
transport (`<NAME>_RECOVERY`, see conformance.areas.recovery.xfer_faults): unarmed, it is the
vendor's code plus the tracing records; armed, it can hold a receive or end the receiving
process mid-transfer. It is registered before the check's own actors exist, so they carry it.

Each check is one `Clock` (the recovery area's bounded waits): every wait ends at its own
bound from the checklist's params, and a wait that runs out fails the check naming the step.
"""
from __future__ import annotations

import itertools
from dataclasses import dataclass, field
from typing import Any, Callable, Iterator

from conformance.areas.recovery import bounds as B
from conformance.areas.recovery.scenario import Clock
from conformance.areas.recovery.transfers import XferSetup, checked_setup, destroy_group, first_line, outcome, peer_node
from conformance.run.timeouts import CheckTimeout

# A fresh actor answers (worker start + torch import): the recovery area's actor_ready_s param.
ACTOR_READY_S = B.ACTOR_READY_S
_group_ids = itertools.count()
_classes: dict[str, Any] = {}


def _ray() -> Any:
    import ray
    return ray


def actor_class(kind: str) -> Any:
    """The remote class of a usage actor: "peer" (UsagePeer), "async" (AsyncPeer), "plain"."""
    cls = _classes.get(kind)
    if cls is None:
        from conformance.areas.transport import usage_actors as A
        ray = _ray()
        if kind == "peer":
            cls = ray.remote(enable_tensor_transport=True)(A.UsagePeer)
        elif kind == "async":
            cls = ray.remote(enable_tensor_transport=True)(A.AsyncPeer)
        else:
            cls = ray.remote(A.PlainPeer)
        _classes[kind] = cls
    return cls


@dataclass
class UsageCtx:
    """One usage check: its id, params, metrics, the registered twin, and the actors it started."""

    check: str
    run: Any
    metrics: dict[str, Any]
    x: XferSetup
    resource: str
    actors: list[Any] = field(default_factory=list)
    groups: list[Any] = field(default_factory=list)

    @property
    def name(self) -> str:
        return self.x.name

    def param(self, name: str) -> Any:
        from conformance.catalog.data import check_param
        return check_param(self.check, name)

    def clock(self, scenario: str, bound_param: str = "scenario_bound_s") -> Clock:
        return Clock(self.check, scenario, float(self.param(bound_param)))

    def payload_bytes(self, param: str = "payload_bytes") -> int:
        from conformance.areas.transport.config import max_bytes
        return min(int(self.param(param)), max_bytes())

    # ------------------------------------------------------------------ actors
    def start(self, clock: Clock, n: int, kind: str = "peer", **options: Any) -> list[Any]:
        """n actors on one node (the first offering the device), ready, in their own collective
        group when the transport needs one."""
        from conformance.areas.recovery.devices import pinned

        opts: dict[str, Any] = {"num_cpus": 0, "scheduling_strategy": pinned(peer_node(self.x, self.resource))}
        if self.x.device != "cpu" and kind != "plain":
            from conformance.cluster.requests import demand
            opts.update(demand(self.resource, 1))
        opts.update(options)
        args = () if kind == "plain" else (self.x.device,)
        new = [actor_class(kind).options(**opts).remote(*args) for _ in range(n)]
        self.actors.extend(new)
        clock.get([a.info.remote() for a in new], f"{n} {kind} actor(s) to start", ACTOR_READY_S)
        if kind != "plain":
            self.group(clock, new)
        return new

    def group(self, clock: Clock, actors: list[Any]) -> None:
        """One collective group over a batch of new actors (GLOO/NCCL only; an actor joins one
        group per backend, so each batch the check starts forms its own)."""
        if not self.x.collective_backend or len(actors) < 2:
            return
        from ray.experimental.collective import create_collective_group
        try:
            self.groups.append(create_collective_group(
                actors, backend=self.x.collective_backend, name=f"usage-{self.x.collective_backend}-{next(_group_ids)}"))
        except CheckTimeout:
            raise
        except Exception as exc:  # noqa: BLE001 - the finding
            raise clock.fail(f"creating a {self.x.collective_backend} group over {len(actors)} actors failed: "
                             f"{first_line(exc)}") from None

    def close(self) -> None:
        ray = _ray()
        for g in self.groups:
            destroy_group(g)
        for a in self.actors:
            try:
                ray.kill(a)
            except Exception:  # noqa: BLE001 - already dead
                pass
        self.actors.clear()

    # ------------------------------------------------------------------ transfers
    def produce(self, src: Any, nbytes: int, seed: int, method: str = "make", **options: Any) -> Any:
        return getattr(src, method).options(tensor_transport=self.name, **options).remote(nbytes, seed)

    def expect_data(self, clock: Clock, submit: Callable[[], Any], sent: Any, what: str, bound_s: float,
                    stalled: list[tuple[Any, Any, Any]] | None = None) -> Any:
        """The task `submit()` starts must return `sent` (a digest) within the bound. `stalled`:
        the transfers behind it as (ref, source actor, receiver actor); a hang then says where
        each stopped (conformance.areas.transport.stalls)."""
        evidence = None
        if stalled:
            def evidence() -> str:
                from conformance.areas.transport.stalls import Pending, gather
                actors = list(dict.fromkeys(a for _, src, dst in stalled for a in (src, dst)))
                return gather(actors, self.name.upper(), [Pending(ref.hex(), actors.index(src), actors.index(dst))
                                                          for ref, src, dst in stalled]).describe()
        kind, got = outcome(clock, self.submitted(clock, submit, what), what, bound_s, evidence)
        if kind != "data":
            raise clock.fail(f"{what}: failed with {got}")
        if sent is not None and got != sent:
            raise clock.fail(f"{what}: received {short(got)} but the source sent {short(sent)} (not bit-exact)")
        return got

    def expect_error(self, clock: Clock, submit: Callable[[], Any], what: str, bound_s: float,
                     text: str | None = None) -> str:
        """The task `submit()` starts must fail (with `text` in its error) within the bound."""
        kind, got = outcome(clock, self.submitted(clock, submit, what), what, bound_s)
        if kind == "data":
            raise clock.fail(f"{what}: returned data instead of an error")
        if text and text not in got:
            raise clock.fail(f"{what}: failed with {got!r}, which does not carry the error {text!r}")
        return got

    @staticmethod
    def submitted(clock: Clock, submit: Callable[[], Any], what: str) -> Any:
        """Submit a task; an exception at submission (Ray calls the transport's owner-side
        methods there) fails the check naming the step."""
        try:
            return submit()
        except CheckTimeout:
            raise
        except Exception as exc:  # noqa: BLE001 - the finding
            raise clock.fail(f"{what}: submitting it raised {first_line(exc)}") from None

    def sent(self, clock: Clock, src: Any, seed: int) -> Any:
        return clock.get(src.sent_digest.remote(seed), "the producer's digest", 30)

    def roundtrip(self, clock: Clock, src: Any, dst: Any, nbytes: int, seed: int, what: str, bound_s: float) -> None:
        ref = self.submitted(clock, lambda: self.produce(src, nbytes, seed), f"{what}: the producer")
        try:
            got = self.expect_data(clock, lambda: dst.receive.remote(ref), None, what, bound_s)
            sent = self.sent(clock, src, seed)
            if got != sent:
                raise clock.fail(f"{what}: received {short(got)} but the source sent {short(sent)} (not bit-exact)")
        finally:
            del ref

    def wait_store(self, clock: Clock, actor: Any, target: int, what: str, bound_s: float) -> None:
        """Wait until the actor's RDT store holds `target` objects."""
        seen: list[int] = []

        def settled() -> bool:
            seen.append(clock.get(actor.rdt_objects.remote(), "the RDT store's size", 15))
            return seen[-1] == target

        clock.wait_for(settled, what, bound_s, poll_s=0.2, explain=lambda: f"{seen[-1] if seen else '?'} object(s)")


def short(d: Any) -> str:
    if isinstance(d, dict) and "sha256" in d:
        return f"sha256 {d['sha256'][:12]} ({d.get('nbytes')} B {d.get('dtype')} {d.get('shape')})"
    return repr(d)[:120]


def usage_ctx(request: Any, conformance_run: Any, manifest: Any, check_metrics: dict[str, Any]) -> Iterator[UsageCtx]:
    """The body of each usage module's fixture: n/a without a transport, the shared cluster,
    the twin registered before the check's actors, every actor stopped afterwards."""
    from conformance.cluster.manager import SHARED, ClusterStartError

    x = checked_setup(conformance_run, manifest)
    try:
        conformance_run.cluster(SHARED)
    except ClusterStartError as exc:
        raise ClusterStartError(str(exc)) from None
    marker = request.node.get_closest_marker("check")
    ctx = UsageCtx(check=marker.args[0], run=conformance_run, metrics=check_metrics, x=x,
                   resource=manifest.resource_name)
    check_metrics["transport"] = {"name": x.vendor_name, "one_sided": x.one_sided, "can_abort": x.can_abort}
    try:
        yield ctx
    finally:
        ctx.close()
