"""Issue 43, held out for transport and performance: the sizes, counts and references the release
and the manifest fix, and the size knob (RAY_CONFORMANCE_TRANSPORT_MAX_BYTES) in the run record.

The classes: a count or size held with >= (or not at all) where the params fix it exactly; absent
evidence read as "not measured"; a capped run passed off as one of the release's sizes.
"""
from __future__ import annotations

import copy
from typing import Any

import pytest
from judged import MANIFEST, PASSING, manifest
from judged import performance as pf
from judged import transport as tr
from judged import workload as wl

from conformance.catalog.data import load_checklist
from conformance.catalog.selection import partial_reasons, run_environment, selection_record
from conformance.rdt.config import DEFAULT_MAX_BYTES, MAX_BYTES_ENV, recorded_max_bytes
from conformance.rdt.payloads import ALL_DTYPES, SHAPES
from conformance.report import judges
from conformance.signing.evidence import size_cap_problems

CHECKS = {c.id: c for c in load_checklist().checks}
CAP = {"env": MAX_BYTES_ENV, "value": "4KiB", "bytes": 4096}


def outcome(cid: str, metrics: dict[str, Any], man: dict[str, Any] | None = None) -> str:
    return judges.judge(CHECKS[cid], metrics, MANIFEST if man is None else man).outcome


# ------------------------------------------------------------------------------ the size knob
def test_the_release_size_unless_the_record_names_the_knob() -> None:
    assert recorded_max_bytes({}) == DEFAULT_MAX_BYTES
    assert recorded_max_bytes({"size_cap": CAP}) == 4096
    for wrong in ({**CAP, "bytes": 1024}, {**CAP, "env": "OTHER"}, {**CAP, "value": "tiny"}, "4KiB"):
        with pytest.raises(ValueError):
            recorded_max_bytes({"size_cap": wrong})


def test_the_run_record_names_the_knob_and_verify_holds_the_checks_to_it() -> None:
    assert run_environment({}) is None
    env = run_environment({MAX_BYTES_ENV: "4KiB", "OTHER": "x"})
    assert env == {MAX_BYTES_ENV: "4KiB"}
    assert selection_record([], environment=env)["environment"] == env
    assert "environment" not in selection_record([])
    capped = [{"id": "TR-004", "metrics": {"size_cap": CAP}}, {"id": "TR-001", "metrics": {}}]
    problems, note = size_cap_problems(capped, env)
    assert problems == [] and "TR-004" in note and "256 MiB" in note
    problems, _ = size_cap_problems(capped, {})                       # a cap the run record does not show
    assert problems and "TR-004" in problems[0]
    problems, _ = size_cap_problems(capped, {MAX_BYTES_ENV: "16KiB"})  # another value
    assert problems


def test_a_capped_run_is_not_a_certification_run() -> None:
    sized = [{"id": "TR-004", "metrics": {"size_cap": {**CAP, "value": "4MiB", "bytes": 4 << 20}}, "tests": ["t"]}]
    report = {"partial": False, "checks": sized, "selection": {"args": [], "environment": {MAX_BYTES_ENV: "4MiB"}}}
    reasons = partial_reasons(report)
    assert any(MAX_BYTES_ENV in r and "TR-004" in r for r in reasons), reasons
    assert partial_reasons({**report, "selection": {"args": []}}) == []
    # the knob set where it sized no check (no transport declared): the release's measurements
    assert partial_reasons({**report, "checks": [{"id": "DP-001", "metrics": {}, "tests": ["t"]}]}) == []


@pytest.mark.parametrize("cid", ["TR-004", "PF-001"])
def test_a_capped_record_passes_only_with_its_knob(cid: str) -> None:
    capped = {"TR-004": {**tr.ONE, "max_bytes": 4096, "cases": 1, "wrong": 0, "bytes": 4096, "size_cap": CAP},
              "PF-001": pf.PF001_CAPPED}[cid]
    assert outcome(cid, capped) == "pass"
    assert outcome(cid, {k: v for k, v in capped.items() if k != "size_cap"}) != "pass"


def _cap(value: str, nbytes: int) -> dict[str, Any]:
    return {"env": MAX_BYTES_ENV, "value": value, "bytes": nbytes}


