"""What a recovery check carries around: the run, its metrics, and the node it works on."""
from __future__ import annotations

from contextlib import AbstractContextManager
from dataclasses import dataclass
from typing import Any

from conformance.areas.recovery.devices import DeviceNode
from conformance.areas.recovery.scenario import scenario
from conformance.run.clock import Clock


@dataclass
class RecoveryCtx:
    run: Any                     # the ConformanceRun (None in unit tests)
    metrics: dict[str, Any]      # the check's metrics (report.json)
    dev: DeviceNode

    def scenario(self, check: str, name: str, bound_s: float) -> AbstractContextManager[Clock]:
        return scenario(self.run, self.metrics, check, name, bound_s)
