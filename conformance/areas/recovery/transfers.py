"""Driver-side helpers for transfer-recovery scenarios (FR-012..016).

The RDT harness (conformance.rdt) does the moving: it registers the manifest's transport and its
fault-injecting twin `<NAME>_RECOVERY` (conformance.rdt.registration, conformance.rdt.faults),
starts the endpoints (conformance.rdt.pool) and bounds every transfer (conformance.rdt.transfer).
Both registrations must exist before the actors that use them, so the checks start their own
peers after `transport_setup(run, faults=True)`. This module adds what is the recovery area's:
the cluster shape with a short fetch timeout, the driver's copy of that timeout, and pairs of
peers started and waited for within the area's bounds.

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

import functools
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable, Iterator

from conformance.cluster.manager import ClusterShape
from conformance.handles import Actor
from conformance.rdt import transfer
from conformance.rdt.pool import destroy_group, make_group, pair_node, start_endpoints
from conformance.rdt.registration import TransportSetup
from conformance.run.machinery import clock_ready
from conformance.timing.clock import CONTROL_CALL_S, Clock

if TYPE_CHECKING:
    from conformance.catalog.manifest import Manifest
    from conformance.timing.host_load import MachineryRecord

TIMEOUT_ENV = "RAY_rdt_fetch_fail_timeout_milliseconds"
FETCH_TIMEOUT_CHECK = "FR-014"   # the check whose requirement states the shape's lowered timeout
SHAPE_NAME = "recovery-transfers"
SMALL_BYTES = 1024 * 1024
LARGE_BYTES_CAP = 64 * 1024 * 1024


def large_bytes() -> int:
    """The payload of a transfer that must still be in flight when its source dies (FR-013)."""
    from conformance.rdt.config import max_bytes
    return min(max_bytes(), LARGE_BYTES_CAP)


def shape_fetch_timeout_s() -> float:
    """The RDT fetch timeout of the transfer shape: FR-014's `rdt_fetch_timeout_s`, the check
    whose requirement states it ("lowered to 5 s"). A shape resolves outside any check (the run
    orders its checks by shape), so it reads the checklist in force; every transfer check reads
    the same value as its own param."""
    from conformance.catalog.data import checklist_path
    return _fetch_timeout_at(str(checklist_path()))


@functools.lru_cache(maxsize=4)
def _fetch_timeout_at(path: str) -> float:
    from conformance.catalog.data import load_checklist
    return float(load_checklist(Path(path)).by_id()[FETCH_TIMEOUT_CHECK].param("rdt_fetch_timeout_s"))


def fetch_scale(machinery: MachineryRecord) -> float:
    """How far the run whose record `machinery` is stretches the lowered fetch timeout: Ray must
    run a receive within it, and on a loaded host it ran one later than 5 s (FR-015 then saw Ray's
    "not found in RDT object store after 5.0s" instead of the injected error). Taken once per run
    from its record (MachineryRecord.fixed_factor), then fixed there: the nodes' environment, the
    driver's copy and the checks' bounds use one value. The nodes get it as a number in their
    environment (transfer_shape), never through a shared variable."""
    return machinery.fixed_factor("fetch")


# What the caller sees when Ray's own RDT fetch timeout ran out before the receive ran (Ray 2.60,
# experimental/rdt/rdt_store.py: "ObjectRef(...) not found in RDT object store after 5.0s, ...").
FETCH_RAN_OUT = "not found in RDT object store after"


def judge_fetch_ran_out(seen: str, what: str, machinery: MachineryRecord) -> None:
    """Call before a check blames the plugin for what the caller saw instead of the outcome it
    expected: when that is Ray's own fetch timeout (FETCH_RAN_OUT), Ray did not run the receive
    within the lowered timeout, which was stretched once, when the cluster started (fetch_scale).
    A fresh sample of Ray's machinery (noted in the run's `machinery` record) decides
    (conformance.run.machinery.before_blaming): the host
    slower now than that stretch assumed is the host's failure (HostNotReady, "not judged: host");
    else it returns and the check judges the plugin."""
    if FETCH_RAN_OUT not in seen:
        return
    from conformance.run.machinery import before_blaming

    before_blaming(shape_fetch_timeout_s(), fetch_scale(machinery),
                   f"{what}: Ray's RDT fetch timeout ran out before the receive ran ({seen[:160]})", machinery=machinery)


def run_fetch_timeout_s(param_s: float, machinery: MachineryRecord) -> float:
    """The fetch timeout of the transfer shape of the run whose record `machinery` is, for a check
    whose param says `param_s`."""
    return float(param_s) * fetch_scale(machinery)


def transfer_shape(manifest: Manifest, machinery: MachineryRecord) -> ClusterShape:
    """The manifest's nodes with a short RDT fetch timeout in every node's environment (the
    checklist's value, stretched by the run's load: fetch_scale of its `machinery` record)."""
    c = manifest.view.cluster
    timeout_ms = str(int(run_fetch_timeout_s(shape_fetch_timeout_s(), machinery) * 1000))
    env = [{**(c.node_env[i] if i < len(c.node_env) else {}), TIMEOUT_ENV: timeout_ms} for i in range(c.nodes)]
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


# ---------------------------------------------------------------------------------- peers
@dataclass
class Pair:
    """A source and a destination peer (and their collective group, when the transport needs one)."""

    src: Any
    dst: Any
    group: Any = None
    extra: list[Any] = field(default_factory=list)

    def actors(self) -> list[Any]:
        return [self.src, self.dst, *self.extra]


def start_peers(clock: Clock, x: TransportSetup, resource: str, n: int, ready_s: float, device: str,
                machinery: MachineryRecord, seen: Callable[[list[str]], None] | None = None,
                **options: Any) -> list[Any]:
    """n endpoints with their tensors on `device` (each holding a unit of `resource` when that is
    not the host) on one node (conformance.rdt.pool.pair_node, unless `options` pin them
    elsewhere), answering within `ready_s` (the check's actor_ready_s, stretched by the run's
    `machinery` record); no collective group (`make_group`). `seen`: told the nodes the peers are on
    (the check's coverage record, CheckContext.exercised)."""
    eps = start_endpoints(x, resource, device=device, nodes=[pair_node(x, resource, device)] * n, group=False,
                          ready=clock_ready(clock, ready_s, machinery),
                          what=f"{n} transfer peers to start", **options)
    if seen is not None:
        seen([eps.node_of(i) for i in range(len(eps))])
    return eps.actors


def start_pair(clock: Clock, x: TransportSetup, resource: str, ready_s: float, device: str,
               machinery: MachineryRecord, seen: Callable[[list[str]], None] | None = None, **options: Any) -> Pair:
    src, dst = start_peers(clock, x, resource, 2, ready_s, device, machinery, seen, **options)
    return Pair(src, dst, make_group(x, [src, dst]))


def end_pair(pair: Pair | None) -> None:
    if pair is None:
        return
    from conformance.areas.recovery.devices import kill_quietly
    destroy_group(pair.group)
    kill_quietly(pair.actors())


# ---------------------------------------------------------------------------------- transfers
def produce(clock: Clock, x: TransportSetup, src: Actor, nbytes: int, seed: int, bound_s: float) -> Any:
    """Run the producer and wait until its result exists (so a later kill is 'before fetch'),
    within `bound_s` (the check's transfer_error_s)."""
    import ray

    ref = transfer.produce(src, x.fault_name, nbytes, seed)
    clock.wait_for(lambda: ray.wait([ref], timeout=0.5)[0], f"the producer of {nbytes} bytes to finish",  # knob: polling slice
                   bound_s, poll_s=0.0)
    return ref


def roundtrip(clock: Clock, x: TransportSetup, src: Actor, dst: Actor, nbytes: int, seed: int, what: str,
              bound_s: float) -> None:
    """A transfer that must work: bit-exact within `bound_s` (the check's transfer_error_s)."""
    transfer.roundtrip(clock, x.fault_name, src, dst, nbytes, seed, what, bound_s)


def calls(clock: Clock, actor: Actor, name: str, what: str) -> list[dict[str, Any]]:
    """The transport calls the tracing wrapper recorded in the actor's process."""
    recorded: list[dict[str, Any]] = clock.get(actor.transport_calls.remote(name), what, CONTROL_CALL_S)
    return recorded


_DIGEST_KEYS = ("dtype", "shape", "nbytes", "sha256", "tensor", "seq", "items", "map")


def digest_evidence(digest: object) -> Any:
    """What a check records of a payload's digest (conformance.rdt.payloads.describe): the fields
    bit-exactness compares (dtype, shape, bytes, hash) and the structure, not where it was taken,
    so the judge compares sent and received as `same_bytes` does."""
    if isinstance(digest, dict):
        return {k: digest_evidence(v) for k, v in digest.items() if k in _DIGEST_KEYS}
    if isinstance(digest, (list, tuple)):
        return [digest_evidence(v) for v in digest]
    return digest if digest is None or isinstance(digest, (str, int, float, bool)) else repr(digest)[:120]