def _workload_capped(cid: str) -> dict[str, Any]:
    """WL-001/WL-004's state and WL-003's activations as a run capped below the param sizes them."""
    from conformance.areas.workload import pipeline

    if cid == "WL-003":
        pipe = {**wl.PIPE, "activation_bytes": pipeline.plan_for("cpu", 3, 8, 5, 64 * 1024).activation_bytes}
        return {"devices": {"cpu": pipe}, "size_cap": _cap("64KiB", 64 * 1024)}
    base, blocks = (wl.SYNC, 8) if cid == "WL-001" else (wl.LOST, 4)
    return {"devices": {"cpu": {**base, **wl.state(MIB, blocks)}}, "size_cap": _cap("1MiB", MIB)}


MIB = 1 << 20


@pytest.mark.parametrize("cid", ["WL-001", "WL-003", "WL-004"])
def test_a_workload_sized_by_the_knob_passes_only_with_its_record(cid: str) -> None:
    """The workloads the size knob sizes (min(param, knob)) record it as the transport checks do:
    their judges hold the sizes to the recorded cap, every other record to the release's; a cap
    record that is not the knob's, or a cap above the size moved, is a fail."""
    capped = _workload_capped(cid)
    assert outcome(cid, capped) == "pass"
    assert outcome(cid, {k: v for k, v in capped.items() if k != "size_cap"}) == "fail"     # the release's size
    assert outcome(cid, {**capped, "size_cap": {**capped["size_cap"], "bytes": 4096}}) == "fail"   # not the knob's
    assert outcome(cid, {**capped, "size_cap": _cap("16MiB", 16 * MIB)}) == "fail"   # a cap that did not size it
    assert outcome(cid, {**wl.PASSING[cid], "size_cap": _cap("256MiB", 256 * MIB)}) == "pass"   # a cap above the param
    # verify holds the recorded cap to the run record, and names the capped check
    problems, note = size_cap_problems([{"id": cid, "metrics": capped}], {MAX_BYTES_ENV: capped["size_cap"]["value"]})
    assert problems == [] and cid in note
    assert size_cap_problems([{"id": cid, "metrics": capped}], {})[0]


# ------------------------------------------------------------------------------ transport
TWO = manifest()
TWO["transport"] = {"name": "NPUXFER", "devices": ["npu", "cpu"]}


def _tr001_two_types(unsupported: dict[str, str], core: list[str] | None = None) -> dict[str, Any]:
    dtypes = [d for d in ALL_DTYPES if d not in unsupported]
    npu = {"cases": len(dtypes) * len(SHAPES), "wrong": 0, "dtypes": dtypes, "shapes": list(SHAPES),
           "unsupported_by_device": unsupported, "core_dtypes_unsupported": core or []}
    cpu = copy.deepcopy(PASSING["TR-001"])
    cpu.pop("devices")
    return {"devices": ["npu", "cpu"], "npu": npu, "cpu": cpu, "cases": npu["cases"] + cpu["cases"], "wrong": 0}


def test_tr001_what_a_device_may_not_hold_is_plausible() -> None:
    probe = "TypeError: float8_e5m2 is not supported on npu"
    assert outcome("TR-001", _tr001_two_types({"float8_e5m2": probe}), TWO) == "pass"
    assert outcome("TR-001", _tr001_two_types({"float8_e5m2": "not supported here"}), TWO) == "fail"   # not the probe's
    assert outcome("TR-001", _tr001_two_types({"int8": "RuntimeError: no"}, ["int8"]), TWO) == "fail"  # a core dtype
    assert outcome("TR-001", _tr001_two_types({"float8_e5m2": probe}, ["int8"]), TWO) == "fail"       # record disagrees


