"""WL-002's check context (`workload_ctx` for a check tagged `collective-backend`, conformance.areas.workload.fixtures).

Data-parallel steps run over the manifest's collective backend, not its transport, so this
context is the check's CheckContext with the collective block and the run's CollectiveContext
(conformance.collective, the core harness: the backend registered in the driver, per-run group names,
bounded waits), shared with the collective area; the workers a check starts are killed when it
ends.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from conformance.collective.config import CollectiveConfig
from conformance.collective.context import CollectiveContext
from conformance.run.check_context import CheckContext


@dataclass(kw_only=True)
class DataParallelCtx(CheckContext):
    """A data-parallel check: the collective block, the run's backend context and the workers it
    started (`own`)."""

    config: CollectiveConfig
    backend: CollectiveContext
    started: list[list[Any]] = field(default_factory=list)

    def own(self, workers: list[Any]) -> list[Any]:
        """Kill these workers when the check ends."""
        self.started.append(workers)
        return workers

    def close(self) -> None:
        while self.started:
            self.backend.stop(self.started.pop())
