"""`ray-conformance run --nodes all` on a real 3-node cluster (cluster_utils, the simulated
accelerator): the per-node checks name every node in their evidence, the report's selection
records the mode beside the command line that gave it, and report.md says "nodes: 3 of 3".

One run of a few cheap checks on the smallest shape that has more nodes than the old scenarios
used (a pair, one node): DP-006 reads the view, DP-008/011/012 run their tasks on every node in
waves (conformance.run.nodes), TL-001 reads the facts the topology collection probed on every
node, TR-006 moves a buffer in a wave of node pairs every node is in (on simacc only: the host
type's wave is the same code). DP-009 and DP-010 (one actor per device, per node) are left out:
their actors cost most of the time on a loaded host, and their records are the same helper's.
The default sample's seeded choice is held by tests/ray/test_remote_cluster.py's run (at no
cost of its own) and by the unit tests (tests/unit/test_node_sample.py)."""
from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from conformance.catalog import node_sample
from conformance.catalog.data import load_run_knobs
from suite_runner import sim_manifest, write_manifest

CHECKS = ("DP-006", "DP-008", "DP-011", "DP-012", "TL-001", "TR-006")
NODES = 3


def three_nodes(tmp_path: Path) -> Path:
    """The simulated accelerator on NODES nodes of 2 devices, with the reference transport on simacc."""
    data = sim_manifest()
    data["accelerator"]["env"] = {**data["accelerator"]["env"], "SIMACC_NUM_DEVICES": "2", "SIMACC_ISLANDS": "0,1"}
    data["accelerator"]["expected"]["devices_per_node"] = 2
    data["topology"]["expected"] = {"devices_per_node": 2, "fully_connected": True,
                                    "links": [{"a": "0", "b": "1", "kind": "simlink", "min_bandwidth_gbps": 200}]}
    data["cluster"] = {"nodes": NODES, "num_cpus_per_node": 1, "object_store_memory_mb": 100}
    data["accelerator"]["torch_device"] = "conformance.simulated.device:install"
    data["transport"] = {"name": "SIMXFER", "manager": "conformance.simulated.transport:SimXferTransport",
                         "devices": ["simacc"], "expected": {"link_bandwidth_gbps": 0.5}}
    return write_manifest(data, tmp_path)


def run(tmp_path: Path, *args: str) -> dict:
    out = tmp_path / "out"
    proc = subprocess.run([sys.executable, "-m", "conformance.cli.main", "run", "--manifest", str(three_nodes(tmp_path)),
                           "--out", str(out), *args], capture_output=True, text=True, timeout=300, cwd=tmp_path)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    report: dict = json.loads((out / "report.json").read_text())
    return report


def test_nodes_all_names_every_node_in_each_per_node_check(tmp_path: Path) -> None:
    report = run(tmp_path, "--nodes", "all", "--check", *CHECKS)
    out = tmp_path / "out"
    assert report["selection"]["nodes"] == {"mode": "all"}
    assert "--conformance-nodes=all" in report["selection"]["args"]
    by_id = {c["id"]: c for c in report["checks"]}
    every = set(by_id["DP-006"]["metrics"]["device_counts"])   # Ray's view: every alive node, short ids
    assert len(every) == NODES
    for cid in CHECKS:
        check = by_id[cid]
        assert check["outcome"] == "pass", (cid, check["reason"])
        coverage = check["metrics"]["node_coverage"]
        assert set(coverage["nodes"]) == every and coverage["alive"] == NODES and coverage["mode"] == "all", \
            (cid, coverage)
    for cid in ("DP-008", "DP-011", "DP-012"):   # the scenario itself ran on every node, each node's record kept
        assert set(by_id[cid]["metrics"]["per_node"]) == every, cid
    wave = by_id["TR-006"]["metrics"]["pair_wave"]   # one type: its record is the metrics themselves
    assert {n for pair in wave["pairs"] for n in pair} == every and wave["wrong"] == 0, wave
    policy = node_sample.node_policy(load_run_knobs())
    assert node_sample.choice_problems(report, policy)[0] == []   # verify's `nodes` line
    text = (out / "report.md").read_text()
    assert "## Nodes exercised" in text and text.count(f"nodes: {NODES} of {NODES}") == len(CHECKS)
    assert "node mode: all" in text
    assert f"nodes: {NODES} of {NODES}" in (out / "report.html").read_text()

