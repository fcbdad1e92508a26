"""The transport area's one fixture module (its Area.fixtures): `transport_ctx`.

* `transport_run_context` (module scope): the run's TransportContext (conformance.rdt.fixtures:
  kept under CONTEXT in the run's stash, shared with the performance area); the endpoints that
  hold devices are stopped when the module ends.
* `transport_ctx` (function scope): the check's context, of the kind the check's annotation names
  (`TransportCtx`, or its subclass `UsageCtx` for the usage and failure checks), on the shared
  cluster; its teardown stops what the check started (a usage check's actors).
"""
from __future__ import annotations

import inspect
import typing
from typing import TYPE_CHECKING, Any, Iterator

import pytest

from conformance.areas.transport.context import TransportCtx
from conformance.rdt.context import TransportContext
from conformance.rdt.fixtures import module_context
from conformance.run.check_context import CheckContext

if TYPE_CHECKING:
    from conformance.run.check_context import RunView


@pytest.fixture(scope="module")
def transport_run_context(conformance_run: RunView) -> Iterator[TransportContext]:
    yield from module_context(conformance_run)


@pytest.fixture
def transport_ctx(request: pytest.FixtureRequest, check_context: CheckContext,
                  transport_run_context: TransportContext) -> Iterator[TransportCtx]:
    ctx = context_kind(request.function).open(check_context, transport_run_context)
    try:
        yield ctx
    finally:
        ctx.close()


def context_kind(check: Any) -> type[TransportCtx]:
    """The context class a check function's `transport_ctx` annotation names (TransportCtx when
    it names none)."""
    kind = typing.get_type_hints(check).get("transport_ctx", TransportCtx)
    if not (inspect.isclass(kind) and issubclass(kind, TransportCtx)):
        raise pytest.UsageError(f"{check.__qualname__}: transport_ctx must be annotated with TransportCtx or a "
                                f"subclass, not {kind!r}")
    return kind
