"""What a data-parallel worker of WL-002 runs: functions called on a collective group member
(conformance.collective.members.CollectiveMember.call), which registered the vendor's
backend as the collective area's members do. The member keeps this rank's shard and replica of
the model on the collective's device between calls; `forget` drops them.

The functions report digests and values; the driver judges (conformance.areas.workload.dp).
"""
from __future__ import annotations

import time
from typing import Any

SETUP = "conformance.areas.workload.dp_worker:setup"
STEP = "conformance.areas.workload.dp_worker:step"
PARAMS = "conformance.areas.workload.dp_worker:params"
FORGET = "conformance.areas.workload.dp_worker:forget"
ATTR = "_wl_data_parallel"


def setup(member: object, plan: dict[str, Any], rank: int, device: str) -> dict[str, Any]:
    """Build this rank's shard and the zero parameters on `device` (a torch device type); where
    they live, so the driver sees the device the manifest declared."""
    import torch

    from conformance.areas.workload import dp

    dtype = getattr(torch, plan["dtype"])
    x, y = dp.shard(plan["seed"], rank, plan["samples"], plan["features"])
    state: dict[str, Any] = {"x": torch.from_numpy(x).to(dtype).to(device), "y": torch.from_numpy(y).to(dtype).to(device),
             "w": torch.zeros(plan["features"], dtype=dtype, device=device), "c": float(plan["step_size"])}
    setattr(member, ATTR, state)
    w = state["w"]
    return {"device": w.device.type, "dtype": str(w.dtype).removeprefix("torch.")}


def step(member: object, group: str) -> dict[str, Any]:
    """One step: the local gradient of 0.5*||X w - y||^2, allreduce SUM over the group, the
    update in place; the digest of the parameters after it and the seconds inside the allreduce."""
    from ray.util import collective as col
    from ray.util.collective.types import ReduceOp

    s = getattr(member, ATTR)
    grad = s["x"].t() @ (s["x"] @ s["w"] - s["y"])
    t0 = time.perf_counter()
    col.allreduce(grad, group, ReduceOp.SUM)
    took = time.perf_counter() - t0
    s["w"].sub_(grad * s["c"])
    from conformance.areas.workload import dp

    return {"digest": dp.digest(params(member)), "allreduce_s": took}


def params(member: object) -> list[float]:
    """The parameters as float64 values (read through the device's own copy to the host)."""
    import torch

    values: list[float] = getattr(member, ATTR)["w"].to("cpu").to(torch.float64).tolist()
    return values


def forget(member: object) -> None:
    """Drop the shard and the replica (the member goes back to the pool as it came)."""
    if hasattr(member, ATTR):
        delattr(member, ATTR)
