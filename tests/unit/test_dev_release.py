"""tests/support/dev_release.py: the development release the CLI lane signs with after a data edit
is the working data byte for byte, with one more release in its copy's releases file, and never
touches the checkout's own (pure: files in a temporary folder, no subprocess)."""
from __future__ import annotations

from pathlib import Path

import pytest

import dev_release
from conformance.catalog import datafiles, releases


def test_a_cut_release_holds_the_working_data_and_leaves_the_checkout_alone(tmp_path: Path,
                                                                          monkeypatch: pytest.MonkeyPatch) -> None:
    shipped = dev_release.checkout_releases_file()
    before = shipped.read_bytes()
    version = dev_release.cut(tmp_path)
    assert shipped.read_bytes() == before, "the checkout's releases file was written"
    monkeypatch.setenv(dev_release.ENV, str(tmp_path))
    known = releases.load_releases()
    assert list(known)[-1] == version and known[version].matches(releases.current_entry())
    assert releases.current_version() == version
    assert known[version].published == list(releases.load_releases(shipped).values())[-1].published
    for name in ("checklist.yaml", "tiers.yaml"):
        assert datafiles.sha256_file(tmp_path / "tiers" / name) == datafiles.sha256_file(shipped.parent / name)
