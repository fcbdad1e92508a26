"""tests/cli signs and verifies reports of the working data: after a data edit that no release
holds yet, the lane runs against a development release of it (tests/support/dev_release.py), so
the release test's one skip is the only sign of the pending release step (docs/architecture.md,
"Change a threshold")."""
from __future__ import annotations

from pathlib import Path

import pytest

import dev_release

_FOLDER = pytest.StashKey[Path | None]()


def pytest_configure(config: pytest.Config) -> None:
    """Before collection: modules read the releases file's path when imported."""
    config.stash[_FOLDER] = dev_release.activate()


def pytest_unconfigure(config: pytest.Config) -> None:
    folder = config.stash.get(_FOLDER, None)
    dev_release.deactivate(folder)
