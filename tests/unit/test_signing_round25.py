"""Held-out round 25 (redteam/FINDINGS.md, release 0.1.0+data.20): each rule verify gained, held on
figures copied from a real data.20 report (reports/example, a 2-node simulated certification)."""
from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

# reports/example's selection (0.1.0+data.20), as the run recorded it
SELECTION: dict[str, Any] = {
    "args": ["-p", "no:cacheprovider", "-p", "no:logging", "-q", "-rfE", "-c", "/dev/null", "-p", "no:anyio",
             "-p", "no:hypothesispytest", "-p", "no:platformdirs",
             "--conformance-manifest=conformance/simulated/manifest-2node.yaml", "--conformance-out=run",
             "--rootdir=$SUITE/checks", "$SUITE/checks"],
    "collect_only": False, "deselected": [], "nodes": {"mode": "sample", "seed": 2947839634, "size": 1},
    "not_run": [], "whole_checklist_collected": True}


def test_merged_report_listing_no_shard_is_a_problem_not_a_crash(tmp_path: Path) -> None:
    """N25_08: `selection.shards: []` on a single run (a 'merged report' skips the nodes line) made
    verify's shards line raise (max() of no shard's window); a merge of nothing is refused."""
    from conformance.signing.shards import shard_lines

    report = {"selection": dict(copy.deepcopy(SELECTION), shards=[])}
    lines = shard_lines(tmp_path, report, verify_one=lambda folder: None, published="2026-12-05")
    assert [(name, ok) for name, ok, _ in lines] == [("shards", False)]
    assert "lists no shard" in lines[0][2]


def _per_node_report() -> dict[str, Any]:
    """reports/example's DP-008 (sampled: f44877bb of 9cf62ca8/f44877bb) and DP-006 (every node)."""
    return {"selection": copy.deepcopy(SELECTION), "checks": [
        {"id": "DP-006", "outcome": "pass", "metrics": {
            "node_coverage": {"alive": 2, "mode": "sample", "nodes": ["9cf62ca8", "f44877bb"]}}},
        {"id": "DP-008", "outcome": "pass", "metrics": {
            "node_coverage": {"alive": 2, "mode": "sample", "nodes": ["f44877bb"]},
            "per_node": {"f44877bb": {"tasks_run": 3}}, "tasks_run": 3}}]}


def test_the_real_runs_node_record_agrees_with_its_evidence() -> None:
    from conformance.signing.node_mode import recorded_mode_problems

    assert recorded_mode_problems(_per_node_report()) == []
    legacy = _per_node_report()
    for c in legacy["checks"]:
        del c["metrics"]["node_coverage"]
    del legacy["selection"]["nodes"]
    assert recorded_mode_problems(legacy) == []   # a release before run --nodes: nothing recorded anywhere


def test_a_node_record_dropped_or_without_its_seed_is_refused_by_the_checks_own_mode() -> None:
    """N25_01/N25_02: the sampled node's evidence relabelled onto the node the vendor liked, and
    selection.nodes (or its seed) dropped so the choice was not recomputed."""
    from conformance.signing.node_mode import recorded_mode_problems

    dropped = _per_node_report()
    del dropped["selection"]["nodes"]
    assert "records no mode" in recorded_mode_problems(dropped)[0]
    seedless = _per_node_report()
    del seedless["selection"]["nodes"]["seed"]
    assert "without its seed" in recorded_mode_problems(seedless)[0]
    other = _per_node_report()
    other["selection"]["nodes"] = {"mode": "all"}
    assert "DP-006, DP-008" in recorded_mode_problems(other)[0]


def _example_like_report() -> dict[str, Any]:
    """A report of this verifier's own release (the page renders any report the schema admits; the
    figures are reports/example's)."""
    from conformance.catalog import releases

    return {"suite": {"name": "ray-accelerator-conformance", "version": releases.current_version()},
            "manifest": {"vendor": "Ray Accelerator SIG (simulated)", "product": "SimAcc X1 two-node"},
            "tier": "stable", "started_at": "2026-12-05T17:26:58+00:00", "finished_at": "2026-12-05T17:40:12+00:00",
            "duration_s": 794.2, "selection": copy.deepcopy(SELECTION),
            "summary": {"error": 0, "fail": 0, "flaky": 0, "not_applicable": 2, "pass": 97, "skip": 0, "waived": 1},
            "checks": [{"id": "DP-001", "area": "device", "level": "MUST", "outcome": "pass", "duration_s": 0.426,
                        "title": "Manager methods return the documented types", "params": {}, "reason": None,
                        "tests": ["device/test_device_contract.py::test_methods_return_documented_types"],
                        "waiver": None, "metrics": {},
                        "host_load": {"busy_pct": 97.6, "cpus": 2, "load1": 1.89, "steal_pct": 0.0}}]}


