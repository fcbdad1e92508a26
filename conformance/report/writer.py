"""Writing a run's reports: archive the previous ones, then build, validate and write every format once.

Kept apart from the pytest hooks because two threads may want to write: the session's end and
the watchdog (a check that hangs uninterruptibly). Whichever comes first writes; the other
finds the report written and does nothing. A user's earlier reports are never overwritten: they
move to previous/<timestamp>/ first.
"""
from __future__ import annotations

import datetime as dt
import shutil
import threading
from pathlib import Path
from typing import Any, Callable, Iterable

from conformance.report.build import validate_report, write_html, write_json, write_junit, write_markdown

REPORT_FILES = ("report.json", "report.md", "junit.xml", "report.intoto.json", "report.html")


def archive_previous(out_dir: Path) -> Path | None:
    """Move the report files already in `out_dir` into previous/<timestamp>/ (the first file's
    mtime; -1, -2, ... when taken); return that folder, None when there was nothing to move."""
    existing = [out_dir / f for f in REPORT_FILES if (out_dir / f).exists()]
    if not existing:
        return None
    stamp = dt.datetime.fromtimestamp(existing[0].stat().st_mtime).strftime("%Y%m%dT%H%M%S")
    dest = out_dir / "previous" / stamp
    n = 1
    while dest.exists():
        dest = out_dir / "previous" / f"{stamp}-{n}"
        n += 1
    dest.mkdir(parents=True)
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
        self._lock = threading.Lock()

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
            self.out_dir.mkdir(parents=True, exist_ok=True)
            archive_previous(self.out_dir)
            report = build()
            write_all(report, records(), self.out_dir)
            self.report = report
            return report
