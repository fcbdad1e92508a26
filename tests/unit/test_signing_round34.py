"""Held-out round 34 (redteam/FINDINGS.md): what a vendor re-signing its own edits of a real report
could pass off, each closed by a rule over the whole class, on copies of reports/example.

X1   the command line claims the vendor's cluster beside clusters the suite started (trust.remote_problems)
M1   a node_env entry restating a declared value in another spelling ("04") is no change
HX01 a manifest's node count of 10**12 is read without iterating it (verify hung)
HX19 a manifest the loader refuses (more node_env entries than nodes) is refused in verify too
L1   FR-006's node signatures are the run's nodes (same_measurement.restart_signature_problems)
"""
from __future__ import annotations

import copy
import json
import time
from functools import lru_cache
from pathlib import Path
from typing import Any

from conformance.catalog.manifest import cross_problems, declared_device_nodes, same_env_value
from conformance.signing.same_measurement import restart_signature_problems
from conformance.signing.trust import remote_problems, run_problems

EXAMPLE = Path(__file__).resolve().parents[2] / "reports" / "example" / "report.json"


@lru_cache(maxsize=1)
def _example() -> dict[str, Any]:
    return json.loads(EXAMPLE.read_text())


def example() -> dict[str, Any]:
    return copy.deepcopy(_example())


def test_x1_the_vendors_cluster_claimed_beside_clusters_the_suite_started_is_refused() -> None:
    report = example()
    assert remote_problems(report) == [] and not [p for p in run_problems(report) if "cluster.history" in p]
    report["selection"]["args"].append("--conformance-ray-address=auto")
    [problem] = remote_problems(report)
    assert "cluster.history records clusters the suite started" in problem and "shared (simulated)" in problem
    assert problem in run_problems(report)
    # and the other way round: a remote cluster recorded without the argument
    other = example()
    other["cluster"]["history"][0]["mode"] = "remote"
    assert "do not name --conformance-ray-address" in remote_problems(other)[0]


def test_x1_a_run_on_the_vendors_cluster_alone_is_remote_and_agrees() -> None:
    report = example()
    report["selection"]["args"].append("--conformance-ray-address=auto")
    report["cluster"]["history"] = [{"shape": "shared", "ok": False, "reason": "connecting failed"},
                                    {"shape": "shared", "ok": True, "mode": "remote", "nodes": 1, "start_s": 0.4}]
    assert remote_problems(report) == []


def test_n38_a_history_entry_without_its_mode_or_ok_is_the_suites_own() -> None:
    """Held-out round 38 (N38_12, N38_13): the argument added and `mode` (or `ok`) deleted from the
    suite's own entries, which the rule used to skip as saying nothing."""
    for field in ("mode", "ok"):
        report = example()
        report["selection"]["args"].append("--conformance-ray-address=auto")
        for entry in report["cluster"]["history"]:
            entry.pop(field)
        [problem] = remote_problems(report)
        assert "cluster.history records clusters the suite started (or names no mode)" in problem, field
    report = example()
    report["selection"]["args"].append("--conformance-ray-address=auto")
    report["cluster"]["history"] = [{"shape": "recovery-nodes", "ok": False, "reason": "not started"},
                                    {"shape": "shared", "ok": True, "mode": "remote", "nodes": 1, "start_s": 0.4}]
    assert "recovery-nodes (None)" in remote_problems(report)[0]   # only the shared shape's connect may fail


def test_m1_a_declared_value_restated_in_another_spelling_is_no_change() -> None:
    manifest = example()["manifest"]
    assert declared_device_nodes(manifest) == 2
    manifest["cluster"]["node_env"][1] = {**manifest["cluster"]["node_env"][1], "SIMACC_NUM_DEVICES": "04"}
    assert declared_device_nodes(manifest) == 2
    manifest["cluster"]["node_env"][1]["SIMACC_NUM_DEVICES"] = "0"   # a CPU-only node: a change
    assert declared_device_nodes(manifest) == 1
    assert same_env_value(" 4", "4.0") and not same_env_value("4", "4,0") and not same_env_value("a", "b")


def test_hx01_a_node_count_of_ten_to_the_twelve_is_not_iterated() -> None:
    manifest = example()["manifest"]
    manifest["cluster"]["nodes"] = 10**12
    t0 = time.monotonic()
    assert declared_device_nodes(manifest) == 10**12
    assert time.monotonic() - t0 < 1.0


def test_hx19_a_manifest_the_loader_refuses_is_refused_by_verify_too() -> None:
    from conformance.catalog.datafiles import data_root
    from conformance.report.view import Report
    from conformance.signing.embedded import manifest_problem

    schema = data_root() / "schemas" / "manifest.schema.json"
    report = example()
    assert cross_problems(report["manifest"]) == [] and manifest_problem(Report.from_json(report), schema) is None
    report["manifest"]["cluster"]["node_env"] += [{}] * 200_000
    problem = manifest_problem(Report.from_json(report), schema)
    assert problem is not None and "200002 entries for 2 node(s)" in problem


def test_l1_fr006s_signatures_are_the_runs_nodes_not_one_node_twice() -> None:
    report = example()
    assert restart_signature_problems(report["checks"], report["environment"], remote=False) == []
    fr006 = next(c for c in report["checks"] if c["id"] == "FR-006")
    first = fr006["metrics"]["before"][0]
    fr006["metrics"]["before"] = fr006["metrics"]["after"] = [first, copy.deepcopy(first)]
    [problem] = restart_signature_problems(report["checks"], report["environment"], remote=False)
    assert "it lacks" in problem and "simlink-b" in problem and "simlink-a" in problem
    assert restart_signature_problems(report["checks"], report["environment"], remote=True) == []


def test_n38_16_what_a_vendors_cluster_kept_on_the_suites_own_clusters_is_refused() -> None:
    report = example()
    report["host"]["left_behind"]["cluster_kept"] = {"ray_processes": [{"pid": 7, "kind": "raylet"}]}
    assert "host.left_behind.cluster_kept names what a vendor's cluster kept" in remote_problems(report)[0]
