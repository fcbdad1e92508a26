"""From per-test outcomes to one outcome per check (pure functions, unit-tested without Ray).

A check may be evidenced by several tests; the check passes only if every one passed. Skipped,
not-applicable and errored checks never count as passed. Waivers turn a failure of a check with
an active waiver into `waived` (never `pass`), keeping the original outcome and reason. A test
that failed and was re-run (the release's `retries`, tiers/tiers.yaml `flakes`) keeps every
attempt; one that failed and then passed is `flaky`: never `pass`, and counted toward a tier or a
profile only where the release allows it (`allow_flaky`), so a retry never hides an intermittent
bug. An outcome its own recorded evidence contradicts (report/judges.contradiction, what verify refuses)
becomes `error`: the suite's defect, so a run never writes a pass its verifier would reject; so does a
pass that recorded a wait its checklist entry does not declare (`waits:`, catalog/declared_waits.py).
"""
from __future__ import annotations

import datetime as dt
from dataclasses import dataclass, field
from typing import Any, Iterable, Mapping, NoReturn

from conformance.catalog import declared_waits
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
OUTCOMES = ("pass", "fail", "error", "skip", "not_applicable", "waived", "flaky")
# Outcomes a later reader may not find in an older report's summary (added after the first release).
LATER_OUTCOMES = frozenset({"flaky"})
RETRIED = ("fail", "error")   # the outcomes of a test that the release's `retries` re-runs
# The reason of an error the host caused (run/outcomes.py): not judged, so no failure of the plugin.
HOST_PREFIX = "not judged: host: "


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
    # The earlier attempts of this test in this run, oldest first, each {outcome, reason, duration_s}
    # (empty: it ran once). The record itself is the last attempt.
    earlier: list[dict[str, Any]] = field(default_factory=list)

    def attempt(self) -> dict[str, Any]:
        """This attempt as the report records it."""
        return {"outcome": self.outcome, "reason": self.reason, "duration_s": round(self.duration_s, 3)}

    def final_outcome(self) -> str:
        """The test's outcome over its attempts: `flaky` when it passed after a failed attempt."""
        return outcome_over_attempts([*self.earlier, self.attempt()])


def plugin_failed(attempt: Mapping[str, Any]) -> bool:
    """Whether an attempt failed or errored for the plugin: not an error the host caused ("not
    judged: host: ...", which judged nothing of the plugin)."""
    return attempt.get("outcome") in RETRIED and not str(attempt.get("reason") or "").startswith(HOST_PREFIX)


def outcome_over_attempts(attempts: list[Mapping[str, Any]]) -> str:
    """The outcome of one test from its attempts ({outcome, reason}) in order (pure): the last one,
    except that a pass after an attempt the plugin failed is `flaky` (after the host's error only,
    it is a pass: the earlier attempt judged nothing)."""
    if not attempts:
        return "skip"
    last = str(attempts[-1].get("outcome"))
    return "flaky" if last == "pass" and any(plugin_failed(a) for a in attempts[:-1]) else last


def should_retry(rec: TestRecord, retries: int) -> bool:
    """Whether the test of `rec` runs again: it failed or errored and has attempts left (pure)."""
    return rec.outcome in RETRIED and len(rec.earlier) < retries


def combine(outcomes: list[str]) -> str:
    """The outcome of a check from the outcomes of its tests (worst first; a flaky test makes
    the check flaky unless another failed)."""
    for worst in ("fail", "error", "flaky"):
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
              manifest: Mapping[str, Any] | None = None, remote: bool = False) -> list[dict[str, Any]]:
    """One entry per active checklist item, in checklist order (`manifest`: the run's, which
    judges read beside the evidence; `remote`: the run was on a cluster it did not start, as the
    checks themselves were judged: conformance.report.judges.RunManifest)."""
    today = today or dt.date.today()
    waivers = list(waivers)
    by_check: dict[str, list[TestRecord]] = {}
    for r in records:
        by_check.setdefault(r.check_id, []).append(r)
    entries = []
    for c in checklist.active():
        recs = by_check.get(c.id, [])
        outcome = combine([r.final_outcome() for r in recs])
        reason = None
        if not recs:
            reason = not_run_reason
        elif outcome == "flaky":
            reason = flaky_reason(recs)
        else:
            for r in recs:
                if r.outcome == outcome and r.reason:
                    reason = rerun_reason(r)
                    break
        metrics: dict[str, Any] = {}
        load: dict[str, Any] | None = None
        for r in recs:
            metrics.update(r.metrics)
            load = heavier(load, r.host_load)
        reason = with_types_not_run(reason, outcome, metrics)
        verdict = contradiction(c, outcome, metrics, manifest, remote)
        if verdict is not None:  # what verify would refuse: the suite's own defect, never the plugin's
            outcome, reason = "error", (f"this suite's defect, not the plugin's: the check reached {outcome} but its "
                                        f"recorded evidence gives {verdict.outcome} ({verdict.reason}); "
                                        f"was: {reason}")
        undeclared = declared_waits.problems(metrics.get("waits"), c.waits) if outcome == "pass" else []
        if undeclared:   # a wait the checklist does not declare (verify refuses it): the suite's defect too
            outcome, reason = "error", f"this suite's defect, not the plugin's: the check passed but {undeclared[0]}"
        entry: dict[str, Any] = {
            "id": c.id, "title": c.title, "area": c.area, "level": c.level, "outcome": outcome,
            "reason": reason,
            "duration_s": round(sum(r.duration_s + sum(a["duration_s"] for a in r.earlier) for r in recs), 3),
            "metrics": metrics, "params": dict(c.params), "tests": [r.nodeid for r in recs], "waiver": None,
        }
        if load is not None:
            entry["host_load"] = load
        if any(r.earlier for r in recs):
            entry["attempts"] = check_attempts(recs)
        if c.provisional:   # soaking: reported, counted toward nothing (catalog.data.Checklist.counted)
            entry["provisional"] = True
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


