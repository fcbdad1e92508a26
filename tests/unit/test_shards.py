"""Shards (issue 48 item 1): the slice plan and the merge rules, pure (no Ray, no files)."""
from __future__ import annotations

import copy
from typing import Any

import pytest

from conformance.catalog import shards as sh
from conformance.catalog.data import load_ladder
from conformance.catalog.selection import is_partial, partial_reasons
from conformance.report import merge as mg

POLICY = sh.ShardPolicy(max_count=16, window_h=72, core=("DP-001", "DP-002"))
CHECKS = {"DP-001": ("device", "none"), "DP-002": ("device", "none"), "DP-007": ("device", "none"),
          "DP-008": ("device", "shared"), "TL-001": ("topology", "shared"), "TL-002": ("topology", "shared"),
          "FR-001": ("recovery", "recovery-nodes"), "FR-002": ("recovery", "recovery-nodes"),
          "FR-003": ("recovery", "recovery-restart")}
DURATIONS = {"FR-001": 30.0, "FR-002": 20.0, "FR-003": 25.0, "TL-001": 3.0}


def plan(count: int) -> list[list[str]]:
    return sh.plan_shards(CHECKS, count, durations=DURATIONS, default_s=3.0, core=POLICY.core)


def test_parse_shard_and_labels() -> None:
    assert sh.parse_shard("2/3", 16) == sh.Shard(2, 3) and sh.Shard(2, 3).label == "2-of-3"
    for bad in ("0/2", "3/2", "1/1", "1/17", "a/b", "1-of-2", ""):
        with pytest.raises(ValueError, match=r"^--shard: expected I/N with 1 <= I <= N and 2 <= N <= 16"):
            sh.parse_shard(bad, 16)
    assert sh.parse_label("1-of-2") == sh.Shard(1, 2) and sh.parse_label("3-of-2") is None
    assert sh.recorded_specs(["-q", "--conformance-shard=1/2", 3]) == ["1/2"]
    assert sh.without_shard(["-q", "--conformance-shard=1/2"]) == ["-q"]


def test_the_shipped_policy_is_read_from_tiers_yaml() -> None:
    policy = load_ladder().knobs.shards
    assert policy.max_count >= 2 and policy.window_h > 0 and policy.core


def test_plan_is_a_deterministic_partition_without_the_core() -> None:
    for count in (2, 3, 4):
        slices = plan(count)
        assert slices == plan(count) and len(slices) == count
        flat = [c for s in slices for c in s]
        assert sorted(flat) == sorted(set(CHECKS) - set(POLICY.core)) and len(flat) == len(set(flat))


def test_plan_keeps_a_shape_and_area_together_and_balances() -> None:
    two = plan(2)
    where = {c: i for i, s in enumerate(two) for c in s}
    assert where["FR-001"] == where["FR-002"]               # one shape, one area: one shard
    assert where["TL-001"] == where["TL-002"]
    assert where["FR-003"] != where["FR-001"]               # the two long shapes on two shards
    # a recovery shape is never started in two shards; `shared` is (two areas): it must, to balance
    started = [{CHECKS[c][1] for c in s} for s in two]
    assert sum("recovery-nodes" in s for s in started) == 1


def test_plan_splits_a_unit_when_there_are_fewer_units_than_shards() -> None:
    slices = sh.plan_shards({"TL-001": ("topology", "shared"), "TL-002": ("topology", "shared")}, 2,
                            durations={}, default_s=3.0)
    assert sorted(map(tuple, slices)) == [("TL-001",), ("TL-002",)]


# ------------------------------------------------------------------ the merge rules

def _check(cid: str, ran: bool, outcome: str = "pass") -> dict[str, Any]:
    return {"id": cid, "outcome": outcome if ran else "skip", "tests": [f"x/test_x.py::test_{cid}"] if ran else [],
            "duration_s": 1.0 if ran else 0.0, "reason": None if ran else "not in this shard"}


def shard(i: int, n: int = 2, *, slices: list[list[str]] | None = None) -> mg.ShardReport:
    slices = slices if slices is not None else plan(n)
    mine = set(slices[i - 1]) | set(POLICY.core)
    report = {
        "suite": {"version": "1.0", "checklist_sha256": "c", "tiers_sha256": "t", "report_schema_sha256": "r"},
        "manifest_sha256": "m", "manifest": {"plugin": {"version": "0.1"}},
        "environment": {"ray": "2.60.0", "python": "3.12", "torch": "2.5", "os": "Linux", "cpu": "X",
                        "cpu_count": 2, "machine": "x86_64"},
        "shape": {"nodes": 2, "devices_per_node": 4, "domain_labels": False}, "cluster": {"nodes": 2, "notes": []},
        "preflight": {"ok": True, "nodes": 2},
        "started_at": f"2026-12-05T0{i}:00:00+00:00", "finished_at": f"2026-12-05T0{i}:30:00+00:00",
        "interrupted": False,
        "selection": {"args": ["--conformance-manifest=m.yaml", f"--conformance-out=s{i}",
                               f"--conformance-shard={i}/{n}", "$SUITE/checks"],
                      "deselected": [], "not_run": [], "collect_only": False, "whole_checklist_collected": True,
                      "shard": sh.selection_shard(sh.Shard(i, n), slices, POLICY.core)},
        "checks": [_check(c, c in mine) for c in sorted(CHECKS)],
    }
    return mg.ShardReport(f"{i}-of-{n}", report)


