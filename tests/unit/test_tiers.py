"""Tier computation from per-check outcomes (pure; no Ray)."""
from __future__ import annotations

import pytest

from conformance.catalog.data import load_suite_data, parse_checklist, parse_ladder
from conformance.catalog.ladder import RunContext, compute_tiers, required_checks, tier_rank
from conformance.errors import UserError


def checklist():
    doc = {"schema_version": 1, "checks": [
        {"id": "DP-001", "title": "dev must", "area": "device", "level": "MUST", "requirement": "MUST do x.",
         "rationale": "because of y.", "since": "0.1.0"},
        {"id": "DP-002", "title": "dev should", "area": "device", "level": "SHOULD", "requirement": "SHOULD do x.",
         "rationale": "because of y.", "since": "0.1.0"},
        {"id": "TR-001", "title": "tr must", "area": "transport", "level": "MUST", "requirement": "MUST move x.",
         "rationale": "because of y.", "since": "0.1.0"},
        {"id": "FR-001", "title": "rec dev", "area": "recovery", "level": "MUST", "requirement": "MUST free x.",
         "rationale": "because of y.", "since": "0.1.0", "tags": ["device-recovery"]},
        {"id": "FR-002", "title": "rec node", "area": "recovery", "level": "MUST", "requirement": "MUST heal x.",
         "rationale": "because of y.", "since": "0.1.0"},
    ]}
    return parse_checklist(doc)


def ladder(cl):
    return parse_ladder({"schema_version": 1, "tiers": [
        {"name": "experimental", "summary": "s", "requires": [{"select": {"areas": ["device"], "levels": ["MUST"]}}]},
        {"name": "beta", "summary": "s", "allow_waived": True,
         "requires": [{"select": {"areas": ["transport"], "levels": ["MUST"]}},
                      {"select": {"areas": ["recovery"], "levels": ["MUST"], "tags": ["device-recovery"]}}],
         "conditions": [{"kind": "transport_declared"}]},
        {"name": "stable", "summary": "s", "allow_waived": True,
         "requires": [{"select": {"areas": ["recovery"], "levels": ["MUST"]}}],
         "conditions": [{"kind": "min_nodes", "value": 2}, {"kind": "should_share", "value": 0.8}]},
    ]}, checklist=cl)


def results(**outcomes):
    return [{"id": k.replace("_", "-"), "outcome": v} for k, v in outcomes.items()]


ALL_PASS = dict(DP_001="pass", DP_002="pass", TR_001="pass", FR_001="pass", FR_002="pass")


def test_all_pass_with_conditions_reaches_top():
    cl = checklist()
    tier, detail = compute_tiers(results(**ALL_PASS), cl, ladder(cl), RunContext(True, 2))
    assert tier == "stable"
    assert all(t["achieved"] for t in detail)


@pytest.mark.parametrize("outcome", ["fail", "error", "skip", "not_applicable"])
def test_non_pass_never_counts(outcome):
    cl = checklist()
    tier, detail = compute_tiers(results(**{**ALL_PASS, "DP_001": outcome}), cl, ladder(cl), RunContext(True, 2))
    assert tier is None
    assert detail[0]["blocking"] == [{"id": "DP-001", "outcome": outcome, "reason": None}]


def test_missing_check_counts_as_not_run():
    cl = checklist()
    res = [r for r in results(**ALL_PASS) if r["id"] != "TR-001"]
    tier, detail = compute_tiers(res, cl, ladder(cl), RunContext(True, 2))
    assert tier == "experimental"
    assert detail[1]["blocking"][0]["reason"] == "not run"


def test_tiers_are_cumulative():
    cl = checklist()
    tier, detail = compute_tiers(results(**{**ALL_PASS, "TR_001": "fail"}), cl, ladder(cl), RunContext(True, 2))
    assert tier == "experimental"
    assert not detail[2]["achieved"] and detail[2]["below"] == "beta" and not detail[2]["blocking"]


def test_conditions_block():
    cl = checklist()
    assert compute_tiers(results(**ALL_PASS), cl, ladder(cl), RunContext(False, 2))[0] == "experimental"
    assert compute_tiers(results(**ALL_PASS), cl, ladder(cl), RunContext(True, 1))[0] == "beta"
    tier, detail = compute_tiers(results(**{**ALL_PASS, "DP_002": "fail"}), cl, ladder(cl), RunContext(True, 2))
    assert tier == "beta"
    assert "0/1 SHOULD" in detail[2]["conditions"][1]["detail"]