def rerun_reason(r: TestRecord) -> str | None:
    """The reason of a test that ended as it ended on every re-run: its first attempt's (the defect
    as first met; a re-run may meet what the first attempt left behind), and the last one's when it
    differs."""
    if not r.earlier:
        return r.reason
    first = r.earlier[0]
    if first["reason"] == r.reason:
        return f"{r.reason} (the same on {len(r.earlier)} re-run(s))"
    return f"{first['reason']} (re-run {len(r.earlier)}: {r.outcome}: {r.reason})"


def flaky_reason(recs: Iterable[TestRecord]) -> str:
    """The reason of a flaky check: each flaky test with the failure its earlier attempt gave."""
    said = []
    for r in recs:
        if r.final_outcome() == "flaky":
            n, failed = next((n, a) for n, a in enumerate(r.earlier, start=1) if plugin_failed(a))
            said.append(f"{r.nodeid.rsplit('::', 1)[-1]}: {failed['outcome']} on attempt "
                        f"{n} ({failed['reason'] or 'no reason'}), "
                        f"pass on attempt {len(r.earlier) + 1}")
    return "failed, then passed on a re-run (counted as not passed unless the release allows it): " + \
        "; ".join(said)


def check_attempts(recs: Iterable[TestRecord]) -> list[dict[str, Any]]:
    """Every attempt of every test of a check, in order: {test, attempt, outcome, reason, duration_s}."""
    out = []
    for r in recs:
        for n, a in enumerate([*r.earlier, r.attempt()], start=1):
            out.append({"test": r.nodeid, "attempt": n, **a})
    return out


def attempts_outcome(attempts: Iterable[Mapping[str, Any]]) -> dict[str, str]:
    """test -> its outcome recomputed from the recorded attempts (pure; what verify reads)."""
    by_test: dict[str, list[tuple[int, Mapping[str, Any]]]] = {}
    for a in attempts:
        n = a.get("attempt")
        by_test.setdefault(str(a.get("test")), []).append((n if isinstance(n, int) else 0, a))
    return {t: outcome_over_attempts([a for _, a in sorted(tries, key=lambda x: x[0])]) for t, tries in by_test.items()}


def attempt_problems(entry: Mapping[str, Any]) -> list[str]:
    """What a check entry's recorded attempts contradict (pure; verify refuses each): a `pass`
    whose attempts show a failure, a `flaky` no attempt shows, attempts out of order."""
    cid, outcome, attempts = entry.get("id"), entry.get("outcome"), entry.get("attempts")
    if attempts is None:
        return [f"{cid} is flaky but records no attempts"] if outcome == "flaky" else []
    if not isinstance(attempts, list) or not all(isinstance(a, Mapping) for a in attempts):
        return [f"{cid}.attempts is not a list of attempts"]
    problems = []
    for test in dict.fromkeys(str(a.get("test")) for a in attempts):
        numbers = [a.get("attempt") for a in attempts if str(a.get("test")) == test]
        if numbers != list(range(1, len(numbers) + 1)):
            problems.append(f"{cid}: the attempts of {test} are numbered {numbers}, expected 1..{len(numbers)}")
    per_test = attempts_outcome(attempts)
    flaky = [t for t, o in per_test.items() if o == "flaky"]
    if outcome == "pass" and any(o != "pass" for o in per_test.values()):
        problems.append(f"{cid} claims pass but its recorded attempts show a failure "
                        f"({', '.join(t for t, o in per_test.items() if o != 'pass')}): flaky at best")
    if outcome == "flaky" and not flaky:
        problems.append(f"{cid} claims flaky but no recorded test failed and then passed")
    return problems


def summarize(entries: Iterable[dict[str, Any]]) -> dict[str, int]:
    counts = {o: 0 for o in OUTCOMES}
    for e in entries:
        counts[e["outcome"]] += 1
    return counts
