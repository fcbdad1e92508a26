"""Driver-side helpers for transfer-recovery scenarios (FR-012..016).

Registration: the manifest's transport is registered by the transport package
(`conformance.areas.transport.registration.ensure_registered`, once per process); this module adds a
second name, `<NAME>_RECOVERY`, whose class injects faults around the vendor's class (see
`xfer_faults`). Both must be registered before the actors that use them exist, so the checks
create their own peers after calling `recovery_setup`.

Ray's RDT fetch timeout (RAY_rdt_fetch_fail_timeout_milliseconds, default 60 s) is read once,
when `ray` is imported, and it is enforced in two processes (measured on Ray 2.60):

* the **owner** of the object (here the driver: it submitted the producing task) runs the
  monitor that, past the timeout, calls abort_transport on the receiver (and the sender, for
  two-sided transports) or kills both actors (transports that cannot abort);
* the **receiving worker** stops waiting for the tensors after the timeout and fails the
  consumer task with a TimeoutError.

With only the workers' value lowered, the consumer fails on time but nothing aborts the stuck
receive, and the next transfer to that actor queues behind it; with only the driver's lowered,
the abort comes on time. So the transfer shape sets the variable in every node's environment
(workers inherit it from their raylet) and `driver_fetch_timeout` sets the driver's copy of the
constant (ray_constants.RDT_FETCH_FAIL_TIMEOUT_SECONDS, read at use time) for each check.
"""
from __future__ import annotations

import itertools
import os
import threading
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any, Callable, Iterator

from conformance.areas.recovery import bounds as B
from conformance.areas.recovery.scenario import Clock
from conformance.areas.recovery.xfer_faults import SUFFIX, FaultInjectingTransport, faulty_class
from conformance.cluster.manager import ClusterShape
from conformance.run.timeouts import CheckTimeout

TIMEOUT_ENV = "RAY_rdt_fetch_fail_timeout_milliseconds"
SHAPE_NAME = "recovery-transfers"
SMALL_BYTES = 1024 * 1024
LARGE_BYTES_CAP = 64 * 1024 * 1024
# Process-global like Ray's transport registry it mirrors (no unregister); it always belongs to the
# vendor transport `ensure_registered` holds, which refuses to switch to another config.
_lock = threading.Lock()
_setup: "XferSetup | Exception | None" = None


def _ray() -> Any:
    import ray
    return ray


class XferSetupError(Exception):
    """The recovery transport could not be registered."""


@dataclass(frozen=True)
class XferSetup:
    vendor_name: str             # the manifest's transport name, as Ray knows it
    name: str                    # the fault-injecting registration the checks transfer with
    one_sided: bool
    can_abort: bool
    device: str                  # torch device type the payloads live on
    collective_backend: str | None

    @property
    def large_bytes(self) -> int:
        from conformance.areas.transport.config import max_bytes
        return min(max_bytes(), LARGE_BYTES_CAP)


def transfer_shape(manifest: Any) -> ClusterShape:
    """The manifest's nodes with a short RDT fetch timeout in every node's environment."""
    c = manifest.cluster
    env = [{**(c["node_env"][i] if i < len(c["node_env"]) else {}),
            TIMEOUT_ENV: str(int(B.RDT_FETCH_TIMEOUT_S * 1000))} for i in range(c["nodes"])]
    return ClusterShape(name=SHAPE_NAME, node_env=env)


@contextmanager
def driver_fetch_timeout(seconds: float) -> Iterator[None]:
    """The driver's (owner's) copy of Ray's RDT fetch timeout, for the duration of a check."""
    from ray._private import ray_constants

    saved = ray_constants.RDT_FETCH_FAIL_TIMEOUT_SECONDS
    ray_constants.RDT_FETCH_FAIL_TIMEOUT_SECONDS = float(seconds)
    try:
        yield
    finally:
        ray_constants.RDT_FETCH_FAIL_TIMEOUT_SECONDS = saved


