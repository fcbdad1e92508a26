"""`diff`: regressions between two reports, the metric direction rule, formats and exit codes."""
from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from conformance.cli.signing import main
from conformance.errors import UserError
from conformance.signing.diff import diff_reports, direction, metric_leaves
from signing_support import build_report, check_ids, retier, suite, write_report_dir


def _kinds(old: dict[str, Any], new: dict[str, Any], tolerance: float = 0.1) -> list[tuple[str, bool, Any]]:
    return [(f.kind, f.regression, f.check) for f in diff_reports(old, new, suite().ladder, tolerance)]


@pytest.mark.parametrize("key, expected", [
    ("busbw_gbps", "higher"), ("link_bandwidth", "higher"), ("bandwidth_gbps", "higher"),
    ("tasks_per_s", "higher"), ("p50_latency_s", "lower"), ("rtt_latency_us", "lower"),
    ("recovery_s", "lower"), ("bytes", None), ("count", None), ("bandwidth", None),
])
def test_metric_direction_rule(key: str, expected: str | None) -> None:
    assert direction(key) == expected


def test_metric_leaves_walk_nested_objects_and_lists() -> None:
    leaves = list(metric_leaves({"sizes": [{"bytes": 1, "busbw_gbps": 2.0}], "ok": True, "p50_latency_s": 3}))
    assert leaves == [("sizes[0].bytes", "bytes", 1.0), ("sizes[0].busbw_gbps", "busbw_gbps", 2.0),
                      ("p50_latency_s", "p50_latency_s", 3.0)]


def test_identical_reports_have_no_findings() -> None:
    r = build_report()
    assert _kinds(r, r) == []


def test_pass_to_non_pass_is_a_regression_other_changes_are_not() -> None:
    ids = check_ids()
    old = build_report({ids[1]: "fail"})
    new = build_report({ids[0]: "skip", ids[1]: "pass"})
    found = _kinds(old, new)
    assert ("outcome", True, ids[0]) in found
    assert ("outcome", False, ids[1]) in found  # fail -> pass is reported, not a regression
    for outcome in ("fail", "error", "not_applicable"):
        assert ("outcome", True, ids[0]) in _kinds(build_report(), build_report({ids[0]: outcome}))


def test_tier_drop_is_a_regression_and_a_rise_is_not() -> None:
    high = build_report()
    low = build_report(nodes=1)
    names = suite().ladder.names()
    assert high["tier"] != low["tier"]
    assert ("tier", True, None) in _kinds(high, low)
    assert ("tier", False, None) in _kinds(low, high)
    assert names.index(high["tier"]) > names.index(low["tier"])


def test_removed_checks_regress_added_do_not() -> None:
    full = build_report()
    short = build_report()
    gone = short["checks"].pop()["id"]
    retier(short)
    assert ("removed", True, gone) in _kinds(full, short)
    assert [k for k in _kinds(short, full) if k[0] == "added"] == [("added", False, gone)]


def test_performance_tolerance_in_both_directions() -> None:
    cid = check_ids()[0]
    old = build_report(metrics={cid: {"sizes": [{"busbw_gbps": 100.0}], "p50_latency_s": 1.0, "bytes": 10}})
    within = build_report(metrics={cid: {"sizes": [{"busbw_gbps": 91.0}], "p50_latency_s": 1.09, "bytes": 1}})
    assert _kinds(old, within) == []
    worse = build_report(metrics={cid: {"sizes": [{"busbw_gbps": 89.0}], "p50_latency_s": 1.2, "bytes": 1}})
    findings = diff_reports(old, worse, suite().ladder, 0.1)
    assert sorted((f.kind, f.regression, f.detail.split(" ")[0]) for f in findings) == [
        ("metric", True, "metrics.p50_latency_s"), ("metric", True, "metrics.sizes[0].busbw_gbps")]
    assert _kinds(old, worse, tolerance=0.25) == []
    better = build_report(metrics={cid: {"sizes": [{"busbw_gbps": 200.0}], "p50_latency_s": 0.1}})
    assert _kinds(old, better) == []


def test_negative_tolerance_is_refused() -> None:
    with pytest.raises(UserError, match="--tolerance"):
        diff_reports(build_report(), build_report(), suite().ladder, -0.1)


def test_cli_exit_codes_and_formats(tmp_path: Path, capsys) -> None:
    ids = check_ids()
    old = write_report_dir(tmp_path / "old", build_report())
    new = write_report_dir(tmp_path / "new", build_report({ids[0]: "fail"}))
    assert main(["diff", str(old), str(old / "report.json")]) == 0
    assert "no regressions" in capsys.readouterr().out
    assert main(["diff", str(old), str(new), "--format", "json"]) == 1
    doc = json.loads(capsys.readouterr().out)
    assert doc["regression"] is True and doc["tolerance"] == 0.1
    assert {"kind": "outcome", "regression": True, "check": ids[0], "old": "pass", "new": "fail",
            "detail": "fail in test"} in doc["findings"]
    assert main(["diff", str(old), str(new), "--format", "md"]) == 1
    md = capsys.readouterr().out
    assert "| REGRESSION" in md and md.rstrip().endswith("**REGRESSION: 2 regression(s)**")


def test_cli_unreadable_input_is_exit_2(tmp_path: Path, capsys) -> None:
    old = write_report_dir(tmp_path / "old", build_report())
    assert main(["diff", str(old), str(tmp_path / "nope")]) == 2
    assert "missing file" in capsys.readouterr().err
    bad = build_report()
    bad["tier"] = "platinum"
    write_report_dir(tmp_path / "bad", bad)
    assert main(["diff", str(old), str(tmp_path / "bad")]) == 2
    err = capsys.readouterr().err
    assert "NEW: tier 'platinum' is not in the tier ladder" in err and err.count("\n") == 1
