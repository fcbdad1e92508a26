"""`ray-conformance run --nodes all` on a real 3-node cluster (cluster_utils, the simulated
accelerator): the per-node checks name every node in their evidence, the report's selection
records the mode and the seed beside the command line that gave them, report.md says "nodes: 3 of
3"; and a recovery-only run (`run --check FR-001`: no check of the shared cluster, the path of
`--area recovery` and of a recovery shard) records the same nodes a full run does, its scenario
on the seed's choice of one node per failure domain.

Two runs on the smallest shape that has more nodes than the old scenarios used (a pair, one
node). The first, of a few cheap checks under `--nodes all`: DP-006 reads the view, DP-008/011/012
run their tasks on every node in waves (conformance.run.nodes), TL-001 reads the facts the
topology collection probed on every node, TR-006 moves a buffer in a wave of node pairs every node
is in (on simacc only: the host type's wave is the same code). DP-009 and DP-010 (one actor per
device, per node) are left out: their actors cost most of the time on a loaded host, and their
records are the same helper's. The second, of FR-001 alone (the default `sample` mode, the seed
given): its cluster is the recovery-devices shape (the manifest's nodes), the run's description
of its nodes (environment.devices) is read there, and FR-001 kills a holder on each node the seed
chose per rack (the nodes sit in two racks, one node and two), in one wave (FR-002..FR-004 start
with the same helper, held by the unit tests and the example run: leaving them out saves their
holders' starts). The default sample's seeded choice of the visibility checks is held by
tests/ray/test_remote_cluster.py's run (at no cost of its own) and by the unit tests
(tests/unit/test_node_sample.py, tests/unit/test_recovery_domain_sample.py)."""
from __future__ import annotations

import copy
import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from conformance.catalog import node_sample
from conformance.catalog.data import load_checklist, load_ladder
from conformance.catalog.labels import load_vocabulary
from conformance.catalog.scenario_bounds import judged_params
from conformance.report.judges import judge_for, run_judge
from suite_runner import sim_manifest, write_manifest

WAVES = ("DP-006", "DP-008", "DP-011", "DP-012", "TL-001", "TR-006")   # every node
RECOVERY = ("FR-001",)                                                # one node per failure domain
NODES = 3
RACKS = ("rack-1", "rack-2", "rack-2")   # node i's rack: two failure domains, one of them two nodes
SEED = 7


def three_nodes(tmp_path: Path) -> Path:
    """The simulated accelerator on NODES nodes of 2 devices in RACKS (the manifest declares the rack
    domain), with the reference transport on simacc."""
    data = sim_manifest()
    data["accelerator"]["env"] = {**data["accelerator"]["env"], "SIMACC_NUM_DEVICES": "2", "SIMACC_ISLANDS": "0,1"}
    data["accelerator"]["expected"]["devices_per_node"] = 2
    data["topology"]["expected"] = {"devices_per_node": 2, "fully_connected": True, "domains": ["rack"],
                                    "links": [{"a": "0", "b": "1", "kind": "simlink", "min_bandwidth_gbps": 200}]}
    data["cluster"] = {"nodes": NODES, "num_cpus_per_node": 1, "object_store_memory_mb": 100,
                       "node_env": [{"SIMACC_RACK": rack} for rack in RACKS]}
    data["accelerator"]["torch_device"] = "conformance.simulated.device:install"
    data["transport"] = {"name": "SIMXFER", "manager": "conformance.simulated.transport:SimXferTransport",
                         "devices": ["simacc"], "expected": {"link_bandwidth_gbps": 0.5}}
    return write_manifest(data, tmp_path)


def run_cli(tmp_path: Path, *options: str) -> tuple[dict[str, Any], Path]:
    """`ray-conformance run` on the three-node manifest with `options`: (report.json, its folder)."""
    out = tmp_path / "out"
    proc = subprocess.run([sys.executable, "-m", "conformance.cli.main", "run", "--manifest", str(three_nodes(tmp_path)),
                           "--out", str(out), "--node-seed", str(SEED), *options],
                          capture_output=True, text=True, timeout=420, cwd=tmp_path)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    report: dict[str, Any] = json.loads((out / "report.json").read_text())
    return report, out


@pytest.fixture(scope="module")
def run_all(tmp_path_factory: pytest.TempPathFactory) -> tuple[dict[str, Any], Path]:
    """One `run --nodes all --node-seed SEED` of WAVES: (report.json, its folder)."""
    return run_cli(tmp_path_factory.mktemp("every_node"), "--nodes", "all", "--check", *WAVES)


@pytest.fixture(scope="module")
def run_recovery(tmp_path_factory: pytest.TempPathFactory) -> tuple[dict[str, Any], Path]:
    """One recovery-only `run --node-seed SEED --check` RECOVERY (no shared check): (report.json, its folder)."""
    return run_cli(tmp_path_factory.mktemp("recovery_only"), "--check", *RECOVERY)


def node_facts(report: dict[str, Any]) -> list[tuple[Any, ...]]:
    """What a report's environment.devices says of each node but its id: devices, type, labels."""
    return sorted((n["count"], n["accelerator_type"], sorted((k, v) for k, v in n["labels"].items() if k != "ray.io/node-id"))
                  for n in report["environment"]["devices"]["nodes"])


