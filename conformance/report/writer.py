"""Writing a run's reports: archive the previous run's, then build, validate and write every format once.

Kept apart from the pytest hooks because two threads may want to write: the session's end and
the watchdog (a check that hangs uninterruptibly). Whichever comes first writes; the other
finds the report written and does nothing. A user's earlier reports are never overwritten: the
previous run's whole set (its reports, its signature and bundle, its logs/) moves to
previous/<timestamp>/ together, before this run writes anything (its preflight and log evidence
go into logs/ long before the report), so a reviewer handed the folder sees one run's files.
"""
from __future__ import annotations

import datetime as dt
import shutil
import threading
from pathlib import Path
from typing import Any, Callable, Iterable

from conformance.report.build import validate_report, write_html, write_json, write_junit, write_markdown

REPORT_FILES = ("report.json", "report.md", "junit.xml", "report.intoto.json", "report.html")
# Everything a run (and `sign` after it) writes into its folder: the reports, the signature's two
# forms (signing/attestation.py ENVELOPE_NAME and BUNDLE_NAME; tests/unit/test_run_units.py holds
# the names equal) and logs/ (preflight details, each failed check's Ray log excerpts).
RUN_FILES = (*REPORT_FILES, "report.sigstore.json", "logs")


def _fresh_folder(parent: Path, stamp: str) -> Path:
    """parent/stamp, or stamp-1, stamp-2, ...: the first name nobody holds, created here (never reused)."""
    parent.mkdir(parents=True, exist_ok=True)
    n = 0
    while True:
        dest = parent / (stamp if n == 0 else f"{stamp}-{n}")
        try:
            dest.mkdir()
            return dest
        except FileExistsError:
            n += 1


def archive_previous(out_dir: Path) -> Path | None:
    """Move the previous run's set already in `out_dir` (RUN_FILES: reports, signature, bundle,
    logs/) into previous/<timestamp>/ together (the first file's mtime; -1, -2, ... when taken);
    return that folder, None when there was nothing to move. Other files stay where they are."""
    existing = [out_dir / f for f in RUN_FILES if (out_dir / f).exists() or (out_dir / f).is_symlink()]
    if not existing:
        return None
    stamp = dt.datetime.fromtimestamp(existing[0].lstat().st_mtime).strftime("%Y%m%dT%H%M%S")
    dest = _fresh_folder(out_dir / "previous", stamp)
    for f in existing:
        shutil.move(str(f), dest / f.name)
    return dest


def write_all(report: dict[str, Any], records: Iterable[Any], out_dir: Path) -> None:
    """Validate the report against its schema, then write JSON, Markdown, JUnit and HTML."""
    validate_report(report)
    write_json(report, out_dir)
    write_markdown(report, out_dir)
    write_junit(report, records, out_dir)
    write_html(report, out_dir)


class ReportWriter:
    """Writes one run's reports exactly once, whichever thread asks first."""

    def __init__(self, out_dir: Path) -> None:
        self.out_dir = out_dir
        self.report: dict[str, Any] | None = None
        self.archived: Path | None = None     # where the previous run's set went (None: nothing there)
        self._archive_done = False
        self._lock = threading.Lock()

    def archive(self) -> Path | None:
        """Move the previous run's set out of the way, once per run: called before the run's first
        file (the preflight's logs), and again (a no-op then) before the reports are written."""
        with self._lock:
            return self._archive()

    def _archive(self) -> Path | None:
        if not self._archive_done:
            self.out_dir.mkdir(parents=True, exist_ok=True)
            self.archived = archive_previous(self.out_dir)
            self._archive_done = True
        return self.archived

    @property
    def written(self) -> bool:
        return self.report is not None

    def write(self, build: Callable[[], dict[str, Any]], records: Callable[[], Iterable[Any]]) -> dict[str, Any] | None:
        """Archive, build, validate and write; return the report, or None when already written.

        `build` is called after archiving (the report's timestamps are the writing's).
        """
        with self._lock:
            if self.report is not None:
                return None
            self._archive()
            report = build()
            write_all(report, records(), self.out_dir)
            self.report = report
            return report