def test_report_html_must_be_the_page_of_report_json(tmp_path: Path) -> None:
    """N25_19/N25_20: report.html is no signed subject; a page edited after signing (or another
    run's) verified beside an honest report.json."""
    from conformance.report.html import render_report_html
    from conformance.report.view import Report
    from conformance.signing.page import page_lines
    from signing_support import build_report

    base = build_report()   # the fields the schema requires that the example-like report leaves out
    doc = {**base, **_example_like_report()}
    doc["suite"] = {**base["suite"], **doc["suite"]}
    report = Report.from_json(doc)
    assert page_lines(tmp_path, report, True)[0][1]   # no page: nothing shown
    (tmp_path / "report.html").write_text(render_report_html(dict(doc)), encoding="utf-8")
    assert page_lines(tmp_path, report, True)[0][:2] == ("page", True)
    (tmp_path / "report.html").write_text("<html><body><h1>SimAcc X1: stable, 100/100 pass</h1></body></html>")
    name, ok, detail = page_lines(tmp_path, report, True)[0]
    assert (name, ok) == ("page", False) and "not this verifier's page" in detail
    older = Report.from_json(dict(doc, suite={**doc["suite"], "version": "0.1.0+data.16"}))
    assert not page_lines(tmp_path, older, False)[0][1]   # an older release's page states what report.json does not
    (tmp_path / "report.html").unlink()
    (tmp_path / "report.html").symlink_to("/etc/hostname")
    assert not page_lines(tmp_path, report, True)[0][1]


def test_provisional_flag_is_the_releases() -> None:
    """N25_28/N25_29: FR-019 (provisional in data.20) recorded without the flag; a failing DP-006
    flagged provisional. The example run's entries carry exactly the release's flags."""
    from conformance.catalog import data
    from conformance.signing.soak_flag import provisional_problems

    checklist = data.load_suite_data().checklist
    assert checklist.by_id()["FR-019"].provisional and not checklist.by_id()["DP-006"].provisional
    fr019 = {"id": "FR-019", "area": "recovery", "level": "SHOULD", "outcome": "pass", "provisional": True}
    dp006 = {"id": "DP-006", "area": "device", "level": "MUST", "outcome": "pass"}
    assert provisional_problems([fr019, dp006], checklist) == []
    dropped = dict(fr019)
    del dropped["provisional"]
    assert "FR-019 (provisional in the release)" in provisional_problems([dropped, dp006], checklist)[0]
    claimed = dict(dp006, outcome="fail", provisional=True)
    assert "DP-006 (counted in the release)" in provisional_problems([fr019, claimed], checklist)[0]


# reports/example's DP-008 wait on Ray, FR-001's plugin wait and TL-013's wait on a group Ray may place
DP008_WAIT = {"bound_s": 60.0, "factor": 1.0, "granted_s": 60.0, "owner": "ray", "took_s": 0.719, "verdict": "met",
              "what": "results of 3 task(s) requesting 1 SIMACC on each of 1 node(s)"}
FR001_WAIT = {"bound_s": 150.0, "factor": 1.0, "granted_s": 150.0, "owner": "plugin", "took_s": 1.53, "verdict": "met",
              "what": "kill-holder-then-reuse"}
TL013_WAIT = {"bound_s": 20.0, "factor": 1.0, "granted_s": 20.0, "owner": "ray", "param": "group_timeout_s",
              "verdict": "met", "what": "a group Ray may place"}


def test_the_real_runs_waits_hold() -> None:
    from conformance.signing.passed_waits import passed_wait_problems

    for wait in (DP008_WAIT, FR001_WAIT, TL013_WAIT):
        assert passed_wait_problems({"count": 1, "each": [wait]}) == []
    assert passed_wait_problems(None) == []


