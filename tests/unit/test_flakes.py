"""Issue 48 item 3, the pure parts: a test's attempts give its outcome (a pass after a failure is
`flaky`), a check's entry records every attempt, verify's recomputation refuses what the attempts
contradict, and a flaky or provisional check counts toward no tier or profile unless the release
says so (no Ray)."""
from __future__ import annotations

import pytest

from conformance.catalog.capabilities import compute_capabilities
from conformance.catalog.data import parse_checklist, parse_ladder
from conformance.catalog.ladder import RunContext, compute_tiers
from conformance.errors import UserError
from conformance.report.results import (
    TestRecord,
    aggregate,
    attempt_problems,
    combine,
    outcome_over_attempts,
    should_retry,
    summarize,
)


def check(cid: str, area: str, level: str = "MUST", **extra: object) -> dict:
    return {"id": cid, "title": f"check {cid}", "area": area, "level": level, "requirement": "MUST do x within it.",
            "rationale": "because of y.", "since": "0.1.0", **extra}


def checklist(**provisional: bool):
    return parse_checklist({"schema_version": 1, "checks": [
        check("DP-001", "device", provisional=provisional.get("DP_001", False)),
        check("DP-002", "device", "SHOULD", provisional=provisional.get("DP_002", False)),
        check("DP-003", "device", "SHOULD", provisional=provisional.get("DP_003", False))]})


def ladder(cl, allow_flaky: bool = False, retries: int | None = 1):
    doc = {"schema_version": 1, "tiers": [
        {"name": "experimental", "summary": "s", "allow_flaky": allow_flaky,
         "requires": [{"select": {"areas": ["device"], "levels": ["MUST"]}}],
         "conditions": [{"kind": "should_share", "value": 1.0}]}]}
    if retries is not None:
        doc["flakes"] = {"retries": retries}
    return parse_ladder(doc, checklist=cl)


def record(outcome: str, *earlier: str, nodeid: str = "device/test_x.py::test_a", cid: str = "DP-001") -> TestRecord:
    rec = TestRecord(nodeid, cid, outcome, reason=None if outcome == "pass" else f"{outcome} now", duration_s=0.5)
    rec.earlier = [{"outcome": o, "reason": f"{o} then", "duration_s": 0.25} for o in earlier]
    return rec


@pytest.mark.parametrize("attempts, expected", [
    (["pass"], "pass"), (["fail"], "fail"), (["fail", "pass"], "flaky"), (["error", "pass"], "flaky"),
    (["fail", "fail"], "fail"), (["fail", "fail", "pass"], "flaky"), (["skip"], "skip"),
    (["fail", "not_applicable"], "not_applicable"), ([], "skip"),
])
def test_a_tests_outcome_over_its_attempts(attempts, expected):
    assert outcome_over_attempts([{"outcome": o, "reason": None} for o in attempts]) == expected


def test_a_pass_after_the_hosts_error_is_a_pass():
    host = {"outcome": "error", "reason": "not judged: host: Ray's node did not register"}
    assert outcome_over_attempts([host, {"outcome": "pass", "reason": None}]) == "pass"
    assert outcome_over_attempts([host, {"outcome": "fail", "reason": "x"}, {"outcome": "pass"}]) == "flaky"


def test_only_a_failure_with_attempts_left_runs_again():
    assert should_retry(record("fail"), 1) and should_retry(record("error"), 1)
    assert not should_retry(record("fail", "fail"), 1) and should_retry(record("fail", "fail"), 2)
    assert not should_retry(record("pass"), 1) and not should_retry(record("skip"), 1)
    assert not should_retry(record("not_applicable"), 1) and not should_retry(record("fail"), 0)


@pytest.mark.parametrize("outs, expected", [
    (["flaky", "pass"], "flaky"), (["flaky", "fail"], "fail"), (["flaky", "error"], "error"),
    (["flaky", "skip"], "flaky"),
])
def test_a_flaky_test_makes_its_check_flaky_unless_another_failed(outs, expected):
    assert combine(outs) == expected


