"""The performance area's check context (`performance_ctx`, conformance.areas.performance.fixtures)."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from conformance.areas.performance import bench
from conformance.rdt.context import RdtCtx

SWEEP_CHECK = "PF-001"   # the check whose params are the sweep's method (bench.Method)


@dataclass(kw_only=True)
class PerformanceCtx(RdtCtx):
    """A performance check: the run's TransportContext (`.transport`), on the shared cluster.

    The sweep is measured once per run by whichever of PF-001..PF-003 asks first and shared
    through the TransportContext's cache, always with PF-001's method: PF-001's params as this
    run loaded them (the report records them with PF-001), whichever check measures."""

    def sweep_method(self, **override: Any) -> bench.Method:
        return bench.Method.from_check(self.run.data.checklist.by_id()[SWEEP_CHECK], **override)

