"""Where one conformance run keeps its state: typed keys of `config.stash` (and one item key).

Every piece of per-run state lives in the pytest config's stash under one of these keys, never in
a module-level dict keyed by `id(run)`: a second run in the same process (pytester, a test that
calls `pytest.main` twice) then starts clean, and nothing outlives the config that owns it.

This module imports nothing from the rest of the suite at run time (and for type hints only the
budget, which imports none of them), so session, fixtures and the area modules can all import it
without an import cycle: it names the run by what it reads of it (StashedRun), not by the session's
class or check_context's RunView, which both import it.
"""
from __future__ import annotations

from typing import TYPE_CHECKING, Any, Protocol

import pytest

if TYPE_CHECKING:  # type hints only
    from conformance.run.budget import Budget


class StashedRun(Protocol):
    """What this module reads of a run (conformance.run.session.ConformanceRun; the checks see it as
    conformance.run.check_context.RunView): the pytest config whose stash holds its state."""

    @property
    def config(self) -> pytest.Config: ...


RUN = pytest.StashKey[StashedRun]()
"""The run itself (set by conformance.plugin; the `conformance_run` fixture reads it)."""

METRICS_KEY = pytest.StashKey[dict[str, Any]]()
"""Item stash: the check's metrics dict (`CheckContext.metrics`), copied into its TestRecord."""


BUDGET_KEY: pytest.StashKey[Budget] = pytest.StashKey()
"""Item stash: the check's budget (`CheckContext.budget`): the session holds the check's body under
it, so the waits its areas' helpers make are recorded as its own (conformance.run.budget)."""


def run_of(config: pytest.Config) -> StashedRun | None:
    """The run of this pytest session; None without --conformance-manifest."""
    return config.stash.get(RUN, None)


def stash_of(run: StashedRun) -> pytest.Stash:
    """The stash that holds `run`'s state: its config's (the run keeps the config it belongs to)."""
    return run.config.stash
