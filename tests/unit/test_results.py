"""Aggregating test outcomes into check outcomes, and waivers (pure; no Ray)."""
from __future__ import annotations

import datetime as dt

import pytest
from judged import MANIFEST, PASSING

from conformance.catalog.data import Waiver, load_suite_data, parse_checklist
from conformance.report.results import TestRecord, aggregate, combine, summarize

DP1 = PASSING["DP-001"]   # evidence DP-001's judge passes (a pass needs it since DP-001 is judged)


@pytest.mark.parametrize("outs, expected", [
    (["pass", "pass"], "pass"), (["pass", "fail"], "fail"), (["error", "fail"], "fail"),
    (["pass", "error"], "error"), (["pass", "skip"], "skip"), ([], "skip"),
    (["not_applicable"], "not_applicable"), (["pass", "not_applicable"], "not_applicable"),
])
def test_combine(outs, expected):
    assert combine(outs) == expected


def test_aggregate_covers_every_check_and_marks_not_run():
    cl = load_suite_data().checklist
    entries = aggregate([TestRecord("t::a", "DP-001", "pass", duration_s=0.5, metrics=dict(DP1))], cl, manifest=MANIFEST)
    assert [e["id"] for e in entries] == [c.id for c in cl.active()]
    first = entries[0]
    assert first["outcome"] == "pass" and first["duration_s"] == 0.5
    assert all(e["outcome"] == "skip" and e["reason"] == "no test for this check ran" for e in entries[1:])
    assert summarize(entries)["pass"] == 1


def test_active_waiver_turns_failure_into_waived_never_pass():
    cl = load_suite_data().checklist
    w = Waiver(check="DP-001", issue="https://github.com/ray-project/ray/issues/1", reason="known upstream bug",
               expires="2099-01-01")
    entries = aggregate([TestRecord("t::a", "DP-001", "fail", reason="boom")], cl, [w])
    assert entries[0]["outcome"] == "waived"
    assert entries[0]["waiver"]["original_outcome"] == "fail"
    passed = aggregate([TestRecord("t::a", "DP-001", "pass", metrics=dict(DP1))], cl, [w], manifest=MANIFEST)
    assert passed[0]["outcome"] == "pass" and passed[0]["waiver"] is None


def test_expired_waiver_does_not_apply():
    cl = load_suite_data().checklist
    w = Waiver(check="DP-001", issue="https://x", reason="known upstream bug", expires="2020-01-01")
    entries = aggregate([TestRecord("t::a", "DP-001", "fail")], cl, [w], today=dt.date(2026, 1, 1))
    assert entries[0]["outcome"] == "fail"


def test_every_entry_records_its_checks_params():
    def check(cid: str, area: str, **extra: object) -> dict:
        return {"id": cid, "title": f"check {cid}", "area": area, "level": "MUST", "requirement": "MUST do x within its bound.",
                "rationale": "because of y.", "since": "0.1.0", **extra}
    cl = parse_checklist({"schema_version": 1, "area_params": {"recovery": {"ready_s": 7}}, "checks": [
        check("PF-002", "performance", params={"min_fraction": 0.25}),
        check("FR-001", "recovery", area_params=["ready_s"]), check("DP-001", "device")]})
    entries = {e["id"]: e for e in aggregate([], cl)}
    assert entries["PF-002"]["params"] == {"min_fraction": 0.25}
    assert entries["FR-001"]["params"] == {"ready_s": 7} and entries["DP-001"]["params"] == {}


def test_a_pass_its_own_evidence_contradicts_is_the_suites_error_never_a_pass():
    """What verify would refuse is never written as a pass: CC-008 as the live check records it
    (held_mib rows) passes its judge; a growth over the bound beside `pass` becomes an error that
    names the suite, not the plugin."""
    cl = load_suite_data().checklist
    params = {c.id: c.params for c in cl.checks}["CC-008"]
    cycles, warmup = int(params["leak_cycles"]), int(params["leak_warmup_cycles"])
    rows = [[100.0, 100.0]] * cycles
    honest = {"memory": {"held_mib": rows, "growth_mib": [0.0, 0.0], "payload_mib": params["leak_payload_mib"],
                         "cycles": cycles}}
    entries = {e["id"]: e for e in aggregate([TestRecord("t::cc8", "CC-008", "pass", metrics=honest)], cl)}
    assert entries["CC-008"]["outcome"] == "pass", entries["CC-008"]["reason"]
    grown = [[100.0, 100.0]] * (cycles - 1) + [[100.0 + 10 * float(params["max_growth_mib"]), 100.0]]
    lying = {"memory": {**honest["memory"], "held_mib": grown,
                        "growth_mib": [round(grown[-1][0] - grown[warmup - 1][0], 1), 0.0]}}
    entry = {e["id"]: e for e in aggregate([TestRecord("t::cc8", "CC-008", "pass", metrics=lying)], cl)}["CC-008"]
    assert entry["outcome"] == "error" and "this suite's defect, not the plugin's" in entry["reason"]
    # a pass its judge passes, or a failed check its judge does not wholly decide, is left as it is
    assert aggregate([TestRecord("t::a", "DP-001", "pass", metrics=dict(DP1))], cl, manifest=MANIFEST)[0]["outcome"] == "pass"
    failed = {e["id"]: e for e in aggregate([TestRecord("t::cc8", "CC-008", "fail", reason="leftovers",
                                                        metrics=honest)], cl)}["CC-008"]
    assert failed["outcome"] == "fail" and failed["reason"] == "leftovers"


def test_a_check_not_applicable_on_one_declared_type_says_so_in_its_reason():
    """A pass on one declared device type is never read as covering the others."""
    cl = load_suite_data().checklist
    check = cl.active()[0].id
    skipped = {"devices": ["acc"], "not_applicable_on": {"cpu": "the transport does not move cpu tensors"}}
    entry = aggregate([TestRecord("t::a", check, "pass", metrics={**PASSING[check], **skipped})], cl, manifest=MANIFEST)[0]
    assert entry["outcome"] == "pass"
    assert entry["reason"] == "passed on acc; not applicable on cpu: the transport does not move cpu tensors"
    failed = aggregate([TestRecord("t::a", check, "fail", reason="on acc: wrong bytes", metrics=dict(skipped))], cl)[0]
    assert failed["reason"] == "on acc: wrong bytes (not applicable on cpu: the transport does not move cpu tensors)"
    plain = aggregate([TestRecord("t::a", check, "pass", metrics={**PASSING[check], "devices": ["acc"]})], cl,
                      manifest=MANIFEST)[0]
    assert plain["reason"] is None
