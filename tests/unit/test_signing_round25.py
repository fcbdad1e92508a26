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
