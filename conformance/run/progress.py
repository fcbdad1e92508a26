"""Progress a person can read: one line per check, a running count, and the time left.

The estimate comes from the checks' typical durations (tiers/run.yaml, measured), scaled by how
this run's pace compares with them so far. Pure functions; the pytest hooks only call them.
"""
from __future__ import annotations

import datetime as dt
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Iterable, Mapping, Sequence

from conformance.sanitize import terminal

if TYPE_CHECKING:
    from conformance.catalog.data import Waiver

LINE_WIDTH = 100
MARK = {"pass": "PASS", "fail": "FAIL", "error": "ERROR", "skip": "SKIP", "not_applicable": "N/A",
        "waived": "WAIVED", "flaky": "FLAKY"}
PACE_BOUNDS = (0.5, 4.0)   # how far this run's pace may stretch the recorded durations
PACE_AFTER_S = 10.0        # judge the pace only once this many recorded seconds are done
TAIL_WIDTH = 34


def format_seconds(seconds: float) -> str:
    seconds = max(0, int(round(seconds)))
    if seconds < 60:
        return f"{seconds}s"
    minutes, secs = divmod(seconds, 60)
    return f"{minutes}m{secs:02d}s"


def estimate_left(remaining: Sequence[str], done: Sequence[str], spent_s: float,
                  typical: Mapping[str, float], default_s: float) -> float:
    """Seconds left: the remaining checks' typical durations, times this run's pace so far.

    The pace is what the finished checks took (`spent_s`) against their typical durations, never
    the run's wall clock: the preflight and the first cluster start belong to no check, and
    counted as the first checks' time they read as a pace of x4 (a vendor's run: "~19m left" at
    check 10 of a run that took 11 minutes)."""
    def t(cid: str) -> float:
        return float(typical.get(cid, default_s))

    expected_done = sum(t(c) for c in done)
    pace = spent_s / expected_done if expected_done >= PACE_AFTER_S else 1.0
    pace = min(max(pace, PACE_BOUNDS[0]), PACE_BOUNDS[1])
    return pace * sum(t(c) for c in remaining)


def shown_outcome(outcome: str, check_id: str, waivers: Iterable[Waiver], today: dt.date | None = None) -> str:
    """The outcome the progress line prints: a failed check under an active waiver reads `waived`,
    as report.json will say (results.aggregate applies the same rule), never `FAIL`."""
    from conformance.report.results import active_waiver

    if outcome == "fail" and active_waiver(waivers, check_id, today or dt.date.today()) is not None:
        return "waived"
    return outcome


def progress_line(index: int, total: int, check_id: str, title: str, outcome: str, seconds: float,
                  elapsed_s: float, left_s: float | None, width: int = LINE_WIDTH) -> str:
    """`[ 3/67] DP-003 Visible ids round-trip …  PASS   0.4s | 0m12s, ~1m30s left` within `width`."""
    count = f"[{index:>{len(str(total))}}/{total}]"
    tail = f"{MARK.get(outcome, outcome.upper()):<6} {seconds:5.1f}s | {format_seconds(elapsed_s)}" + (
        f", ~{format_seconds(left_s)} left" if left_s is not None and index < total else "")
    head = f"{count} {check_id} "
    room = max(10, width - len(head) - max(len(tail), TAIL_WIDTH) - 2)
    name = terminal(title, limit=room)
    return f"{head}{name:<{room}}  {tail}"


@dataclass
class Progress:
    """The run's order of checks and what has finished (fed by the hooks)."""

    order: list[str]                                   # check ids in run order, each once
    last_item: dict[str, str]                          # check id -> nodeid of its last test
    typical: Mapping[str, float]
    default_s: float
    done: list[str] = field(default_factory=list)
    spent_s: float = 0.0                               # what the finished checks took, in all

    @classmethod
    def from_items(cls, items: Sequence[tuple[str, str]], typical: Mapping[str, float],
                   default_s: float) -> "Progress":
        """items: (nodeid, check id) in run order."""
        order: list[str] = []
        last: dict[str, str] = {}
        for nodeid, cid in items:
            if cid not in last:
                order.append(cid)
            last[cid] = nodeid
        return cls(order, last, typical, default_s)

    def finished(self, nodeid: str, check_id: str) -> bool:
        """Record a finished test; True when it was its check's last test (print a line then)."""
        if self.last_item.get(check_id) != nodeid or check_id in self.done:
            return False
        self.done.append(check_id)
        return True

    def took(self, seconds: float) -> None:
        """A finished check's own seconds (its tests and their re-runs), for the pace."""
        self.spent_s += seconds

    def left_s(self) -> float:
        remaining = [c for c in self.order if c not in self.done]
        return estimate_left(remaining, self.done, self.spent_s, self.typical, self.default_s)
