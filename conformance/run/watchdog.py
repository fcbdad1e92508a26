"""The watchdog's last resort: a check hung in code that cannot be interrupted (a C call, a
lock). The hard timeout (conformance.timing.timeouts) waits its grace, then calls `Watchdog.abort`:
the report is written marked interrupted, with the unfinished check failed for the hang, and the
process ends at once with WATCHDOG_EXIT (a normal exit would wait for the hung thread forever).
"""
from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import Callable, Protocol, TextIO

from conformance.exit_codes import WATCHDOG_EXIT


class WriteReports(Protocol):
    def __call__(self, *, interrupted: bool, reason: str | None = None, unfinished: str | None = None) -> None: ...


class Watchdog:
    """Knows which test is running, and how to end the run when it hangs."""

    def __init__(self, write_reports: WriteReports, out_dir: Path, *,
                 exit_fn: Callable[[int], object] = os._exit, stderr: TextIO | None = None) -> None:
        self.write_reports = write_reports
        self.out_dir = out_dir
        self.exit_fn = exit_fn          # os._exit: no atexit, no joining the hung thread
        self.stderr = stderr
        self.current: str | None = None

    def started(self, nodeid: str) -> None:
        """A test began (pytest_runtest_logstart): the one to blame if the run hangs now."""
        self.current = nodeid

    def abort(self, reason: str) -> None:
        """Write the report (interrupted; the current test failed with `reason`), then exit."""
        try:
            self.write_reports(interrupted=True, reason=reason, unfinished=self.current)
            (self.stderr or sys.stderr).write(f"\nconformance: {reason}; report written to {self.out_dir}\n")
        finally:
            self.exit_fn(WATCHDOG_EXIT)