def recovery_setup(manifest: Any) -> XferSetup | None:
    """Register the vendor transport (transport package) and its fault-injecting twin, once."""
    global _setup
    from conformance.areas.transport.registration import ensure_registered

    vendor = ensure_registered(manifest)   # raises TransportSetupError; None without a transport
    if vendor is None:
        return None
    with _lock:
        if _setup is None:
            try:
                _setup = _register(vendor)
            except Exception as exc:  # noqa: BLE001 - the same failure for every check
                _setup = XferSetupError(f"registering {vendor.config.name}{SUFFIX} failed: "
                                        f"{type(exc).__name__}: {exc}".splitlines()[0])
        if isinstance(_setup, Exception):
            raise _setup
        return _setup


def checked_setup(run: Any, manifest: Any) -> XferSetup:
    """The setup a transfer check's fixture starts from: the driver prepared, the vendor transport
    and its twin registered; a registration failure fails the check, no transport makes it not
    applicable (never passed)."""
    import pytest

    from conformance.areas.transport.registration import NO_TRANSPORT, TransportSetupError
    from conformance.report.results import not_applicable

    run.prepare()
    try:
        x = recovery_setup(manifest)
    except (TransportSetupError, XferSetupError) as exc:
        pytest.fail(f"transport setup failed: {exc}", pytrace=False)
    if x is None:
        not_applicable(NO_TRANSPORT)
    return x


def _register(vendor: Any) -> XferSetup:
    import torch
    from ray.experimental.rdt import register_tensor_transport, util

    name = vendor.config.name + SUFFIX
    util._ensure_default_transports_registered()
    existing = util.transport_manager_info.get(name)
    if existing is None:
        cls = faulty_class(vendor.inner, name, backend_name=vendor.config.name if vendor.config.builtin else None)
        register_tensor_transport(name, list(vendor.config.devices), cls, torch.Tensor)
    elif not issubclass(existing.transport_manager_class, FaultInjectingTransport):
        raise XferSetupError(f"transport {name} is already registered by someone else")
    devices = list(vendor.config.devices)
    device = next((d for d in devices if d != "cpu"), devices[0])
    return XferSetup(vendor_name=vendor.config.name, name=name, one_sided=vendor.one_sided,
                     can_abort=vendor.can_abort, device=device,
                     collective_backend=vendor.config.collective_backend)


# ---------------------------------------------------------------------------------- peers
_peer_cls: Any = None


def peer_class() -> Any:
    global _peer_cls
    if _peer_cls is None:
        from conformance.areas.recovery.xfer_actors import Peer
        _peer_cls = _ray().remote(enable_tensor_transport=True)(Peer)
    return _peer_cls


@dataclass
class Pair:
    """A source and a destination peer (and their collective group, when the transport needs one)."""

    src: Any
    dst: Any
    group: Any = None
    extra: list[Any] = field(default_factory=list)

    def actors(self) -> list[Any]:
        return [self.src, self.dst, *self.extra]


def peer_node(x: XferSetup, resource: str) -> str:
    """Peers share one node (the first offering the device, else the driver's)."""
    ray = _ray()
    if x.device != "cpu":
        for n in ray.nodes():
            if n.get("Alive") and n.get("Resources", {}).get(resource, 0) >= 2:  # knob: a pair needs 2 devices
                return n["NodeID"]
    return ray.get_runtime_context().get_node_id()


def start_peers(clock: Clock, x: XferSetup, resource: str, n: int = 2, **options: Any) -> list[Any]:
    from conformance.areas.recovery.devices import pinned

    opts: dict[str, Any] = {"num_cpus": 0, "scheduling_strategy": pinned(peer_node(x, resource))}
    if x.device != "cpu":
        from conformance.cluster.requests import demand
        opts.update(demand(resource, 1))
    opts.update(options)
    peers = [peer_class().options(**opts).remote(x.device) for _ in range(n)]
    clock.get([p.info.remote() for p in peers], f"{n} transfer peers to start", B.ACTOR_READY_S)
    return peers


_group_ids = itertools.count()


def make_group(x: XferSetup, actors: list[Any]) -> Any:
    """A collective group over `actors` when the transport needs one (a fresh name each time:
    Ray keeps rendezvous data per name)."""
    if not x.collective_backend:
        return None
    from ray.experimental.collective import create_collective_group
    return create_collective_group(actors, backend=x.collective_backend,
                                   name=f"recovery-{x.collective_backend}-{os.getpid()}-{next(_group_ids)}")


