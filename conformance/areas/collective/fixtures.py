"""How a collective check's context is opened (the area's Area.context `opens`; the core's one
fixture `collective_ctx` calls it): a CollectiveCtx, the check's CheckContext with the manifest's
collective block (not applicable without one) and, for a check whose checklist entry names a cluster,
the run's CollectiveContext on the live cluster of that shape (conformance.collective.harness: the
backend registered in the driver first, so a registration failure fails the check before any
cluster starts; members holding units stopped when the module ends).

A check of cluster `none` (CC-001, CC-002) gets the config alone (see CollectiveCtx).
"""
from __future__ import annotations

from typing import TYPE_CHECKING, Iterator

from conformance.collective.context import CollectiveCtx
from conformance.collective.harness import run_backend, run_config
from conformance.run.check_context import CheckContext

if TYPE_CHECKING:
    from conformance.run.contexts import Lifetimes


def open_context(kind: type[CollectiveCtx], base: CheckContext, lifetimes: Lifetimes) -> Iterator[CollectiveCtx]:
    config = run_config(base.run)
    if not base.marked:
        yield kind.derive(base, config=config)
        return
    backend = run_backend(base.run, config, lifetimes)
    ctx = kind.derive(base, config=config, _backend=backend)
    backend.on_cluster(ctx.cluster())
    yield ctx
