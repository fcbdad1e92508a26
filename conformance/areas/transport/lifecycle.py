"""Reading the tracing wrapper's records across processes, and waiting for frees.

The records live in each process (see `tracing`): the driver's are read directly, each
endpoint's through a call. Checks clear all of them at their start so a check sees only its
own calls, and match calls to objects by object id (ObjectRef.hex()).
"""
from __future__ import annotations

import time
from collections import Counter
from typing import Any

from conformance.rdt import tracing
from conformance.rdt.pool import Endpoints
from conformance.rdt.transfer import ray_get

FREE_TIMEOUT_S = 20.0  # knob: hang guard while free records arrive


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


def wait_freed(eps: Endpoints, index: int, baseline: int = 0, timeout_s: float = FREE_TIMEOUT_S) -> int:
    """Wait until endpoint `index` holds no more RDT objects than `baseline` (what it held
    before the check: a failed earlier check may have left a ref pinned in a traceback).

    Returns how many objects above the baseline are still held when the wait ran out (0: freed).
    """
    deadline = time.monotonic() + timeout_s
    extra = 0
    while time.monotonic() < deadline:
        extra = held_objects(eps, index) - baseline
        if extra <= 0:
            return 0
        time.sleep(0.05)
    return extra


def wait_calls(eps: Endpoints, transport: str, index: int, method: str, obj_ids: set[str],
               timeout_s: float = FREE_TIMEOUT_S) -> list[dict[str, Any]]:
    """Poll endpoint `index` until every object in obj_ids has a `method` record (or time runs out)."""
    deadline = time.monotonic() + timeout_s
    recs: list[dict[str, Any]] = []
    while time.monotonic() < deadline:
        recs = ray_get(eps.actors[index].transport_calls.remote(transport), what="call records")
        if obj_ids <= set(count(recs, method, obj_ids)):
            break
        time.sleep(0.05)
    return recs