def test_nodes_all_names_every_node_in_each_per_node_check(run_all: tuple[dict[str, Any], Path]) -> None:
    report, out = run_all
    assert report["selection"]["nodes"] == {"mode": "all", "seed": SEED, "size": 1}
    assert "--conformance-nodes=all" in report["selection"]["args"]
    by_id = {c["id"]: c for c in report["checks"]}
    every = set(by_id["DP-006"]["metrics"]["device_counts"])   # Ray's view: every alive node, short ids
    assert len(every) == NODES
    for cid in WAVES:
        check = by_id[cid]
        assert check["outcome"] == "pass", (cid, check["reason"])
        coverage = check["metrics"]["node_coverage"]
        assert set(coverage["nodes"]) == every and coverage["alive"] == NODES and coverage["mode"] == "all", \
            (cid, coverage)
    for cid in ("DP-008", "DP-011", "DP-012"):   # the scenario itself ran on every node, each node's record kept
        assert set(by_id[cid]["metrics"]["per_node"]) == every, cid
    wave = by_id["TR-006"]["metrics"]["pair_wave"]   # one type: its record is the metrics themselves
    assert {n for pair in wave["pairs"] for n in pair} == every and wave["wrong"] == 0, wave
    policy = load_ladder().knobs.nodes
    assert node_sample.choice_problems(report, policy)[0] == []   # verify's `nodes` line
    text = (out / "report.md").read_text()
    assert "## Nodes exercised" in text and text.count(f"nodes: {NODES} of {NODES}") == len(WAVES)
    assert "node mode: all" in text
    assert f"nodes: {NODES} of {NODES}" in (out / "report.html").read_text()


def test_a_recovery_only_run_records_the_nodes_a_full_run_records(run_all: tuple[dict[str, Any], Path],
                                                                  run_recovery: tuple[dict[str, Any], Path]) -> None:
    """No shared check ran, yet the run describes its nodes as the full run does (environment.devices
    read on the recovery-devices cluster, the manifest's nodes) and records its node mode and seed."""
    report, out = run_recovery
    assert report["partial"] and [c["id"] for c in report["checks"] if c.get("tests")] == list(RECOVERY)
    assert report["selection"]["nodes"] == {"mode": "sample", "seed": SEED, "size": 1}
    assert len(report["environment"]["devices"]["nodes"]) == NODES
    assert node_facts(report) == node_facts(run_all[0])
    assert report["environment"]["devices"]["total"] == run_all[0]["environment"]["devices"]["total"] == 2 * NODES
    # the cluster the report describes is the manifest's (the tier's node count, verify's shape): as the full run's
    assert (report["cluster"]["mode"], report["cluster"]["nodes"]) == (run_all[0]["cluster"]["mode"], NODES)
    assert report["shape"] == run_all[0]["shape"] and report["shape"]["nodes"] == NODES
    assert (out / "report.md").read_text().count(f"nodes: 2 of {NODES}") == len(RECOVERY)   # one per rack


def test_recovery_scenarios_run_on_the_seeds_choice_per_failure_domain(run_recovery: tuple[dict[str, Any], Path]) -> None:
    """FR-001 ran its scenario in one wave on the seed's choice of one node per rack, with each
    node's evidence recorded; verify's `nodes` line recomputes the choice from the run's own node
    list; a report whose per_node drops a node is refused by the judge and by that line."""
    report, _ = run_recovery
    keys = node_sample.manifest_domain_keys(report["manifest"], load_vocabulary())
    assert keys == ["ray.io/rack"]
    domains = node_sample.node_domains(report["environment"]["devices"]["nodes"], 1, keys)
    assert sorted(domains.values()) == ["ray.io/rack=" + r for r in sorted(RACKS)]
    want = node_sample.per_domain(domains, SEED, 1)
    assert {domains[n] for n in want} == {"ray.io/rack=rack-1", "ray.io/rack=rack-2"} and len(want) == 2
    by_id = {c["id"]: c for c in report["checks"]}
    for cid, how in zip(RECOVERY, ("kill",)):
        check = by_id[cid]
        assert check["outcome"] == "pass", (cid, check["reason"])
        assert sorted(check["metrics"]["per_node"]) == want == check["metrics"]["node_coverage"]["nodes"], cid
        assert list(check["metrics"]["scenarios"]) == [f"{how}-holder-then-reuse-on-2-nodes"], cid
    policy = load_ladder().knobs.nodes
    problems, summary = node_sample.choice_problems(report, policy, keys)   # verify's `nodes` line
    assert problems == [] and "1 recovery check(s) ran on seed 7's choice of 1 node(s) per failure domain" in summary
    assert "0 per-node check(s) exercised seed 7's choice" in summary   # the sample mode: no visibility check ran
    dropped = copy.deepcopy(report)   # a vendor drops one node's scenario record
    gone = want[1]
    check = next(c for c in dropped["checks"] if c["id"] == "FR-001")
    del check["metrics"]["per_node"][gone]
    entry = load_checklist().by_id()["FR-001"]
    judge = judge_for(entry)
    assert judge is not None
    verdict = run_judge(judge, "FR-001", check["metrics"], judged_params(entry), report["manifest"])   # its scenario bound too
    assert verdict.outcome == "fail" and f"node(s) ['{gone}'] of its node_coverage have no per_node record" in verdict.reason
    check["metrics"]["node_coverage"]["nodes"].remove(gone)   # and from its coverage: the choice says it
    assert f"node(s) ['{gone}'] have no scenario record" in node_sample.choice_problems(dropped, policy, keys)[0][0]
