"""The transport area's check context (`transport_ctx`, opened by conformance.areas.transport.fixtures).

`TransportCtx` is what the data and lifecycle checks (TR-001..TR-014) receive: the check's
context plus the run's TransportContext (`.transport`: the registered transport, its endpoint
pools on the shared cluster, the transfers). The usage and failure checks (TR-015..TR-020)
receive its subclass `UsageCtx` (conformance.areas.transport.usage), which adds the
fault-injecting twin and the actors the check starts: the checklist tags them `fault-twin`, and
the area's rule (Area.context in area.py) gives a check so tagged a UsageCtx; its annotation
(`transport_ctx: UsageCtx`) is held to that by a test, it does not choose.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from conformance.rdt.context import RdtCtx, TransportContext
from conformance.rdt.fixtures import open_context
from conformance.run.check_context import CheckContext


@dataclass(kw_only=True)
class TransportCtx(RdtCtx):
    """A transport check: the run's TransportContext, on the shared cluster (started or reused
    before the check runs; its endpoints keep their devices until the module ends)."""

    @classmethod
    def open(cls, base: CheckContext, transport: TransportContext) -> "TransportCtx":
        """This kind of context for the check `base` is of (the fixture's setup)."""
        return open_context(cls, base, transport)

    def close(self) -> None:
        """After the check (the fixture's teardown): nothing per check; the module's pools are
        the module fixture's."""

    def decide_over_types(self, *totals: str, **evidence: Any) -> None:
        """End the check by its judge (CheckContext.decide) once every declared type ran: with
        several types, each of `totals` (a count every type recorded) is also recorded over all
        of them, the figure the judge checks the types' own against."""
        if len(self.transport.devices) > 1:
            per = [r for d in self.metrics.get("devices", []) if isinstance(r := self.metrics.get(d), dict)]
            for name in totals:
                self.metrics[name] = sum(r.get(name, 0) for r in per)
        self.decide(**evidence)

