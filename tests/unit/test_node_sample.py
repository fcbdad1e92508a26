"""The seeded node sample (issue 48 item 2: conformance.catalog.node_sample): the choice anyone can
recompute from a seed and a node list, the record the report keeps, the command line it must
agree with, and verify's `nodes` line (the exercised nodes are the seed's choice, or every node
under `all`) on records shaped as the example run writes them."""
from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import pytest

from conformance.catalog import node_sample as ns
from conformance.catalog.data import load_ladder
from conformance.catalog.selection import nodes_reasons
from conformance.run.nodes import ring_pairs

ROOT = Path(__file__).resolve().parents[2]
EXAMPLE = json.loads((ROOT / "reports" / "example" / "report.json").read_text())
IDS = [f"{i:02x}" * 28 for i in range(16, 32)]     # 16 full node ids (56 hex characters)
POLICY = ns.NodePolicy(sample_size=2)


def test_the_choice_is_deterministic_order_free_and_sized() -> None:
    chosen = ns.choose(IDS, 1234, 3)
    assert chosen == ns.choose(list(reversed(IDS)), 1234, 3) == ns.choose([i[:8] for i in IDS], 1234, 3)
    assert len(chosen) == 3 and chosen == sorted(chosen) and all(len(c) == 8 for c in chosen)
    assert ns.choose(IDS[:2], 1, 5) == sorted(i[:8] for i in IDS[:2])   # fewer nodes than the size: all
    assert ns.choose([], 1, 2) == [] and ns.choose(IDS, 1, 0) == []


def test_every_node_is_someones_choice() -> None:
    """Not the same node whatever the seed (a rank that ignored the seed would pass the rest)."""
    hit = {n for seed in range(200) for n in ns.choose(IDS, seed, 1)}
    assert hit == {i[:8] for i in IDS}


def test_the_shipped_policy_and_the_seed_option() -> None:
    policy = load_ladder().knobs.nodes
    assert policy.sample_size == 1   # the default run's cost as before: one node
    assert ns.parse_seed(None) is None and ns.parse_seed(" 42 ") == 42
    for bad in ("-1", "x", "1.5", str(2 ** 32)):
        with pytest.raises(ValueError, match=r"^--node-seed: expected a whole number 0 <= seed < 4294967296"):
            ns.parse_seed(bad)
    assert 0 <= ns.new_seed() < 2 ** ns.SEED_BITS


def test_eligible_reads_the_recorded_node_list() -> None:
    nodes = EXAMPLE["environment"]["devices"]["nodes"]
    assert ns.eligible(nodes, 1) == sorted(n["node_id"][:8] for n in nodes)
    assert ns.eligible(nodes, 5) == [] and ns.eligible("x", 1) == [] and ns.eligible([{"node_id": 3}], 1) == []


@pytest.mark.parametrize("selection, problems", [
    ({"args": [], "nodes": {"mode": "sample", "seed": 5, "size": 1}}, []),
    ({"args": ["--conformance-node-seed=5"], "nodes": {"mode": "sample", "seed": 5, "size": 1}}, []),
    ({"args": ["--conformance-node-seed=6"], "nodes": {"mode": "sample", "seed": 5, "size": 1}},
     ["selection.nodes.seed is '5' but the recorded command line says --conformance-node-seed=6"]),
    ({"args": ["--conformance-nodes=all"], "nodes": {"mode": "all", "seed": 5, "size": 1}}, []),   # recovery's per-domain seed
    ({"args": ["--conformance-nodes=all", "--conformance-node-seed=6"], "nodes": {"mode": "all", "seed": 5, "size": 1}},
     ["selection.nodes.seed is '5' but the recorded command line says --conformance-node-seed=6"]),
])
def test_the_recorded_seed_agrees_with_the_command_line(selection: dict, problems: list[str]) -> None:
    assert nodes_reasons(selection) == problems


# ------------------------------------------------------------------ verify's `nodes` line

