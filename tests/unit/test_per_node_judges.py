"""The DP judges hold every per_node entry (issue 48 item 2): a check run on several nodes
(`run --nodes all`, or the seed's sample) records each node's evidence under per_node and the
first failing node's on top (CheckContext.decide_per_node); the judge (and so verify) judges
every entry, names each failing node, and holds each entry's counts to the release's params.
Records shaped as the 2-node example run writes them (reports/example/report.json)."""
from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import pytest
from example_report import example_checklist

from conformance.report import judges
from conformance.report.judges import RunManifest

ROOT = Path(__file__).resolve().parents[2]
EXAMPLE = json.loads((ROOT / "reports" / "example" / "report.json").read_text())
NODES = ("cde860d0", "79292310", "a1b2c3d4")
# each check's own per-node fields (what decide_per_node records per node) and how one node goes bad
OWN = {"DP-008": ("tasks_run", "tasks"), "DP-010": ("calls_made", "calls"), "DP-011": ("task",),
       "DP-012": ("rounds_run", "rounds")}


def _bad(cid: str, entry: dict[str, Any]) -> dict[str, Any]:
    entry = copy.deepcopy(entry)
    if cid == "DP-008":
        entry["tasks"][1]["assigned"] = ["3"]          # the task sees 0, Ray assigned 3
    elif cid == "DP-010":
        entry["calls"][2]["env_value"] = "1"           # the actor's device changed
    elif cid == "DP-011":
        entry["task"]["env_value"] = "0"               # a 2-device task sees one id
    else:
        entry["rounds"][0].update(env_set=True, env_value="0")   # visibility leaked
    return entry


def _record(cid: str, bad_node: str | None = None, top_from: str | None = None) -> dict[str, Any]:
    """The check's example metrics recorded over NODES: per_node with every node's entry (one
    bad when `bad_node`), the top level a copy of `top_from`'s (decide_per_node: the worst node's)."""
    metrics = copy.deepcopy(next(c["metrics"] for c in EXAMPLE["checks"] if c["id"] == cid))
    own = {k: metrics[k] for k in OWN[cid]}
    per_node = {n: (_bad(cid, own) if n == bad_node else copy.deepcopy(own)) for n in NODES}
    metrics["per_node"] = per_node
    metrics["node_coverage"] = {"nodes": sorted(NODES), "alive": len(NODES), "mode": "all"}
    metrics.update(copy.deepcopy(per_node[top_from or NODES[0]]))
    return metrics


def _judge(cid: str, metrics: dict[str, Any]) -> judges.Verdict:
    check = example_checklist().by_id()[cid]   # the release the example's records were made under
    return judges.judge(check, metrics, RunManifest(EXAMPLE["manifest"], False))


@pytest.mark.parametrize("cid", sorted(OWN))
def test_every_node_passing_passes_and_says_so(cid: str) -> None:
    verdict = _judge(cid, _record(cid))
    assert verdict.outcome == "pass", verdict.reason
    assert f"each of {len(NODES)} node(s)" in (verdict.reason or "")


@pytest.mark.parametrize("cid", sorted(OWN))
def test_a_failing_node_behind_a_passing_top_record_fails_and_is_named(cid: str) -> None:
    # the held-out edit: the top level is a good node's copy, the bad node's record kept in per_node
    verdict = _judge(cid, _record(cid, bad_node=NODES[2], top_from=NODES[0]))
    assert verdict.outcome == "fail", verdict.reason
    assert f"1 of {len(NODES)} node(s) fail: node {NODES[2]}" in (verdict.reason or "")
    assert NODES[0] not in (verdict.reason or "").split("fail:")[1]


@pytest.mark.parametrize("cid", sorted(OWN))
def test_the_run_as_written_fails_too(cid: str) -> None:
    # what decide_per_node writes: the failing node's record on top as well
    verdict = _judge(cid, _record(cid, bad_node=NODES[1], top_from=NODES[1]))
    assert verdict.outcome == "fail" and f"node {NODES[1]}" in (verdict.reason or "")