def test_waived_counts_only_where_allowed():
    cl = checklist()
    lad = ladder(cl)
    assert compute_tiers(results(**{**ALL_PASS, "DP_001": "waived"}), cl, lad, RunContext(True, 2))[0] is None
    assert compute_tiers(results(**{**ALL_PASS, "FR_002": "waived"}), cl, lad, RunContext(True, 2))[0] == "stable"


def test_required_checks_select_by_tag():
    cl = checklist()
    assert required_checks(ladder(cl).tiers[1], cl) == ["TR-001", "FR-001"]


def test_tier_rank():
    cl = checklist()
    lad = ladder(cl)
    assert [tier_rank(lad, t) for t in (None, "experimental", "stable")] == [0, 1, 3]


def test_real_data_files_are_consistent():
    data = load_suite_data()
    assert data.ladder.names() == ["experimental", "beta", "stable"]
    assert required_checks(data.ladder.tiers[0], data.checklist), "experimental must require device checks"
    assert "min_link_bandwidth_fraction" in data.checklist.by_id()["PF-002"].params, "PF-002's judge reads it"
    assert all("parameters" not in t for t in data.ladder.tiers), "thresholds live in checklist params"


def test_unknown_id_in_ladder_rejected():
    cl = checklist()
    with pytest.raises(UserError, match="unknown check id XX|DP-999"):
        parse_ladder({"schema_version": 1, "tiers": [
            {"name": "x", "summary": "s", "requires": [{"select": {"ids": ["DP-999"]}}]}]}, checklist=cl)


def test_duplicate_check_id_rejected():
    doc = {"schema_version": 1, "checks": [
        {"id": "DP-001", "title": "abc", "area": "device", "level": "MUST", "requirement": "MUST do x.",
         "rationale": "because of y.", "since": "0.1.0"}] * 2}
    with pytest.raises(UserError, match="duplicate id DP-001"):
        parse_checklist(doc)


def test_a_check_no_tier_or_profile_selects_is_refused() -> None:
    from conformance.catalog.data import unselected_checks

    cl = checklist()
    doc = {"schema_version": 1, "checks": [
        {"id": c.id, "title": c.title, "area": c.area, "level": c.level, "requirement": c.requirement,
         "rationale": c.rationale, "since": c.since, "tags": list(c.tags)} for c in cl.active()]}
    doc["checks"].append({"id": "PF-001", "title": "perf must", "area": "performance", "level": "MUST",
                          "requirement": "MUST be fast.", "rationale": "because of y.", "since": "0.1.0"})
    grown = parse_checklist(doc)
    assert unselected_checks(cl, ladder(cl), []) == []      # DP-002 (SHOULD) counts in stable's share
    assert unselected_checks(grown, ladder(grown), []) == [
        "tiers: PF-001 (MUST): no tier or capability profile selects it, so it counts toward nothing; "
        "select it in tiers/tiers.yaml or tiers/capabilities.yaml"]
    profile = {"name": "perf", "requires": [{"select": {"areas": ["performance"]}}]}
    assert unselected_checks(grown, ladder(grown), [profile]) == []


def test_the_loader_refuses_an_unselected_must_in_one_line(tmp_path, monkeypatch) -> None:
    import shutil

    import yaml

    from conformance.catalog import datafiles

    root = datafiles.data_root()
    for sub in ("tiers", "schemas"):
        shutil.copytree(root / sub, tmp_path / sub)
    # the collective checks are selected by their capability profile alone: without it they count nowhere
    caps = tmp_path / "tiers" / "capabilities.yaml"
    cdoc = yaml.safe_load(caps.read_text())
    cdoc["capabilities"] = [p for p in cdoc["capabilities"]
                            if not any("collective" in r["select"].get("areas", []) for r in p["requires"])]
    caps.write_text(yaml.safe_dump(cdoc, sort_keys=False))
    monkeypatch.setenv("CONFORMANCE_DATA_DIR", str(tmp_path))
    with pytest.raises(UserError) as err:
        load_suite_data()
    assert str(err.value).startswith("tiers: CC-001 (MUST): no tier or capability profile selects it")
    assert "\n" not in str(err.value)