def test_a_pass_whose_waits_ran_over_lost_their_time_or_were_dropped_is_refused() -> None:
    """N25_10 (a wait on Ray that took 10x its grant, verdict met), N25_12 (a plugin wait's took_s
    null), N25_11 (FR-001's only plugin wait dropped, count kept)."""
    from conformance.signing.passed_waits import passed_wait_problems

    over = dict(DP008_WAIT, took_s=600.0)
    assert "took 600 s of the 60 s" in passed_wait_problems({"count": 1, "each": [over]})[0]
    host = dict(DP008_WAIT, verdict="host")
    assert "nothing came within its grant" in passed_wait_problems({"count": 1, "each": [host]})[0]
    assert passed_wait_problems({"count": 1, "each": [dict(DP008_WAIT, verdict="error")]}) == []
    untimed = dict(FR001_WAIT, took_s=None)
    assert "records no took_s" in passed_wait_problems({"count": 1, "each": [untimed]})[0]
    assert "was dropped" in passed_wait_problems({"count": 1, "each": []})[0]
    wave = {"count": 100, "each": [DP008_WAIT] * 40}   # a wave keeps its first 40 in full
    assert passed_wait_problems(wave) == []


def _ray_wait(factor: float) -> dict[str, Any]:
    return dict(DP008_WAIT, factor=factor, granted_s=round(60.0 * factor, 3))


def test_a_machinery_factor_no_wait_used_is_refused() -> None:
    """N25_14: an idle run (every wait on Ray at x1, as reports/example's 116) claims a worker start
    of 4x its nominal 3 s (factor 4 recomputes from slowest_s) to stretch TR-019's wave x3.5. The
    loaded run of data.18 (tmp dn-runs/run3: slowest 4.58 s, factor 1.53) recorded waits at x1.527."""
    from conformance.signing.machinery_evidence import unmeasured_factor_problems

    idle = [{"id": "DP-008", "outcome": "pass", "metrics": {"waits": {"count": 1, "each": [_ray_wait(1.0)]}}}]
    assert unmeasured_factor_problems(idle, 1.0) == []
    assert "largest its recorded waits" in unmeasured_factor_problems(idle, 4.0)[0]
    loaded = [{"id": "DP-008", "outcome": "pass", "metrics": {"waits": {"count": 1, "each": [_ray_wait(1.527)]}}}]
    assert unmeasured_factor_problems(loaded, 1.53) == []
    host = idle + [{"id": "CC-009", "outcome": "error", "metrics": {},
                    "reason": "not judged: host: the members to start: Ray's machinery did not do it within 90s"}]
    assert unmeasured_factor_problems(host, 2.0) == []   # its wait may not record the factor it grew to
    assert unmeasured_factor_problems([{"id": "DP-001", "outcome": "pass", "metrics": {}}], 4.0) == []   # no waits
    # held-out DF1's second form: the factor written into one wait, its grant left at x1: not used
    forged = [{"id": "DP-008", "outcome": "pass",
               "metrics": {"waits": {"count": 1, "each": [dict(_ray_wait(1.0), factor=3.0)]}}}]
    assert "largest its recorded waits" in unmeasured_factor_problems(forged, 3.0)[0]


def test_a_product_in_full_width_letters_is_refused() -> None:
    """N25_31: reports/example's product 'SimAcc X1 two-node' with a full-width X verified."""
    from conformance.signing.compat_forms import compat_name_problems
    from conformance.signing.submission import name_problem

    real = {"manifest": {"vendor": "Ray Accelerator SIG (simulated)", "product": "SimAcc X1 two-node"}}
    assert compat_name_problems(real) == [] and name_problem(real) is None
    assert compat_name_problems({"manifest": {"vendor": "Acme\u2122", "product": "X1"}}) == []   # a symbol NFKC spells out
    forged = {"manifest": {"vendor": "Ray Accelerator SIG (simulated)", "product": "SimAcc \uff381 two-node"}}
    problem = name_problem(forged)
    assert problem is not None and "FULLWIDTH LATIN CAPITAL LETTER X" in problem and "'SimAcc X1 two-node'" in problem