def test_the_entry_records_every_attempt_and_names_the_flake():
    entries = {e["id"]: e for e in aggregate([record("pass", "fail"), record("pass", nodeid="device/test_x.py::test_b"),
                                              record("pass", cid="DP-002", nodeid="device/test_y.py::test_c")],
                                             checklist())}
    flaky = entries["DP-001"]
    assert flaky["outcome"] == "flaky" and flaky["duration_s"] == 1.25   # every attempt's time
    assert [(a["test"].rsplit("::")[-1], a["attempt"], a["outcome"]) for a in flaky["attempts"]] == [
        ("test_a", 1, "fail"), ("test_a", 2, "pass"), ("test_b", 1, "pass")]
    assert "test_a: fail on attempt 1 (fail then), pass on attempt 2" in flaky["reason"]
    assert "attempts" not in entries["DP-002"] and entries["DP-002"]["outcome"] == "pass"   # ran once: as before
    assert summarize(entries.values())["flaky"] == 1 and not attempt_problems(flaky)


def test_a_flaky_check_is_never_waived_and_a_failure_after_retries_is():
    from conformance.catalog.data import Waiver

    w = Waiver(check="DP-001", issue="https://x/1", reason="known upstream bug", expires="2099-01-01")
    assert aggregate([record("pass", "fail")], checklist(), [w])[0]["outcome"] == "flaky"
    waived = aggregate([record("fail", "fail")], checklist(), [w])[0]
    assert waived["outcome"] == "waived" and len(waived["attempts"]) == 2


def test_verify_refuses_what_the_attempts_contradict():
    entry = aggregate([record("pass", "fail")], checklist())[0]
    assert attempt_problems({**entry, "outcome": "pass"}) == [
        "DP-001 claims pass but its recorded attempts show a failure (device/test_x.py::test_a): flaky at best"]
    quiet = [{**a, "outcome": "pass"} for a in entry["attempts"]]
    assert attempt_problems({**entry, "attempts": quiet}) == [
        "DP-001 claims flaky but no recorded test failed and then passed"]
    assert attempt_problems({"id": "DP-001", "outcome": "flaky"}) == ["DP-001 is flaky but records no attempts"]
    shuffled = list(reversed(entry["attempts"]))
    assert "numbered [2, 1], expected 1..2" in attempt_problems({**entry, "attempts": shuffled})[0]
    assert attempt_problems({"id": "DP-001", "outcome": "pass"}) == []   # ran once: nothing to recompute


def test_flaky_counts_as_failed_for_a_tier_unless_the_release_allows_it():
    cl = checklist()
    outcomes = [{"id": "DP-001", "outcome": "flaky"}, {"id": "DP-002", "outcome": "pass"},
                {"id": "DP-003", "outcome": "pass"}]
    tier, detail = compute_tiers(outcomes, cl, ladder(cl), RunContext(True, 2))
    assert tier is None and detail[0]["blocking"][0]["outcome"] == "flaky"
    assert compute_tiers(outcomes, cl, ladder(cl, allow_flaky=True), RunContext(True, 2))[0] == "experimental"
    share = [{**o, "outcome": "flaky"} if o["id"] == "DP-003" else {**o, "outcome": "pass"} for o in outcomes]
    assert compute_tiers(share, cl, ladder(cl), RunContext(True, 2))[0] is None   # the SHOULD share too
    assert compute_tiers(share, cl, ladder(cl, allow_flaky=True), RunContext(True, 2))[0] == "experimental"


def test_flaky_counts_as_failed_for_a_profile_unless_the_profile_allows_it():
    cl = checklist()
    results = [{"id": "DP-001", "outcome": "flaky"}]
    profile = {"name": "device", "summary": "s", "requires": [{"select": {"areas": ["device"], "levels": ["MUST"]}}]}
    assert compute_capabilities(results, cl, [profile], {})[0]["state"] == "not certified"
    assert compute_capabilities(results, cl, [{**profile, "allow_flaky": True}], {})[0]["state"] == "certified"


def test_the_release_sets_the_retries():
    cl = checklist()
    assert ladder(cl).retries == 1 and ladder(cl, retries=None).retries == 0   # a release without flakes: none
    with pytest.raises(UserError, match="flakes.retries"):
        ladder(cl, retries=-1)


