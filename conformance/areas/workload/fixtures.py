"""The workload area's one fixture module (its Area.fixtures): `workload_ctx`.

* `workload_run_context` (module scope): the run's TransportContext (conformance.rdt.fixtures,
  shared with the transport and performance areas); n/a without a transport.
* `workload_ctx` (function scope): the check's context on the shared cluster; its teardown stops
  the actors the check started and waits until their devices are free.
* `workload_collective_ctx` (function scope): a data-parallel check's context over the manifest's
  collective backend (conformance.areas.workload.dp_context); n/a without a collective block.
"""
from __future__ import annotations

from typing import Any, Iterator

import pytest

from conformance.areas.collective.config import CollectiveConfig
from conformance.areas.workload.context import WorkloadCtx
from conformance.areas.workload.dp_context import DataParallelCtx
from conformance.rdt.context import TransportContext
from conformance.rdt.fixtures import module_context
from conformance.run.check_context import CheckContext


@pytest.fixture(scope="module")
def workload_run_context(conformance_run: Any) -> Iterator[TransportContext]:
    yield from module_context(conformance_run)


@pytest.fixture
def workload_ctx(check_context: CheckContext, workload_run_context: TransportContext) -> Iterator[WorkloadCtx]:
    ctx = WorkloadCtx.open(check_context, workload_run_context)
    try:
        yield ctx
    finally:
        ctx.close()


@pytest.fixture
def workload_collective_ctx(request: pytest.FixtureRequest, check_context: CheckContext,
                            collective_config: CollectiveConfig) -> Iterator[DataParallelCtx]:
    """WL-002's context: the collective block (not applicable without one: the collective area's
    `collective_config`), the run's CollectiveContext on the cluster the check's mark names; its
    teardown kills the workers the check started."""
    state = request.getfixturevalue("collective_state")
    ctx = DataParallelCtx.derive(check_context, config=collective_config, backend=state)
    state.on_cluster(ctx.cluster())
    try:
        yield ctx
    finally:
        ctx.close()