def test_tr007_endpoints_are_as_many_as_the_node_gives() -> None:
    npu = {"cases": 12, "wrong": 0, "endpoints": 3}
    record = {"devices": ["npu", "cpu"], "npu": npu, "cpu": dict(npu), "cases": 24, "wrong": 0}
    assert outcome("TR-007", record, TWO) == "pass"
    two = copy.deepcopy(TWO)
    two["accelerator"]["expected"]["devices_per_node"] = 2             # a node of two devices: a pair on it
    pair = {"cases": 4, "wrong": 0, "endpoints": 2}
    assert outcome("TR-007", {**record, "npu": pair, "cases": 16}, two) == "pass"
    assert outcome("TR-007", {**record, "npu": pair, "cases": 16}, TWO) == "fail"   # four devices give three
    assert outcome("TR-007", {**record, "cpu": pair, "cases": 16}, two) == "fail"   # the host always gives three


def test_tr019_the_payload_is_the_params_on_the_first_type_and_the_smallest_after() -> None:
    scenario = {k: v for k, v in PASSING["TR-019"].items() if k not in ("devices", "transport", "waits")}
    scenario["scenario"] = dict(scenario["scenario"], excluded_s=2.0)   # the two types' exclusions within the waits
    record = {"devices": ["npu", "cpu"], "transport": PASSING["TR-019"]["transport"], "waits": PASSING["TR-019"]["waits"],
              "npu": dict(scenario), "cpu": dict(scenario, payload_bytes=4096), "step_count": 2}
    assert outcome("TR-019", record, TWO) == "pass"
    assert outcome("TR-019", {**record, "cpu": dict(scenario, payload_bytes=1024)}, TWO) == "fail"
    assert outcome("TR-019", {**record, "npu": dict(scenario, payload_bytes=4096)}, TWO) == "fail"


def test_tr013_judges_the_whole_series() -> None:
    mib = 1 << 20
    def verdict(series: list[int]) -> str:
        return outcome("TR-013", tr._growth({"source.held_bytes": series}))
    assert verdict([0, 0, 0, 0, 0]) == "pass"
    assert verdict([150 * mib, -150 * mib, 0, 0, 0]) == "pass"           # held a round, given back
    assert verdict([0, 0, 0, 0, 150 * mib]) == "pass"                    # the last round may still hold its buffers
    assert verdict([0, 0, 60 * mib, 60 * mib, 60 * mib]) == "fail"       # a leak of the last three rounds
    assert verdict([0, 0, 0, 512 * mib, 512 * mib]) == "fail"


# ------------------------------------------------------------------------------ performance
def test_pf004_the_matrix_has_the_declared_clusters_endpoints() -> None:
    one = manifest(nodes=1)
    one["accelerator"]["expected"]["devices_per_node"] = 2
    assert outcome("PF-004", pf._matrix(["n0:0", "n0:1"]), one) == "pass"
    assert outcome("PF-004", pf._matrix(["n0:0", "n0:1", "n1:0"]), one) == "fail"
    assert outcome("PF-004", pf._matrix([f"n{k % 2}:{k // 2}" for k in range(6)])) == "fail"   # 6 of 8


def test_pf002_a_device_transport_is_judged_against_its_slowest_declared_link() -> None:
    man = copy.deepcopy(MANIFEST)
    man["transport"] = {"name": "NPUXFER", "devices": ["npu"]}
    man["topology"]["expected"]["links"] = [{"a": "0", "b": "1", "kind": "x", "min_bandwidth_gbps": 10.0},
                                            {"a": "1", "b": "2", "kind": "x", "min_bandwidth_gbps": 20.0}]
    declared = {k: v for k, v in PASSING["PF-002"].items() if k != "reference_trials_gbps"}
    assert outcome("PF-002", declared, man) == "pass"
    assert outcome("PF-002", dict(declared, reference_gbps=20.0, achieved_fraction=0.25), man) == "fail"


def test_legacy_releases_keep_the_judges_they_had() -> None:
    """Reports of releases before declared judges recorded the medians alone: judged as they were."""
    for cid in ("PF-002", "PF-003"):
        medians = {k: v for k, v in PASSING[cid].items() if not k.endswith("trials_gbps") and k not in ("bytes", "largest_bytes")}
        legacy = judges.area_judges(cid)[judges.LEGACY[cid]]
        assert judges.run_judge(legacy, cid, medians, CHECKS[cid].params, MANIFEST).outcome == "pass"
        assert outcome(cid, medians) != "pass"
