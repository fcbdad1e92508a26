"""Findings (level INFO, tiers/vocabulary.yaml `uncounted_levels`): never counted toward a tier,
a SHOULD share or a capability profile, whatever their outcome; shown on every page with the
same words (conformance.report.findings); and the library findings' sentences
(conformance.areas.workload.libraries) say what Ray did, never judging the vendor."""
from __future__ import annotations

from typing import Any

import pytest

from conformance.areas.workload import libraries
from conformance.catalog.capabilities import compute_capabilities
from conformance.catalog.data import load_profiles, load_suite_data, parse_ladder, select_checks, unselected_checks
from conformance.catalog.ladder import RunContext, compute_tiers
from conformance.errors import UserError
from conformance.report import findings

MANIFEST = {"transport": {"name": "SIMXFER"}, "topology": {}, "collective": {"backend": "x"}}


def _results(data: Any, info_outcome: str | None) -> list[dict[str, Any]]:
    out = [{"id": c.id, "outcome": "pass"} for c in data.checklist.counted()]
    if info_outcome is not None:
        out += [{"id": c.id, "outcome": info_outcome} for c in data.checklist.findings()]
    return out


def test_the_suite_has_findings_and_they_are_uncounted() -> None:
    data = load_suite_data()
    ids = {c.id for c in data.checklist.findings()}
    assert {"WL-010", "WL-011", "WL-012", "WL-013"} <= ids
    assert not ids & {c.id for c in data.checklist.counted()}
    assert all(data.checklist.by_id()[i].level == "INFO" for i in ids)


@pytest.mark.parametrize("outcome", ["pass", "fail", "error", "not_applicable", None])
def test_a_findings_outcome_changes_no_tier_and_no_profile(outcome: str | None) -> None:
    data = load_suite_data()
    profiles = load_profiles()
    base_tier, base_detail = compute_tiers(_results(data, "pass"), data.checklist, data.ladder, RunContext(True, 2))
    tier, detail = compute_tiers(_results(data, outcome), data.checklist, data.ladder, RunContext(True, 2))
    assert (tier, detail) == (base_tier, base_detail)
    assert compute_capabilities(_results(data, outcome), data.checklist, profiles, MANIFEST) == \
        compute_capabilities(_results(data, "pass"), data.checklist, profiles, MANIFEST)
    named = {b["id"] for t in detail for b in t.get("blocking", [])}
    assert not named & {c.id for c in data.checklist.findings()}


def test_no_selector_picks_a_finding_even_by_id_or_area() -> None:
    checklist = load_suite_data().checklist
    assert select_checks(checklist, {"ids": ["WL-010", "WL-001"]}) == [checklist.by_id()["WL-001"]]
    assert "WL-011" not in {c.id for c in select_checks(checklist, {"areas": ["workload"]})}
    assert "WL-011" in {c.id for c in select_checks(checklist, {"areas": ["workload"]}, findings=True)}


def test_a_tier_selecting_the_uncounted_level_is_refused_in_one_line() -> None:
    data = load_suite_data()
    doc = {"schema_version": 1, "tiers": [{"name": "x", "summary": "a tier", "allow_waived": False,
                                           "requires": [{"select": {"areas": ["workload"], "levels": ["INFO"]}}]}]}
    with pytest.raises(UserError, match=r"levels: INFO is an uncounted level"):
        parse_ladder(doc, checklist=data.checklist)


def test_findings_are_never_reported_as_counting_toward_nothing() -> None:
    data = load_suite_data()
    assert unselected_checks(data.checklist, data.ladder, load_profiles()) == []


# ------------------------------------------------------------------------------ the pages
def _report(extra: str = "") -> dict[str, Any]:
    return {"checks": [
        {"id": "WL-001", "level": "MUST", "outcome": "pass", "title": "sync", "metrics": {"findings": ["not me"]}},
        {"id": "WL-010", "level": "INFO", "outcome": "pass", "title": "Finding: Train",
         "metrics": {"findings": ["Train: get_device() returned cpu" + extra], "upstream": ["air/x.py:20 closed"]}},
        {"id": "WL-012", "level": "INFO", "outcome": "not_applicable", "title": "Finding: Serve",
         "reason": "ray.serve does not import", "metrics": {}}]}