def problems(shards: list[mg.ShardReport]) -> list[str]:
    return [p.line() for p in mg.shard_set_problems(shards, POLICY)[1]]


def edited(s: mg.ShardReport, edit: Any) -> mg.ShardReport:
    report = copy.deepcopy(dict(s.report))
    edit(report)
    return mg.ShardReport(s.name, report)


def test_a_whole_shard_set_merges() -> None:
    shards = [shard(1), shard(2)]
    found, found_problems = mg.shard_set_problems(shards, POLICY)
    assert found_problems == [] and sorted(found) == [1, 2]
    checks = mg.merged_checks(found)
    assert all(c["tests"] for c in checks)
    selection = mg.merged_selection(found, checks, {1: "a" * 64, 2: "b" * 64})
    assert not is_partial(selection) and "--conformance-shard=1/2" not in selection["args"]
    assert [s["shard"] for s in selection["shards"]] == ["1-of-2", "2-of-2"]


def test_a_hole_a_duplicate_and_mixed_counts_are_named() -> None:
    assert problems([shard(1)]) == ["selection.shard: shard 2-of-2 missing: a hole in the run"]
    assert problems([shard(1), shard(1), shard(2)])[0].startswith("selection.shard: shard 1-of-2 given twice")
    assert "counts 2, 3" in problems([shard(1), shard(2, 3)])[0]
    whole = edited(shard(2), lambda r: r["selection"].pop("shard"))
    assert problems([shard(1), whole])[0].startswith("selection.shard: 2-of-2 is not a shard")


def test_a_command_line_that_does_not_match_its_shard_is_refused() -> None:
    def renumber(r: dict[str, Any]) -> None:
        r["selection"]["args"][2] = "--conformance-shard=1/2"
    assert problems([shard(1), edited(shard(2), renumber)]) == [
        "selection.args: shard 2-of-2 (2-of-2): its recorded command line says --conformance-shard=1/2, "
        "not --conformance-shard=2/2"]


def test_a_duplicated_and_a_missing_check() -> None:
    cid = plan(2)[0][0]

    def also_ran(r: dict[str, Any]) -> None:
        next(c for c in r["checks"] if c["id"] == cid).update(_check(cid, True))
    got = problems([shard(1), edited(shard(2), also_ran)])
    assert f"checks[{cid}].tests: {cid} ran in shard 2-of-2, outside its slice" in got
    assert f"checks[{cid}].tests: Multiple results for {cid} (shards 1-of-2, 2-of-2)" in got

    def did_not_run(r: dict[str, Any]) -> None:
        next(c for c in r["checks"] if c["id"] == cid).update(_check(cid, False))
    assert problems([edited(shard(1), did_not_run), shard(2)]) == [
        f"checks[{cid}].tests: Missing result for {cid} (shard 1-of-2's slice)"]


@pytest.mark.parametrize("field, value, why", [
    ("suite.version", "2.0", "a shard from another release"),
    ("manifest_sha256", "other", "a shard of another manifest"),
    ("environment.ray", "2.59.0", "a shard on another Ray version"),
    ("environment.cpu", "Y", "shards of two machines"),
    ("shape.devices_per_node", 8, "shards of two machines"),
    ("selection.environment", {"RAY_CONFORMANCE_TRANSPORT_MAX_BYTES": "4MiB"},
     "a shard run with another size knob: its checks moved other sizes"),
])
def test_a_shard_of_another_run_or_machine_is_refused(field: str, value: Any, why: str) -> None:
    def change(r: dict[str, Any]) -> None:
        *path, last = field.split(".")
        doc = r
        for p in path:
            doc = doc[p]
        doc[last] = value
    got = problems([shard(1), edited(shard(2), change)])
    top = field if field != "shape.devices_per_node" else "shape"
    assert got and got[0].startswith(f"{top}: shard 2-of-2 says") and got[0].endswith(f"({why})"), got


