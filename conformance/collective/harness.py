"""The run's collective harness as a check context reaches it: the one way the collective area's
checks and the workload area's WL-002 get the manifest's collective block and the run's
CollectiveContext (each area's `opens`, Area.context; neither reaches the other's fixtures).

* `run_config(run)`: the manifest's collective block; the check not applicable without one.
* `run_backend(run, config, lifetimes)`: the run's one CollectiveContext, kept under STATE in
  the run's stash: the backend registered in the driver on first use (a registration failure
  fails every check that needs it, with the same line); members holding units of the resource
  stopped when the check's module ends, so the next module, of any area, finds every device free;
  the Collective section published and every member stopped when the session ends.
"""
from __future__ import annotations

from typing import TYPE_CHECKING

import pytest

from conformance.collective.config import NO_BACKEND, CollectiveConfig, collective_config
from conformance.collective.context import CollectiveContext
from conformance.collective.report import publish
from conformance.report.results import not_applicable
from conformance.run.state import stash_of

if TYPE_CHECKING:
    from conformance.run.check_context import RunView
    from conformance.run.contexts import Lifetimes

STATE: "pytest.StashKey[CollectiveContext | str]" = pytest.StashKey()
"""The run's CollectiveContext, or the one-line reason the backend could not be registered."""


def run_config(run: RunView) -> CollectiveConfig:
    """The manifest's collective block (not applicable without one)."""
    config = collective_config(run.manifest)
    if config is None:
        not_applicable(NO_BACKEND)
    return config


def run_backend(run: RunView, config: CollectiveConfig, lifetimes: Lifetimes) -> CollectiveContext:
    """The run's CollectiveContext (the module docstring): built once, closed by the lifetimes."""
    run.prepare()
    stash = stash_of(run)
    state = stash.get(STATE, None)
    if state is None:
        try:
            state = CollectiveContext(run, config, publish)
        except Exception as exc:  # noqa: BLE001 - a backend that cannot be registered fails every check
            state = (f"registering collective backend {config.backend} in the driver failed: "
                     f"{type(exc).__name__}: {exc}")
        stash[STATE] = state
    if isinstance(state, str):
        pytest.fail(state.splitlines()[0], pytrace=False)
    backend = state

    def end_of_session() -> None:
        publish(run, backend.section)
        backend.close()

    lifetimes.session.once("collective: section and members", end_of_session)
    lifetimes.module.once("collective: members holding units", backend.release_units)
    return backend