def test_report_md_terminal_and_html_say_plainly_that_findings_are_never_counted() -> None:
    md = "\n".join(findings.findings_markdown(_report()))
    assert md.startswith("## Findings for the SIG") and "never counted" in md and "no plug-in point" in md
    assert "returned cpu" in md and "Ray's side: air/x.py:20 closed" in md and "not me" not in md
    assert "nothing recorded: ray.serve does not import" in md
    term = findings.findings_terminal(_report())
    assert "never counted" in term[0] and any("WL-010: Train" in x for x in term)
    block = findings.html_block(_report())
    assert block["notes"] == [findings.NOTE] and block["tables"][0]["rows"][0][:2] == ["WL-010", "pass"]
    assert findings.findings_markdown({"checks": []}) == [] and findings.html_block({"checks": []}) == {}


def test_a_finding_from_outside_is_sanitised_on_every_page() -> None:
    hostile = "\x1b[31m| **x** <script>\nsecond line"
    md = "\n".join(findings.findings_markdown(_report(hostile)))
    assert "\x1b" not in md and "<script>" not in md and "\nsecond line" not in md
    assert all("\x1b" not in line and "\n" not in line for line in findings.findings_terminal(_report(hostile)))


# ------------------------------------------------------------------------------ the sentences
VIEW = {"node_id": "n1", "accelerator_ids": {"SIMACC": ["0"]}, "visible": "0"}


def test_train_findings_name_the_closed_table_and_the_device_the_workers_got() -> None:
    obs = {"workers": [{**VIEW, "torch_device": "cpu", "device_manager": "CPUTorchDeviceManager"}] * 2,
           "static": {"torch_device_table": ["GPU", "HPU", "NPU", "TPU"]}, "error": None}
    lines = libraries.train_findings(obs, "SIMACC", "SIMACC_VISIBLE_DEVICES", ["n1"], "simacc")
    text = "\n".join(lines)
    assert "2 of 2 worker(s) ran on a node offering SIMACC" in text
    assert "returned cpu" in text and "SIMACC is not in it" in text
    assert "did not get it" in text
    got = {**obs, "workers": [{**VIEW, "torch_device": "simacc:0", "device_manager": "X"}]}
    assert "Train's workers got it" in "\n".join(libraries.train_findings(got, "SIMACC", "V", ["n1"], "simacc"))


def test_placement_findings_count_what_each_worker_was_given() -> None:
    views = [VIEW, {"node_id": "n2", "accelerator_ids": {}, "visible": None}]
    lines = libraries.placement_findings("Serve", "SIMACC", views, ["n1"], "SIMACC_VISIBLE_DEVICES")
    assert lines[0].endswith("1 of 2 worker(s) ran on a node offering SIMACC")
    assert "1 of 2 worker(s) were assigned SIMACC ids" in lines[1] and "0; none" in lines[1]
    assert libraries.placement_findings("Data", "SIMACC", [], ["n1"], "V") == ["Data: no worker reported back"]


def test_metrics_findings_say_no_provider_is_the_vendors() -> None:
    obs = {"workers": [{"providers": ["NvidiaGpuProvider", "AmdGpuProvider"], "picked": None, "devices_reported": 0}]}
    text = "\n".join(libraries.metrics_findings(obs, "SIMACC"))
    assert "NvidiaGpuProvider, AmdGpuProvider" in text and "picked none" in text and "no provider is the vendor's" in text


def test_every_finding_check_names_where_ray_decides_it() -> None:
    assert set(libraries.UPSTREAM) == {c.id for c in load_suite_data().checklist.findings()}
