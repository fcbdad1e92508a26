"""From per-test outcomes to one outcome per check (pure functions, unit-tested without Ray).

A check may be evidenced by several tests; the check passes only if every one passed. Skipped,
not-applicable and errored checks never count as passed. Waivers turn a failure of a check with
an active waiver into `waived` (never `pass`), keeping the original outcome and reason. An
outcome its own recorded evidence contradicts (report/judges.contradiction, what verify refuses)
becomes `error`: the suite's defect, so a run never writes a pass its verifier would reject.
"""
from __future__ import annotations

import datetime as dt
from dataclasses import dataclass, field
from typing import Any, Iterable, Mapping, NoReturn

from conformance.catalog.data import Checklist, Waiver
from conformance.report.judges import contradiction
from conformance.timing.host_load import heavier

NOT_APPLICABLE_PREFIX = "not_applicable: "


def not_applicable(reason: str) -> NoReturn:
    """End the current check as not applicable (never counts as passed), with a reason: a pytest
    skip whose text carries NOT_APPLICABLE_PREFIX, which the outcome mapping turns back into the
    not_applicable outcome."""
    import pytest

    pytest.skip(NOT_APPLICABLE_PREFIX + reason)
OUTCOMES = ("pass", "fail", "error", "skip", "not_applicable", "waived")


@dataclass
class TestRecord:
    __test__ = False   # a record of a test, not one: pytest must not collect it
    nodeid: str
    check_id: str
    outcome: str              # pass | fail | error | skip | not_applicable
    reason: str | None = None
    duration_s: float = 0.0
    metrics: dict[str, Any] = field(default_factory=dict)
    host_load: dict[str, Any] | None = None   # the host's load while the call ran (conformance.timing.host_load)


def combine(outcomes: list[str]) -> str:
    """The outcome of a check from the outcomes of its tests (worst first)."""
    for worst in ("fail", "error"):
        if worst in outcomes:
            return worst
    if outcomes and all(o == "pass" for o in outcomes):
        return "pass"
    if "skip" in outcomes or not outcomes:
        return "skip"
    if all(o in ("not_applicable", "pass") for o in outcomes):
        return "not_applicable"
    return "skip"


def active_waiver(waivers: Iterable[Waiver], check_id: str, on: dt.date) -> Waiver | None:
    for w in waivers:
        if w.check == check_id and dt.date.fromisoformat(w.expires) >= on:
            return w
    return None


def aggregate(records: Iterable[TestRecord], checklist: Checklist, waivers: Iterable[Waiver] = (),
              today: dt.date | None = None, not_run_reason: str = "no test for this check ran",
              manifest: Mapping[str, Any] | None = None) -> list[dict[str, Any]]:
    """One entry per active checklist item, in checklist order (`manifest`: the run's, which
    judges read beside the evidence)."""
    today = today or dt.date.today()
    waivers = list(waivers)
    by_check: dict[str, list[TestRecord]] = {}
    for r in records:
        by_check.setdefault(r.check_id, []).append(r)
    entries = []
    for c in checklist.active():
        recs = by_check.get(c.id, [])
        outcome = combine([r.outcome for r in recs])
        reason = None
        if not recs:
            reason = not_run_reason
        else:
            for r in recs:
                if r.outcome == outcome and r.reason:
                    reason = r.reason
                    break
        metrics: dict[str, Any] = {}
        load: dict[str, Any] | None = None
        for r in recs:
            metrics.update(r.metrics)
            load = heavier(load, r.host_load)
        reason = with_types_not_run(reason, outcome, metrics)
        verdict = contradiction(c, outcome, metrics, manifest)
        if verdict is not None:  # what verify would refuse: the suite's own defect, never the plugin's
            outcome, reason = "error", (f"this suite's defect, not the plugin's: the check reached {outcome} but its "
                                        f"recorded evidence gives {verdict.outcome} ({verdict.reason}); "
                                        f"was: {reason}")
        entry: dict[str, Any] = {
            "id": c.id, "title": c.title, "area": c.area, "level": c.level, "outcome": outcome,
            "reason": reason, "duration_s": round(sum(r.duration_s for r in recs), 3),
            "metrics": metrics, "params": dict(c.params), "tests": [r.nodeid for r in recs], "waiver": None,
        }
        if load is not None:
            entry["host_load"] = load
        if outcome == "fail":  # an error is the suite's or the run's problem, never waivable
            w = active_waiver(waivers, c.id, today)
            if w is not None:
                entry["outcome"] = "waived"
                entry["waiver"] = {"check": w.check, "issue": w.issue, "reason": w.reason,
                                   "expires": w.expires, "blocks_tier": w.blocks_tier, "original_outcome": outcome}
                entry["reason"] = f"waived ({w.issue}, expires {w.expires}): {w.reason}; was {outcome}: {reason}"
        entries.append(entry)
    return entries


def with_types_not_run(reason: str | None, outcome: str, metrics: dict[str, Any]) -> str | None:
    """A check run on each declared device type (conformance.rdt.each_device) that ran on some and
    was not applicable on others keeps the outcome of those it ran on; its reason line says on
    which types it did not run and why, so a pass is never read as covering every declared type."""
    skipped = metrics.get("not_applicable_on")
    if outcome not in ("pass", "fail") or not isinstance(skipped, dict) or not skipped:
        return reason
    ran = metrics.get("devices")
    said = "; ".join(f"not applicable on {device}: {why}" for device, why in skipped.items())
    if reason:
        return f"{reason} ({said})"
    return f"passed on {', '.join(map(str, ran))}; {said}" if isinstance(ran, list) and ran else said


def summarize(entries: Iterable[dict[str, Any]]) -> dict[str, int]:
    counts = {o: 0 for o in OUTCOMES}
    for e in entries:
        counts[e["outcome"]] += 1
    return counts
