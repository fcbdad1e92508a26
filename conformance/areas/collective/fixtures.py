"""The collective area's fixtures, all of them (registered as a plugin through its Area).

* `collective_ctx` (function): the one thing a collective check receives, a CollectiveCtx
  (context.py): the check's CheckContext with the manifest's collective block and, for a check
  with a cluster mark, the run's CollectiveContext on the live cluster that mark names.
* `collective_config` (session): the manifest's collective block; every check not applicable
  without one.
* `collective_state` (session): the run's CollectiveContext (backend registered in the driver,
  member pool), kept under the one stash key STATE; its report section published and its members
  stopped at the end of the session.
* `collective_member_units` (module): members that hold units of the resource (the block
  declares a device type) are stopped when the module ends and the units awaited, so the next
  module, of any area, finds every device free; members that hold none live on.
"""
from __future__ import annotations

from typing import TYPE_CHECKING, Iterator

import pytest

from conformance.areas.collective.area import STATE
from conformance.areas.collective.report import publish
from conformance.collective.config import NO_BACKEND, CollectiveConfig
from conformance.collective.config import collective_config as config_of
from conformance.collective.context import CollectiveContext, CollectiveCtx
from conformance.run.check_context import CheckContext
from conformance.run.fixtures import not_applicable
from conformance.run.state import stash_of

if TYPE_CHECKING:
    from conformance.run.check_context import RunView


@pytest.fixture(scope="session")
def collective_config(conformance_run: RunView) -> CollectiveConfig:
    config = config_of(conformance_run.manifest)
    if config is None:
        not_applicable(NO_BACKEND)
    return config


@pytest.fixture(scope="session")
def collective_state(conformance_run: RunView, collective_config: CollectiveConfig) -> Iterator[CollectiveContext]:
    conformance_run.prepare()
    stash = stash_of(conformance_run)
    state = stash.get(STATE, None)
    if state is None:
        try:
            state = CollectiveContext(conformance_run, collective_config, publish)
        except Exception as exc:  # noqa: BLE001 - a backend that cannot be registered fails every check
            state = (f"registering collective backend {collective_config.backend} in the driver failed: "
                     f"{type(exc).__name__}: {exc}")
        stash[STATE] = state
    if isinstance(state, str):
        pytest.fail(state.splitlines()[0], pytrace=False)
    yield state
    publish(conformance_run, state.section)
    state.close()


@pytest.fixture(scope="module")
def collective_member_units(conformance_run: RunView) -> Iterator[None]:
    """At the end of a module whose checks used the collective members: those holding units
    stopped, the units back (CollectiveContext.release_units)."""
    yield
    state = stash_of(conformance_run).get(STATE, None)
    if isinstance(state, CollectiveContext):
        state.release_units()


@pytest.fixture
def collective_ctx(request: pytest.FixtureRequest, check_context: CheckContext,
                   collective_config: CollectiveConfig) -> CollectiveCtx:
    """The check's context. With a cluster mark: the backend registered in the driver first (a
    registration failure fails the check before any cluster starts), then the marked cluster,
    which the member pool follows. Without one: the config alone (see CollectiveCtx)."""
    if not check_context.marked:
        return CollectiveCtx.derive(check_context, config=collective_config)
    state: CollectiveContext = request.getfixturevalue("collective_state")
    request.getfixturevalue("collective_member_units")
    ctx = CollectiveCtx.derive(check_context, config=collective_config, _backend=state)
    state.on_cluster(ctx.cluster())
    return ctx
