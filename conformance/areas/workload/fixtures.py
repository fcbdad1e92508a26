"""How a workload check's context is opened (the area's Area.context `opens`; the core's one
fixture `workload_ctx` calls it), for the kind the area's rule gives the check's data:

* WorkloadCtx: on the shared cluster over the run's TransportContext (conformance.rdt.fixtures.
  run_transport, shared with the transport and performance areas; n/a without a transport);
* DataParallelCtx, for a check tagged `collective-backend` (WL-002): over the manifest's
  collective backend, from the core's collective harness (conformance.collective.harness: n/a
  without a collective block; the run's CollectiveContext on the cluster the check's checklist entry names).

The teardown stops the actors the check started (and waits until their devices are free).
"""
from __future__ import annotations

from typing import TYPE_CHECKING, Iterator

from conformance.areas.workload.context import WorkloadCtx
from conformance.areas.workload.dp_context import DataParallelCtx
from conformance.collective.harness import run_backend, run_config
from conformance.rdt.fixtures import run_transport
from conformance.run.check_context import CheckContext

if TYPE_CHECKING:
    from conformance.run.contexts import Lifetimes


def open_context(kind: type[WorkloadCtx | DataParallelCtx], base: CheckContext,
                 lifetimes: Lifetimes) -> Iterator[WorkloadCtx | DataParallelCtx]:
    ctx: WorkloadCtx | DataParallelCtx
    if issubclass(kind, DataParallelCtx):
        config = run_config(base.run)
        backend = run_backend(base.run, config, lifetimes)
        ctx = kind.derive(base, config=config, backend=backend)
        backend.on_cluster(ctx.cluster())
    else:
        ctx = kind.open(base, run_transport(base.run, lifetimes))
    try:
        yield ctx
    finally:
        ctx.close()
