"""The data-parallel worker of WL-002: a collective group member (it registers the vendor's
backend as the collective area's members do, conformance.areas.collective.members) that holds a
shard and a replica of the model on the collective's device and takes training steps.

It lives in an importable module so workers import it by reference. It reports digests and
values; the driver judges (conformance.areas.workload.dp).
"""
from __future__ import annotations

import time
from typing import Any

from conformance.areas.collective.members import CollectiveMember


class DataParallelWorker(CollectiveMember):
    """One rank of the data-parallel job: `setup`, then `step` once per step, then `params`."""

    def setup(self, plan: dict[str, Any], rank: int, device: str) -> dict[str, Any]:
        """Build this rank's shard and the zero parameters on `device` (a torch device type);
        where they live, so the driver sees the device the manifest declared."""
        import torch

        from conformance.areas.workload import dp

        dtype = getattr(torch, plan["dtype"])
        x, y = dp.shard(plan["seed"], rank, plan["samples"], plan["features"])
        self.x = torch.from_numpy(x).to(dtype).to(device)
        self.y = torch.from_numpy(y).to(dtype).to(device)
        self.w = torch.zeros(plan["features"], dtype=dtype, device=device)
        self.step_size = float(plan["step_size"])
        return {"device": self.w.device.type, "dtype": str(self.w.dtype).removeprefix("torch.")}

    def step(self, group: str) -> dict[str, Any]:
        """One step: the local gradient of 0.5*||X w - y||^2, allreduce SUM over the group, the
        update in place; the digest of the parameters after it and the seconds inside the
        allreduce call."""
        from ray.util import collective as col
        from ray.util.collective.types import ReduceOp

        grad = self.x.t() @ (self.x @ self.w - self.y)
        t0 = time.perf_counter()
        col.allreduce(grad, group, ReduceOp.SUM)
        took = time.perf_counter() - t0
        self.w.sub_(grad * self.step_size)
        return {"digest": self._digest(), "allreduce_s": took}

    def params(self) -> list[float]:
        """The parameters as float64 values (read through the device's own copy to the host)."""
        import torch

        return self.w.to("cpu").to(torch.float64).tolist()

    def _digest(self) -> str:
        from conformance.areas.workload import dp

        return dp.digest(self.params())
