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