@pytest.mark.parametrize("cid, count", [("DP-008", "tasks_run"), ("DP-010", "calls_made"), ("DP-012", "rounds_run")])
def test_a_node_that_ran_fewer_than_the_release_asks_fails(cid: str, count: str) -> None:
    metrics = _record(cid)
    entry = metrics["per_node"][NODES[1]]
    entry[count] -= 1
    entry[OWN[cid][1]] = entry[OWN[cid][1]][:-1]
    verdict = _judge(cid, metrics)
    assert verdict.outcome == "fail" and f"node {NODES[1]}: {count} is" in (verdict.reason or "")


def test_a_node_record_that_is_not_evidence_is_an_error_naming_it() -> None:
    metrics = _record("DP-008")
    metrics["per_node"][NODES[2]] = "all good"
    verdict = _judge("DP-008", metrics)
    assert verdict.outcome == "error" and f"per_node.{NODES[2]}" in (verdict.reason or "")
    metrics["per_node"] = {}
    assert _judge("DP-008", metrics).outcome == "error"


def test_per_node_naming_a_node_outside_the_coverage_record_fails() -> None:
    metrics = _record("DP-011")
    metrics["node_coverage"]["nodes"] = sorted(NODES[:2])
    verdict = _judge("DP-011", metrics)
    assert verdict.outcome == "fail" and "node_coverage does not" in (verdict.reason or "")


def test_a_record_without_per_node_is_judged_as_before() -> None:
    """A record of a release before per-node records (no per_node, no node_coverage) is judged on
    its one node's figures, as it was."""
    metrics = copy.deepcopy(next(c["metrics"] for c in EXAMPLE["checks"] if c["id"] == "DP-008"))
    metrics.pop("per_node", None)
    metrics.pop("node_coverage", None)
    verdict = _judge("DP-008", metrics)
    assert verdict.outcome == "pass" and "node(s)" not in (verdict.reason or "")


# ------------------------------------------------------------------ TR-006's wave of pairs (--nodes all)

def _tr006(wave: dict[str, Any] | None) -> dict[str, Any]:
    metrics = copy.deepcopy(next(c["metrics"] for c in EXAMPLE["checks"] if c["id"] == "TR-006"))
    for d in metrics["devices"]:
        if wave is not None:
            metrics[d]["pair_wave"] = copy.deepcopy(wave)
    return metrics


GOOD_WAVE = {"pairs": [[NODES[0], NODES[1]], [NODES[2], NODES[0]]], "moved": 2, "wrong": 0}


def test_a_pair_wave_that_moved_intact_passes_and_says_so() -> None:
    verdict = _judge("TR-006", _tr006(GOOD_WAVE))
    assert verdict.outcome == "pass" and "a wave of 4 node pair(s) every node is in" in (verdict.reason or "")
    assert _judge("TR-006", _tr006(None)).outcome == "pass"   # the default run: no wave, judged as before


@pytest.mark.parametrize("edit, said", [
    (lambda w: w.update(wrong=1, failures=["a->b: sha256 differs"]), "1 of 2 pair(s) moved the buffer wrong"),
    (lambda w: w.update(moved=1), "moved is 1, the wave has 2 pair(s)"),
    (lambda w: w["pairs"].append([NODES[1], NODES[1]]), "are one node, not two"),
    (lambda w: w.update(pairs=[]), "names no pair"),
])
def test_a_pair_wave_that_did_not_move_intact_fails(edit: Any, said: str) -> None:
    wave = copy.deepcopy(GOOD_WAVE)
    edit(wave)
    verdict = _judge("TR-006", _tr006(wave))
    assert verdict.outcome == "fail" and said in (verdict.reason or ""), verdict.reason


def test_a_pair_wave_that_is_not_evidence_is_an_error() -> None:
    assert _judge("TR-006", _tr006({"pairs": "all of them", "moved": 2, "wrong": 0})).outcome == "error"