def destroy_group(group: Any) -> None:
    if group is None:
        return
    try:
        from ray.experimental.collective import destroy_collective_group
        destroy_collective_group(group)
    except CheckTimeout:
        raise
    except Exception:  # noqa: BLE001 - Ray destroys groups itself after failed transfers
        pass


def start_pair(clock: Clock, x: XferSetup, resource: str, **options: Any) -> Pair:
    src, dst = start_peers(clock, x, resource, 2, **options)
    return Pair(src, dst, make_group(x, [src, dst]))


def end_pair(pair: Pair | None) -> None:
    if pair is None:
        return
    from conformance.areas.recovery.devices import kill_quietly
    destroy_group(pair.group)
    kill_quietly(pair.actors())


# ---------------------------------------------------------------------------------- transfers
def first_line(exc: BaseException) -> str:
    cause = getattr(exc, "cause", None)
    base = cause if isinstance(cause, BaseException) else exc
    for line in str(base).strip().splitlines():
        line = line.strip()
        if line and not line.startswith(("ray::", "\x1b[36mray::")):
            return f"{type(base).__name__}: {line[:300]}"
    return type(base).__name__


def produce(clock: Clock, x: XferSetup, src: Any, nbytes: int, seed: int) -> Any:
    """Run the producer and wait until its result exists (so a later kill is 'before fetch')."""
    ray = _ray()
    ref = src.make.options(tensor_transport=x.name).remote(nbytes, seed)
    clock.wait_for(lambda: ray.wait([ref], timeout=0.5)[0], f"the producer of {nbytes} bytes to finish",  # knob: polling slice
                   B.TRANSFER_ERROR_S, poll_s=0.0)
    return ref


def outcome(clock: Clock, ref: Any, what: str, bound_s: float,
            evidence: Callable[[], str] | None = None) -> tuple[str, Any]:
    """('data', digest) or ('error', first line) within the bound; a hang fails the scenario,
    with what `evidence()` says about where it stopped (asked only then)."""
    from conformance.run.waits import bounded_get

    try:
        return "data", bounded_get(ref, max(min(bound_s, clock.remaining()), 0.01), what)
    except CheckTimeout:
        raise
    except TimeoutError as exc:
        from ray.exceptions import RayError
        if not isinstance(exc, RayError):
            where = f" ({evidence()})" if evidence is not None else ""
            raise clock.fail(f"{what}: neither data nor an error within {bound_s:.0f}s (a hang){where}") from None
        return "error", first_line(exc)
    except Exception as exc:  # noqa: BLE001 - any error Ray raises is a clean failure here
        return "error", first_line(exc)


def roundtrip(clock: Clock, x: XferSetup, src: Any, dst: Any, nbytes: int, seed: int, what: str) -> None:
    """A transfer that must work: bit-exact within TRANSFER_ERROR_S."""
    ref = src.make.options(tensor_transport=x.name).remote(nbytes, seed)
    kind, got = outcome(clock, dst.receive.remote(ref), what, B.TRANSFER_ERROR_S)
    if kind != "data":
        raise clock.fail(f"{what}: failed with {got}")
    sent = clock.get(src.sent_digest.remote(seed), f"{what}: the producer's digest", B.TRANSFER_ERROR_S)
    if got != sent:
        raise clock.fail(f"{what}: received {got} but sent {sent} (not bit-exact)")


def alive(actor: Any, timeout_s: float = 5.0) -> bool:  # knob: liveness probe of one call
    from conformance.run.waits import bounded_get
    try:
        bounded_get(actor.info.remote(), timeout_s, "peer info")
        return True
    except CheckTimeout:
        raise
    except Exception:  # noqa: BLE001 - dead, restarting or unreachable
        return False


def wait_dead(clock: Clock, actor: Any, what: str, bound_s: float) -> None:
    clock.wait_for(lambda: not alive(actor, 1.0), what, bound_s, poll_s=0.2)


def calls(clock: Clock, actor: Any, name: str, what: str) -> list[dict[str, Any]]:
    return clock.get(actor.calls.remote(name), what, 15)
