"""How a transport check's context is opened (the area's Area.context `opens`; the core's one
fixture `transport_ctx` calls it): the kind the area's rule gives the check's data (TransportCtx,
or its subclass UsageCtx for a check tagged `fault-twin`: the usage and failure checks) on the
shared cluster, over the run's TransportContext (conformance.rdt.fixtures.run_transport: shared
with the performance and workload areas; the endpoints that hold devices are stopped when the
module ends); closed after the check (a usage check's actors stopped).
"""
from __future__ import annotations

from typing import TYPE_CHECKING, Iterator

from conformance.areas.transport.context import TransportCtx
from conformance.rdt.fixtures import run_transport
from conformance.run.check_context import CheckContext

if TYPE_CHECKING:
    from conformance.run.contexts import Lifetimes


def open_context(kind: type[TransportCtx], base: CheckContext, lifetimes: Lifetimes) -> Iterator[TransportCtx]:
    ctx = kind.open(base, run_transport(base.run, lifetimes))
    try:
        yield ctx
    finally:
        ctx.close()
