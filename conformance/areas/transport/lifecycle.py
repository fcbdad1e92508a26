"""Reading the tracing wrapper's records across processes, and waiting for frees.

The records live in each process (see `tracing`): the driver's are read directly, each
endpoint's through a call. Checks clear all of them at their start so a check sees only its
own calls, and match calls to objects by object id (ObjectRef.hex()).

The waits for frees and for call records are the check's budget's (conformance.run.budget): Ray
frees an object when its last ref goes and calls the transport's `garbage_collect` for it, so the
wait is Ray's machinery running the plugin's code, stretched by what the run measured and
"not judged: host" when a fresh sample says the host got slower; when the host did its part, the
wait ends with what was still missing, which the check's judge reads.
"""
from __future__ import annotations

from collections import Counter
from typing import TYPE_CHECKING, Any

from conformance.rdt import tracing
from conformance.rdt.pool import Endpoints
from conformance.rdt.transfer import ray_get
from conformance.timing.waits import BoundRanOut, polled

if TYPE_CHECKING:
    from conformance.run.budget import Budget

FREE_TIMEOUT_S = 20.0  # knob: hang guard while free records arrive
FREE_POLL_S = 0.05     # knob: how often a wait for frees or call records asks the endpoint


def clear_calls(eps: Endpoints, transport: str) -> None:
    tracing.calls(transport, clear=True)
    ray_get([a.transport_calls.remote(transport, None, True) for a in eps.actors], what="clearing call records")


def gather_calls(eps: Endpoints, transport: str) -> dict[str, list[dict[str, Any]]]:
    """{"driver": [...], "0": [...], "1": [...], ...} (keys are endpoint indexes)."""
    per = ray_get([a.transport_calls.remote(transport) for a in eps.actors], what="call records")
    out = {"driver": tracing.calls(transport)}
    out.update({str(i): recs for i, recs in enumerate(per)})
    return out


def count(recs: list[dict[str, Any]], method: str, obj_ids: set[str] | None = None) -> Counter[str | None]:
    """Per object id, how many calls of `method` (obj_ids=None: all objects)."""
    return Counter(r.get("obj") for r in recs if r["m"] == method and (obj_ids is None or r.get("obj") in obj_ids))


def held_objects(eps: Endpoints, index: int) -> int:
    """RDT objects Ray's store on endpoint `index` holds now (Ray's count, not the transport's)."""
    return int(ray_get(eps.actors[index].rdt_objects.remote(), what="RDT store size"))


def wait_freed(budget: Budget, eps: Endpoints, index: int, baseline: int = 0, timeout_s: float = FREE_TIMEOUT_S, *,
               runs_plugin_code: bool = True) -> int:
    """Wait (Ray's, through `budget`) until endpoint `index` holds no more RDT objects than
    `baseline` (what it held before the check: a failed earlier check may have left a ref pinned
    in a traceback).

    Returns how many objects above the baseline are still held when the wait ran out (0: freed)
    and the host did its part. `runs_plugin_code`: the free calls the transport's garbage_collect
    (a source's objects); without it (a receiver's copies, Ray's alone) a wait that runs out is
    never the plugin's: "not judged: host" (HostNotReady) with the host's measurements.
    """
    extra = [0]

    def freed() -> bool:
        extra[0] = held_objects(eps, index) - baseline
        return extra[0] <= 0

    try:
        budget.ray(polled(freed, f"endpoint {index}'s RDT objects freed", poll_s=FREE_POLL_S), f"Ray to free endpoint {index}'s RDT objects",
                   timeout_s, runs_plugin_code=runs_plugin_code)
    except BoundRanOut:
        return extra[0]
    return 0


def wait_calls(budget: Budget, eps: Endpoints, transport: str, index: int, method: str, obj_ids: set[str],
               timeout_s: float = FREE_TIMEOUT_S) -> list[dict[str, Any]]:
    """Poll endpoint `index` (Ray's wait, through `budget`) until every object in obj_ids has a
    `method` record; the records last read, whether or not they all came."""
    recs: list[list[dict[str, Any]]] = [[]]

    def recorded() -> bool:
        recs[0] = ray_get(eps.actors[index].transport_calls.remote(transport), what="call records")
        return obj_ids <= set(count(recs[0], method, obj_ids))

    try:
        budget.ray(polled(recorded, f"{method} records of {len(obj_ids)} object(s)", poll_s=FREE_POLL_S),
                   f"Ray to call {method} for {len(obj_ids)} object(s) on endpoint {index}", timeout_s, runs_plugin_code=True)
    except BoundRanOut:
        pass
    return recs[0]