FOUR = [{"node_id": i, "count": 4.0, "accelerator_type": "SIMACC-X1"} for i in IDS[:4]]


def _report(mode: str, seed: int | None = 99, exercised: dict[str, list[str]] | None = None) -> dict[str, Any]:
    """The example report on four nodes: its DP-008/010/011/012 exercised `exercised` (check ->
    short ids; default: the seed's choice, or every node under all), per_node beside coverage."""
    report = copy.deepcopy(EXAMPLE)
    report["environment"]["devices"]["nodes"] = copy.deepcopy(FOUR)
    report["selection"]["nodes"] = ns.sample_record(seed, POLICY.sample_size) if mode == "sample" and seed is not None \
        else {"mode": mode}
    for check in report["checks"]:
        if check["id"] not in ns.SAMPLED_CHECKS:
            continue
        want = (exercised or {}).get(check["id"]) or (
            ns.choose(IDS[:4], seed or 0, POLICY.sample_size) if mode == "sample" else [i[:8] for i in IDS[:4]])
        m = check["metrics"]
        m["per_node"] = {n: {} for n in want}
        m["node_coverage"] = {"nodes": sorted(want), "alive": 4, "mode": mode}
    if mode == "all":   # TR-006's wave of pairs, on each device type it moved
        tr = next(c for c in report["checks"] if c["id"] == "TR-006")["metrics"]
        for d in tr["devices"]:
            tr[d]["pair_wave"] = {"pairs": [[a[:8], b[:8]] for a, b in ring_pairs(IDS[:4])], "moved": 2, "wrong": 0}
    return report


def test_the_seeds_choice_and_every_node_under_all_pass() -> None:
    problems, summary = ns.choice_problems(_report("sample"), POLICY)
    assert problems == [] and summary == "4 per-node check(s) exercised seed 99's choice of 2 node(s)"
    problems, summary = ns.choice_problems(_report("all"), POLICY)
    assert problems == [] and summary == "5 per-node check(s) exercised every device node"


def test_nodes_other_than_the_seeds_choice_are_refused() -> None:
    chosen = ns.choose(IDS[:4], 99, 2)
    other = sorted(set(i[:8] for i in IDS[:4]) - set(chosen))
    problems, _ = ns.choice_problems(_report("sample", exercised={"DP-010": other}), POLICY)
    assert len(problems) == 1 and problems[0].startswith(f"DP-010 exercised nodes {other}")
    assert f"seed 99's choice of 2 among 4 node(s) is {chosen}" in problems[0]
    edited = _report("sample")
    edited["selection"]["nodes"]["seed"] = next(s for s in range(1000) if ns.choose(IDS[:4], s, 2) != chosen)
    assert len(ns.choice_problems(edited, POLICY)[0]) == 4   # the seed edited: no check's nodes are its choice


def test_a_node_missing_under_all_is_named() -> None:
    three = [i[:8] for i in IDS[:3]]
    problems, _ = ns.choice_problems(_report("all", exercised={"DP-008": three}), POLICY)
    assert problems == [f"DP-008 exercised nodes {three} (per_node {three}); every node of environment.devices.nodes "
                        f"offering 1 device(s) is {[i[:8] for i in IDS[:4]]}: node(s) {[IDS[3][:8]]} missing from per_node"]
    no_record = _report("all")
    del next(c for c in no_record["checks"] if c["id"] == "DP-012")["metrics"]["per_node"]
    assert ns.choice_problems(no_record, POLICY)[0][0].startswith("DP-012 records no per-node evidence")


def test_the_size_is_the_releases() -> None:
    report = _report("sample")
    report["selection"]["nodes"]["size"] = 1
    problems, _ = ns.choice_problems(report, POLICY)
    assert problems[0] == "selection.nodes.size is '1'; the release fixes 2 (its tiers/tiers.yaml nodes.sample_size)"


