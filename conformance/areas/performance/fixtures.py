"""The performance area's one fixture module (its Area.fixtures): `performance_ctx`.

* `performance_run_context` (module scope): the run's TransportContext (conformance.rdt.fixtures:
  kept under CONTEXT in the run's stash, shared with the transport area); the endpoints that hold
  devices are stopped when the module ends.
* `performance_ctx` (function scope): the check's context on the shared cluster.
"""
from __future__ import annotations

from typing import TYPE_CHECKING, Iterator

import pytest

from conformance.areas.performance.context import PerformanceCtx
from conformance.rdt.context import TransportContext
from conformance.rdt.fixtures import module_context, open_context
from conformance.run.check_context import CheckContext

if TYPE_CHECKING:
    from conformance.run.check_context import RunView


@pytest.fixture(scope="module")
def performance_run_context(conformance_run: RunView) -> Iterator[TransportContext]:
    yield from module_context(conformance_run)


@pytest.fixture
def performance_ctx(check_context: CheckContext, performance_run_context: TransportContext) -> PerformanceCtx:
    return open_context(PerformanceCtx, check_context, performance_run_context)
