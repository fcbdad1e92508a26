"""The working data, released for the tests: a copy of tiers/ and schemas/ whose releases file
holds one more release, of the data as it stands (no tests here).

After a data edit (a param, a check, a schema field) no published release holds the current
files' digests until the release step (`make release`, the lead's, once per merge). `sign` and
`verify` rightly refuse a report of such data for real users; the tests that sign and verify
reports of the current data would then all fail for that one reason, which the release test
already says in one skip (tests/cli/test_signing_releases.py). So the lanes that sign cut a
development release of the working data into a temporary data folder (CONFORMANCE_DATA_DIR,
the folder every loader reads) and run against it: the same files, byte for byte, and the same
rules; only the releases file has one more entry, in the copy. When a release already holds the
data nothing is cut and the tests run against the checkout's own files.
"""
from __future__ import annotations

import os
import shutil
import tempfile
from pathlib import Path

from conformance.catalog import datafiles, releases

ENV = "CONFORMANCE_DATA_DIR"


def checkout_releases_file() -> Path:
    """The releases file the checkout ships (never the development copy): what the release test reads."""
    return datafiles.packaged_data_root() / "tiers" / "releases.yaml"


def unreleased() -> bool:
    """True when no release in the checkout's releases file has the current data files' digests."""
    return releases.current_version(checkout_releases_file()).endswith("+unreleased")


def cut(folder: Path) -> str:
    """Copy the data (tiers/, schemas/, the archived releases included) into `folder` and append a
    release of it there, published the day the latest release was (so every run a test dates after
    that release is after this one too). Returns the new release's version."""
    source = datafiles.data_root()
    for sub in ("tiers", "schemas"):
        shutil.copytree(source / sub, folder / sub, ignore=shutil.ignore_patterns("__pycache__"))
    path = folder / "tiers" / "releases.yaml"
    latest = list(releases.load_releases(path).values())[-1]
    saved = os.environ.get(ENV)
    os.environ[ENV] = str(folder)   # the digests and archive are the copy's (the same bytes)
    try:
        _, version = releases.write_release(path, published=latest.published)
    finally:
        if saved is None:
            os.environ.pop(ENV, None)
        else:
            os.environ[ENV] = saved
    return version


def activate() -> Path | None:
    """When the working data is unreleased and no data folder is set: cut a development release
    into a new temporary folder and point CONFORMANCE_DATA_DIR at it (subprocesses inherit it).
    Returns the folder (for `deactivate`), or None when nothing was needed."""
    if os.environ.get(ENV) or not unreleased():
        return None
    folder = Path(tempfile.mkdtemp(prefix="conformance-dev-release-"))
    cut(folder)
    os.environ[ENV] = str(folder)
    return folder


def deactivate(folder: Path | None) -> None:
    if folder is None:
        return
    if os.environ.get(ENV) == str(folder):
        os.environ.pop(ENV, None)
    shutil.rmtree(folder, ignore_errors=True)