def test_a_provisional_check_counts_toward_nothing():
    cl = checklist(DP_002=True)
    assert [c.id for c in cl.provisional()] == ["DP-002"] and "DP-002" not in {c.id for c in cl.counted()}
    outcomes = [{"id": "DP-001", "outcome": "pass"}, {"id": "DP-002", "outcome": "fail"},
                {"id": "DP-003", "outcome": "pass"}]
    tier, detail = compute_tiers(outcomes, cl, ladder(cl), RunContext(True, 2))
    assert tier == "experimental" and "1/1 SHOULD" in detail[0]["conditions"][0]["detail"]
    entry = {e["id"]: e for e in aggregate([], cl)}
    assert entry["DP-002"]["provisional"] is True and "provisional" not in entry["DP-003"]


# ------------------------------------------------------------------------------ provisional checks and their soak
def soak(runs: dict, needed: int = 3):
    from conformance.catalog.data import parse_soak

    return parse_soak({"schema_version": 1, "soak_runs": needed, "checks": {
        cid: [{"date": "2026-12-0" + str(i + 1), "commit": "abc1234", "outcome": o} for i, o in enumerate(outs)]
        for cid, outs in runs.items()}})


def test_the_green_streak_counts_the_last_runs_in_a_row():
    s = soak({"DP-002": ["pass", "fail", "pass", "pass"], "DP-003": ["pass", "flaky"]})
    assert s.green_streak("DP-002") == 2 and s.green_streak("DP-003") == 0 and s.green_streak("DP-001") == 0
    assert not s.soaked("DP-002") and soak({"DP-002": ["fail", "pass", "pass", "pass"]}).soaked("DP-002")


def test_a_promotion_needs_its_soak_and_a_provisional_check_its_record():
    from conformance.catalog.soak import soak_problems

    assert soak_problems(checklist(DP_002=True), soak({"DP-002": ["pass"]})) == []   # still soaking: fine
    assert soak_problems(checklist(DP_002=True), soak({})) == [
        "soak: checks.DP-002: the provisional check has no soak record; expected a list (empty until its first CI run)"]
    early = soak_problems(checklist(), soak({"DP-002": ["pass", "fail", "pass"]}))
    assert early == ["checklist: DP-002.provisional: promoted after 1 green run(s) in a row; the soak needs 3 "
                     "(tiers/soak.yaml soak_runs): keep it provisional"]
    assert soak_problems(checklist(), soak({"DP-002": ["fail", "pass", "pass", "pass"]})) == []   # promoted, soaked
    assert soak_problems(checklist(), soak({"TR-001": []})) == [
        "soak: checks.TR-001: unknown check id (tiers/checklist.yaml has none)"]


def test_a_new_check_enters_provisional():
    from conformance.catalog.soak import entry_problems

    assert entry_problems(checklist(DP_003=True), ["DP-001", "DP-002"]) == []
    assert entry_problems(checklist(), ["DP-001", "DP-002"]) == [
        "checklist: DP-003: a new check enters provisional (provisional: true, and a soak record in tiers/soak.yaml); "
        "it counts once a release promotes it after its soak"]


def test_the_shipped_data_keeps_the_rule():
    """Every check added since the newest release entered provisional, and the soak record agrees
    with the checklist (the loader's rule, on the shipped files)."""
    from conformance.catalog import releases
    from conformance.catalog.data import load_soak, load_suite_data
    from conformance.catalog.soak import entry_problems, soak_problems

    current = load_suite_data().checklist
    known = releases.load_releases()
    newest = known[list(known)[-1]]
    released, _ = releases.load_release_data(newest, releases.default_path())
    assert entry_problems(current, [c.id for c in released.checks]) == []
    assert soak_problems(current, load_soak()) == []


def test_the_next_step_for_a_flaky_check_is_its_intermittent_failure():
    from conformance.report.next_steps import action_for

    action = action_for({"outcome": "flaky", "reason": "test_a: fail on attempt 1 (boom), pass on attempt 2"}, None)
    assert action.startswith("find and fix the intermittent failure") and "boom" in action


def test_a_check_that_failed_every_attempt_keeps_its_first_reason():
    rec = record("fail", "fail")
    rec.reason = "fail then"
    same = aggregate([rec], checklist())[0]
    assert same["outcome"] == "fail" and same["reason"] == "fail then (the same on 1 re-run(s))"
    rec.reason = "left behind"
    assert aggregate([rec], checklist())[0]["reason"] == "fail then (re-run 1: fail: left behind)"