@pytest.mark.parametrize("edit, summary", [
    (lambda r: r["selection"].__setitem__("nodes", {"mode": "sample"}), "a sample without a recorded seed"),
    (lambda r: r["selection"].pop("nodes"), "no node mode recorded"),
    (lambda r: r["environment"]["devices"].pop("nodes"), "the run records no list of its nodes"),
])
def test_reports_before_the_seeded_sample_pass_with_a_line_saying_why(edit: Any, summary: str) -> None:
    report = _report("sample")
    edit(report)
    problems, said = ns.choice_problems(report, POLICY)
    assert problems == [] and said.startswith(summary)


def test_a_hostile_seed_is_a_problem_never_a_traceback() -> None:
    for seed in ("7", -1, True, 2 ** 40, 1.5):
        report = _report("sample")
        report["selection"]["nodes"]["seed"] = seed
        problems, _ = ns.choice_problems(report, POLICY)
        assert problems and problems[0].startswith("selection.nodes.seed is")


def test_a_real_report_passes_its_nodes_line_with_and_without_a_seed() -> None:
    """The committed example (a run of the release that records the seed) passes the line with the
    seed's choice; a real run of a release before the seed (data.6) passes it, saying so."""
    problems, summary = ns.choice_problems(EXAMPLE, load_ladder().knobs.nodes)
    assert problems == [] and "choice of" in summary
    data19 = copy.deepcopy(EXAMPLE)   # what a run of 0.1.0+data.19 recorded: the mode, no seed or size
    data19["selection"]["nodes"] = {"mode": EXAMPLE["selection"]["nodes"]["mode"]}
    problems, summary = ns.choice_problems(data19, load_ladder().knobs.nodes)
    assert problems == [] and "without a recorded seed" in summary
    data6 = json.loads((ROOT / "tests" / "support" / "real_run_data6" / "report.json").read_text())
    problems, summary = ns.choice_problems(data6, load_ladder().knobs.nodes)
    assert problems == [] and "no node mode recorded" in summary


def test_a_pair_wave_missing_a_node_or_missing_under_all_is_named() -> None:
    report = _report("all")
    tr = next(c for c in report["checks"] if c["id"] == "TR-006")["metrics"]
    tr["cpu"]["pair_wave"]["pairs"] = [[IDS[0][:8], IDS[1][:8]], [IDS[2][:8], IDS[0][:8]]]
    del tr["simacc"]["pair_wave"]
    problems, _ = ns.choice_problems(report, POLICY)
    assert problems == ["TR-006 on simacc records no pair_wave in a run whose selection.nodes says all",
                        f"TR-006 on cpu: node(s) {[IDS[3][:8]]} of environment.devices.nodes are in no pair of its wave"]


@pytest.mark.parametrize("count, pairs", [(0, []), (1, []), (2, [(0, 1)]), (3, [(0, 1), (2, 0)]),
                                          (4, [(0, 1), (2, 3)]), (5, [(0, 1), (2, 3), (4, 0)])])
def test_ring_pairs_make_every_node_an_endpoint_in_one_wave(count: int, pairs: list[tuple[int, int]]) -> None:
    got = ring_pairs(IDS[:count] + IDS[:1])   # a repeated id counts once
    assert got == [(IDS[a], IDS[b]) for a, b in pairs]
    assert all(a != b for a, b in got) and ({n for pr in got for n in pr} == set(IDS[:count]) or count < 2)


def test_a_sharded_runs_default_seed_is_every_shards_and_a_merged_report_defers_to_its_shards() -> None:
    assert ns.shard_seed("ab" * 32) == ns.shard_seed("ab" * 32) != ns.shard_seed("cd" * 32)
    assert 0 <= ns.shard_seed("ab" * 32) < 2 ** ns.SEED_BITS
    merged = _report("all", exercised={"DP-008": [IDS[0][:8]]})
    merged["selection"]["shards"] = [{"shard": "1-of-2"}, {"shard": "2-of-2"}]
    assert ns.choice_problems(merged, POLICY) == ([], "a merged report: each shard's own nodes line held its checks "
                                                      "to its own cluster's nodes")
