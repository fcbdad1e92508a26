"""How a performance check's context is opened (the area's Area.context `opens`; the core's one
fixture `performance_ctx` calls it): a PerformanceCtx on the shared cluster over the run's
TransportContext (conformance.rdt.fixtures.run_transport: shared with the transport and workload
areas; the endpoints that hold devices are stopped when the module ends).
"""
from __future__ import annotations

from typing import TYPE_CHECKING, Iterator

from conformance.areas.performance.context import PerformanceCtx
from conformance.rdt.fixtures import open_context as open_rdt
from conformance.rdt.fixtures import run_transport
from conformance.run.check_context import CheckContext

if TYPE_CHECKING:
    from conformance.run.contexts import Lifetimes


def open_context(kind: type[PerformanceCtx], base: CheckContext, lifetimes: Lifetimes) -> Iterator[PerformanceCtx]:
    yield open_rdt(kind, base, run_transport(base.run, lifetimes))