def test_shards_run_with_another_size_knob_are_refused_in_one_line() -> None:
    """The merged run record takes the first shard's selection.environment: a set whose shards ran
    with other sizes (one capped, one not; two caps) is not one run, whichever shard comes first."""
    def capped(value: str) -> Any:
        return lambda r: r["selection"].__setitem__("environment", {"RAY_CONFORMANCE_TRANSPORT_MAX_BYTES": value})
    assert problems([shard(1), edited(shard(2), capped("4MiB"))]) == [
        "selection.environment: shard 2-of-2 says {'RAY_CONFORMANCE_TRANSPORT_MAX_BYTES': '4MiB'}, shard 1-of-2 None "
        "(a shard run with another size knob: its checks moved other sizes)"]
    assert problems([edited(shard(1), capped("4MiB")), shard(2)])[0].startswith(
        "selection.environment: shard 2-of-2 says None, shard 1-of-2 {'RAY_CONFORMANCE_TRANSPORT_MAX_BYTES': '4MiB'}")
    assert len(problems([edited(shard(1), capped("4MiB")), edited(shard(2), capped("16MiB"))])) == 1
    found, none = mg.shard_set_problems([edited(shard(1), capped("4MiB")), edited(shard(2), capped("4MiB"))], POLICY)
    assert none == []
    assert mg.merged_selection(found, mg.merged_checks(found), {1: "a" * 64, 2: "b" * 64})["environment"] == {
        "RAY_CONFORMANCE_TRANSPORT_MAX_BYTES": "4MiB"}


def test_the_core_must_agree_and_a_shard_without_a_cluster_states_no_shape() -> None:
    def core_fails(r: dict[str, Any]) -> None:
        next(c for c in r["checks"] if c["id"] == "DP-001")["outcome"] = "fail"
    assert problems([shard(1), edited(shard(2), core_fails)]) == [
        "checks[DP-001].outcome: the mandatory core disagrees: 'fail' in shard 2-of-2, 'pass' in shard 1-of-2 "
        "(shards of two machines)"]

    def no_cluster(r: dict[str, Any]) -> None:
        r["shape"] = {"nodes": None, "devices_per_node": None, "domain_labels": None}
        r["cluster"]["nodes"] = 0
        r["preflight"]["nodes"] = 0
    found, got = mg.shard_set_problems([edited(shard(1), no_cluster), shard(2)], POLICY)
    assert got == [] and mg.observer(found) is found[2]


def test_another_plan_and_another_command_line_are_another_run() -> None:
    other = [list(reversed(plan(2)))[0], plan(2)[0]]
    got = problems([shard(1), shard(2, slices=other)])
    assert any(p.startswith("selection.shard.plan: shard 2-of-2 planned another split") for p in got), got

    def narrowed(r: dict[str, Any]) -> None:
        r["selection"]["args"].insert(0, "-x")
    assert problems([shard(1), edited(shard(2), narrowed)])[0].startswith(
        "selection.args: shard 2-of-2 ran another command line than shard 1-of-2")


def test_shards_outside_the_window_are_refused() -> None:
    def late(r: dict[str, Any]) -> None:
        r["started_at"], r["finished_at"] = "2026-12-09T02:00:00+00:00", "2026-12-09T03:00:00+00:00"
    assert problems([shard(1), edited(shard(2), late)]) == [
        "finished_at: the shards span 98.0 h, more than the window of 72 h (the release's tiers/tiers.yaml shards.window_h)"]


def test_a_shard_alone_is_a_recognised_partial() -> None:
    report = dict(shard(1).report, partial=True)
    reasons = partial_reasons(report)
    assert reasons[0] == ("a shard (1-of-2) of a sharded run: verify the report `ray-conformance merge` "
                          "makes of all its shards")
    assert is_partial(report["selection"])


@pytest.mark.parametrize("field, value", [("plan", "abc"), ("plan", [[1, None], 5]), ("core", 7), ("index", "1"),
                                          ("count", None)])
def test_a_hand_edited_shard_record_is_a_problem_never_a_traceback(field: str, value: Any) -> None:
    def damage(r: dict[str, Any]) -> None:
        r["selection"]["shard"][field] = value
    got = problems([shard(1), edited(shard(2), damage)])
    assert got, field


# ------------------------------------------------------------------ the node selection (issue 48 item 2)

def _nodes(record: dict[str, Any] | None) -> Any:
    return lambda r: r["selection"].__setitem__("nodes", record)


def test_shards_of_one_node_choice_merge_and_carry_it() -> None:
    sample = {"mode": "sample", "seed": 7, "size": 1}
    found, none = mg.shard_set_problems([edited(shard(1), _nodes(sample)), edited(shard(2), _nodes(sample))], POLICY)
    assert none == []
    assert mg.merged_selection(found, mg.merged_checks(found), {1: "a" * 64, 2: "b" * 64})["nodes"] == sample


@pytest.mark.parametrize("other", [{"mode": "sample", "seed": 8, "size": 1}, {"mode": "all"},
                                   {"mode": "sample", "seed": 7, "size": 2}, None])
def test_shards_with_another_node_mode_or_seed_are_refused_in_one_line(other: Any) -> None:
    got = problems([edited(shard(1), _nodes({"mode": "sample", "seed": 7, "size": 1})), edited(shard(2), _nodes(other))])
    assert got[0].startswith("selection.nodes: shard 2-of-2 ran with nodes ") and got[0].endswith(
        "every shard needs the same --nodes and --node-seed"), got
    assert "\n" not in got[0]
