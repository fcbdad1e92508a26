"""How one pytest phase report (setup, call, teardown) updates the check's TestRecord.

Pure: takes what pytest's TestReport and CallInfo carry (duck-typed, see PhaseReport) and the
record; no pytest session, no Ray. The hook in conformance.run.session is a thin layer over it, so
the mapping is unit-tested directly (tests/unit/test_run_units.py) rather than only through runs.

The rules, in the order they apply:
* a skip is `not_applicable` when its text starts with NOT_APPLICABLE_PREFIX, else `skip`;
* a failure of the call phase is `fail`, except a ClusterStartError (the suite could not start
  the cluster: `error`, not a verdict on the plugin);
* a failure whose cause is the host (Ray's own node registration ran out of its fixed wait, in a
  cluster start or in a check's restart: `host_failure`) is `error` with a reason that starts
  HOST_PREFIX, "not judged: host: ...", in any phase: a host too loaded to start Ray says nothing
  about the plugin, and never counts as passed either;
* a failure of setup or teardown is `error` ("teardown: ..." for teardown), unless the call
  already failed (a fail stays a fail);
* a hard timeout carried inside another exception (Ray's C++ get wraps it) gives its own text;
* a passed call is `pass`;
* a failed call of a waived check is shown to pytest as xfail, never as a pass (waiver_xfail).
"""
from __future__ import annotations

import datetime as dt
from typing import Any, Iterable, Protocol

from conformance.cluster.manager import ClusterStartError, ray_startup_timed_out
from conformance.exc_text import first_line as error_line
from conformance.report.results import HOST_PREFIX, NOT_APPLICABLE_PREFIX, TestRecord, active_waiver
from conformance.timing.host_load import HostNotReady
from conformance.timing.waits import carried_timeout

UNFINISHED = "the check did not finish (run interrupted)"
# HOST_PREFIX (report/results.py), "not judged: host: ": the reason of an error the host caused (report,
# tiers: an error, never a pass; an attempt it ended is no failure of the plugin)
REASON_LIMIT = 600  # knob: longest reason line kept from an exception message


class PhaseReport(Protocol):
    """What the mapping reads of a pytest TestReport (read-only: TestReport's outcome flags are properties)."""

    @property
    def when(self) -> str: ...
    @property
    def passed(self) -> bool: ...
    @property
    def failed(self) -> bool: ...
    @property
    def skipped(self) -> bool: ...
    @property
    def longrepr(self) -> Any: ...
    @property
    def duration(self) -> float: ...


def first_line(text: str, limit: int = REASON_LIMIT) -> str:
    """The first non-blank line of `text`, stripped and cut to `limit` characters."""
    for line in text.strip().splitlines():
        if line.strip():
            return line.strip()[:limit]
    return ""


def reason_from_exception(exc: BaseException) -> str:
    """The reason a report gives for an exception: the assertion's message, or `Type: first line`."""
    msg = str(exc).strip()
    if isinstance(exc, AssertionError) or type(exc).__name__ == "Failed":
        # `assert cond, msg` → msg first; pytest appends the introspection below it.
        return first_line(msg) or "assertion failed"
    # a Ray task error's own first line is Ray's frame header ("ray::Actor.method() (pid=...)"):
    # the reason names the error it carries and that error's message (conformance.exc_text)
    return error_line(exc, REASON_LIMIT) if msg else type(exc).__name__


def host_failure(exc: BaseException | None) -> str | None:
    """The "not judged: host" reason when `exc` says the host, not the plugin, failed: Ray's node did
    not register within Ray's fixed 30 s wait (node.py), itself or carried in a cluster start error."""
    if isinstance(exc, HostNotReady):
        return f"{HOST_PREFIX}{first_line(str(exc))}"   # its measurements fit: conformance.run.machinery.WHAT_CHARS
    if exc is None or not ray_startup_timed_out(exc):
        return None
    return (f"{HOST_PREFIX}Ray's node did not register within Ray's own fixed 30 s startup wait (a loaded host; "
            f"the plugin was not judged; rerun on a less loaded host): {first_line(str(exc), 300)}")


def new_record(nodeid: str, check_id: str) -> TestRecord:
    """A test's record before any phase reported: an error unless a phase says otherwise, so a
    run cut short reports the check as unfinished rather than passed."""
    return TestRecord(nodeid, check_id, "error", UNFINISHED)


def skip_text(longrepr: object) -> str:
    """The reason of a skip, without pytest's "Skipped: " prefix."""
    text = longrepr[2] if isinstance(longrepr, tuple) else str(longrepr)
    return text.removeprefix("Skipped: ")


def apply_phase(rec: TestRecord, rep: PhaseReport, exc: BaseException | None) -> None:
    """Update `rec` with one phase's report; `exc` is the phase's exception (CallInfo.excinfo.value)."""
    rec.duration_s += rep.duration
    if rep.skipped:
        text = skip_text(rep.longrepr)
        if text.startswith(NOT_APPLICABLE_PREFIX):
            rec.outcome, rec.reason = "not_applicable", text[len(NOT_APPLICABLE_PREFIX):]
        else:
            rec.outcome, rec.reason = "skip", text
    elif rep.failed:
        reason = reason_from_exception(exc) if exc is not None else first_line(str(rep.longrepr))
        carried = carried_timeout(exc) if exc is not None else None
        if carried is not None:
            reason = str(carried)
        host = host_failure(exc)
        if host is not None and (rep.when == "call" or rec.outcome != "fail"):
            rec.outcome, rec.reason = "error", host
        elif rep.when == "call" and not isinstance(exc, ClusterStartError):
            rec.outcome, rec.reason = "fail", reason
        elif rec.outcome != "fail":
            rec.outcome = "error"
            rec.reason = reason if rep.when != "teardown" else f"teardown: {reason}"
    elif rep.when == "call" and rep.passed:
        rec.outcome, rec.reason = "pass", None


def waiver_xfail(rec: TestRecord, when: str, waivers: Iterable[Any], today: dt.date) -> str | None:
    """The xfail text pytest shows for a failed call of a waived check (None: no active waiver).

    Shown as xfail because the waiver names a known upstream limitation; it is never a pass.
    """
    if when != "call" or rec.outcome != "fail":
        return None
    waiver = active_waiver(waivers, rec.check_id, today)
    return None if waiver is None else f"waived ({waiver.issue}): {rec.reason}"
