"""The collective judges' subtle rules: a rank's digest of what it held is the program's exactly
when the live judging finds nothing wrong with it (programs.judge), so verify decides the op checks
again from the digests alone. Pure: no Ray."""
from __future__ import annotations

import copy
from typing import Any

from conformance.collective import programs
from conformance.collective.config import ALL_OPS


def faithful(steps: list[dict[str, Any]], ws: int) -> list[list[dict[str, Any]]]:
    """What every rank of a correct backend returns for `steps` (as the members report it)."""
    out: list[list[dict[str, Any]]] = []
    for rank in range(ws):
        row: list[dict[str, Any]] = []
        for s in steps:
            if s["op"] == "barrier":
                row.append({"entered": 0.0, "left": 1.0, "entered_by_exit": ws})
                continue
            want = programs.expected(s, rank, ws)
            mine = programs.values(s.get("seed", 0), rank, s.get("n", 4))
            values: Any = want if want is not None else mine
            # floats as torch reports them (3.0): the digest holds 3.0 and 3 the same
            values = [[float(x) for x in v] for v in values] if s["op"] == "allgather" else [float(x) for x in values]
            row.append({"values": values, "dtype": s["dtype"], "type": s["lib"], "device": s.get("device", "cpu"),
                        "input": mine, "device_index": None, "current_index": None})
        out.append(row)
    return out


def test_digests_agree_with_the_live_judging() -> None:
    ws = 3
    steps = programs.op_matrix(ws, ["float32", "int64"], ["torch", "numpy"], ALL_OPS, 4, seed0=300, barriers=3)
    outputs = faithful(steps, ws)
    assert programs.judge(steps, outputs, ws) == []
    assert programs.held_digests(steps, outputs, ws) == programs.wanted_digests(steps, ws)
    for i, s in enumerate(steps):   # one wrong thing on one rank: the live judge and the digest both see it
        rank = s.get("root", s.get("dst", ws - 1)) if s["op"] != "barrier" else 1
        bad = copy.deepcopy(outputs)
        if s["op"] == "barrier":
            bad[rank][i]["entered_by_exit"] = 1
        elif s["op"] == "allgather":
            bad[rank][i]["values"][0][0] += 1
        else:
            bad[rank][i]["values"][0] += 1
        assert programs.judge(steps, bad, ws), programs.describe(s)
        held = programs.held_digests(steps, bad, ws)
        want = programs.wanted_digests(steps, ws)
        assert [r for r in range(ws) if held[r] != want[r]] == [rank], programs.describe(s)


def test_a_result_on_another_device_or_dtype_changes_the_digest() -> None:
    steps = programs.op_matrix(2, ["float32"], ["torch"], ["allreduce"], 4)
    outputs = faithful(steps, 2)
    for key, value in (("dtype", "float64"), ("device", "simacc"), ("current_index", 1), ("type", "numpy")):
        bad = copy.deepcopy(outputs)
        bad[0][0][key] = value
        assert programs.held_digests(steps, bad, 2)[0] != programs.wanted_digests(steps, 2)[0], key


def test_a_rank_the_contract_says_nothing_about_does_not_count() -> None:
    steps = programs.op_matrix(3, ["float32"], ["torch"], ["reduce"], 4)   # reduce to the last rank
    outputs = faithful(steps, 3)
    outputs[0][0]["values"] = [99.0] * 4      # rank 0 is no root: anything may be left there
    assert programs.held_digests(steps, outputs, 3) == programs.wanted_digests(steps, 3)


def test_isolation_layouts_are_the_checks() -> None:
    assert programs.isolation_layouts(4, 3) == [([0, 1], [0, 1]), ([1, 2, 0], [2, 1, 0]), ([2, 0], [0, 1]),
                                                ([0, 1, 2], [2, 1, 0])]


def test_rdt_records_nest_per_device_type_when_the_block_declares_several() -> None:
    from judged import MANIFEST
    from judged.collective import RDT

    from conformance.rdt.accelerator_rule import members_reason
    from conformance.report import judges
    from signing_support import suite

    check = suite().checklist.by_id()["CC-011"]
    two = copy.deepcopy(MANIFEST)
    two["collective"]["rdt_devices"] = ["cpu", "npu"]
    one = {k: v for k, v in RDT.items() if k not in ("devices", "transfers")}
    nested = {"transfers": 6, "devices": ["cpu", "npu"], "cpu": one, "npu": one}
    assert judges.judge(check, nested, two).outcome == "pass"
    assert judges.judge(check, {**nested, "devices": ["cpu"]}, two).outcome == "fail"      # a type never exercised
    why = members_reason("RDT over GLOO on npu", 2, "NPU", [1.0])    # the check's own reason (need_units)
    skipped = {"transfers": 3, "devices": ["cpu"], "not_applicable_on": {"npu": why}, "cpu": one}
    assert judges.judge(check, skipped, two).outcome == "fail"          # the manifest's 2 nodes of 4 units hold a pair
    two["accelerator"]["expected"]["devices_per_node"], two["cluster"]["nodes"] = 1, 1
    assert judges.judge(check, skipped, two).outcome == "pass"          # one node of one unit: the reason holds
    two["accelerator"]["expected"]["devices_per_node"], two["cluster"]["nodes"] = 4, 2
    assert judges.judge(check, {**nested, "npu": {**one, "one_sided": True}}, two).outcome == "fail"
