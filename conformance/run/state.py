"""Where one conformance run keeps its state: typed keys of `config.stash` (and one item key).

Every piece of per-run state lives in the pytest config's stash under one of these keys, never in
a module-level dict keyed by `id(run)`: a second run in the same process (pytester, a test that
calls `pytest.main` twice) then starts clean, and nothing outlives the config that owns it.

This module imports nothing from the rest of the suite at run time (only for type hints), so
session, fixtures and the area modules can all import it without an import cycle.
"""
from __future__ import annotations

from typing import TYPE_CHECKING, Any

import pytest

if TYPE_CHECKING:  # type hints only: importing the session at run time would bring back the cycle
    from conformance.run.budget import Budget
    from conformance.run.check_context import RunView
    from conformance.run.session import ConformanceRun

RUN = pytest.StashKey["ConformanceRun"]()
"""The run itself (set by conformance.plugin; the `conformance_run` fixture reads it)."""

METRICS_KEY = pytest.StashKey[dict[str, Any]]()
"""Item stash: the check's metrics dict (`CheckContext.metrics`), copied into its TestRecord."""


BUDGET_KEY: pytest.StashKey[Budget] = pytest.StashKey()
"""Item stash: the check's budget (`CheckContext.budget`): the session holds the check's body under
it, so the waits its areas' helpers make are recorded as its own (conformance.run.budget)."""


def run_of(config: pytest.Config) -> "ConformanceRun | None":
    """The run of this pytest session; None without --conformance-manifest."""
    return config.stash.get(RUN, None)


def stash_of(run: RunView) -> pytest.Stash:
    """The stash that holds `run`'s state: its config's (the run keeps the config it belongs to)."""
    return run.config.stash
