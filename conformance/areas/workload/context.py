"""The workload area's check context (`workload_ctx`, conformance.areas.workload.fixtures).

A workload check moves tensors with the run's transport, so its context is an RDT one
(conformance.rdt.context.RdtCtx: the run's TransportContext, shared with the transport and
performance areas) plus the actors the check starts, stopped when the check ends.
"""
from __future__ import annotations

from dataclasses import dataclass, field

from conformance.rdt.context import RdtCtx, TransportContext
from conformance.rdt.fixtures import open_context
from conformance.rdt.pool import Endpoints
from conformance.run.check_context import CheckContext


@dataclass(kw_only=True)
class WorkloadCtx(RdtCtx):
    """A workload check: the run's transport and the actor sets it started (`own`)."""

    started: list[Endpoints] = field(default_factory=list)

    @classmethod
    def open(cls, base: CheckContext, transport: TransportContext) -> "WorkloadCtx":
        return open_context(cls, base, transport)

    def own(self, eps: Endpoints) -> Endpoints:
        """Stop these actors when the check ends."""
        self.started.append(eps)
        return eps

    def close(self) -> None:
        while self.started:
            self.started.pop().shutdown()
        self.transport.wait_units_free()
