"""The workload area's one fixture module (its Area.fixtures): `workload_ctx`.

* `workload_run_context` (module scope): the run's TransportContext (conformance.rdt.fixtures,
  shared with the transport and performance areas); n/a without a transport.
* `workload_ctx` (function scope): the check's context on the shared cluster; its teardown stops
  the actors the check started and waits until their devices are free.
"""
from __future__ import annotations

from typing import Any, Iterator

import pytest

from conformance.areas.workload.context import WorkloadCtx
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
