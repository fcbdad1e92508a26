"""The workload area's one fixture module (its Area.fixtures): `workload_ctx`.

* `workload_run_context` (module scope): the run's TransportContext (conformance.rdt.fixtures,
  shared with the transport and performance areas); n/a without a transport.
* `workload_ctx` (function scope): the check's context on the shared cluster, over the transport
  (WorkloadCtx) or, for a check tagged `collective-backend`, over the collective backend
  (conformance.areas.workload.dp_context.DataParallelCtx; n/a without a collective block); its
  teardown stops the actors the check started and waits until their devices are free.
"""
from __future__ import annotations

from typing import Any, Iterator

import pytest

from conformance.areas.workload.context import WorkloadCtx
from conformance.areas.workload.dp_context import DataParallelCtx
from conformance.collective.config import CollectiveConfig
from conformance.rdt.context import TransportContext
from conformance.rdt.fixtures import module_context
from conformance.run.check_context import CheckContext

COLLECTIVE_TAG = "collective-backend"   # tiers/vocabulary.yaml: the check runs over the collective backend


@pytest.fixture(scope="module")
def workload_run_context(conformance_run: Any) -> Iterator[TransportContext]:
    yield from module_context(conformance_run)


@pytest.fixture
def workload_ctx(request: pytest.FixtureRequest, check_context: CheckContext) -> Iterator[CheckContext]:
    """The check's one context. A check tagged `collective-backend` (WL-002) runs over the
    manifest's collective backend: a DataParallelCtx with the collective block (not applicable
    without one: the collective area's `collective_config`) and the run's CollectiveContext on the
    cluster the check's mark names. Any other runs over the transport: a WorkloadCtx on the shared
    cluster. The teardown stops what the check started (and waits until its devices are free)."""
    ctx: WorkloadCtx | DataParallelCtx
    if COLLECTIVE_TAG in check_context.check.tags:
        config: CollectiveConfig = request.getfixturevalue("collective_config")
        state = request.getfixturevalue("collective_state")
        request.getfixturevalue("collective_member_units")   # members holding units stopped when the module ends
        ctx = DataParallelCtx.derive(check_context, config=config, backend=state)
        state.on_cluster(ctx.cluster())
    else:
        ctx = WorkloadCtx.open(check_context, request.getfixturevalue("workload_run_context"))
    try:
        yield ctx
    finally:
        ctx.close()
