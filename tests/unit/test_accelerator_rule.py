"""The accelerator-exercised rule (conformance.rdt.accelerator_rule) and the records a judge
requires derived from the manifest and the release's params, on the real records of a 2-node
simulated certification (tests/support/real_run_data18: release 0.1.0+data.18, tier stable), each
with one red-team edit (redteam/FINDINGS.md, classes 1 and 2): the honest record passes, the
edited one fails. Judged under the params the run recorded, as verify judges it under its
release's. Pure: no Ray."""
from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import pytest

from conformance.areas.transport import judges as TJ
from conformance.rdt import accelerator_rule as rule
from conformance.report import judges
from conformance.signing import evidence
from conformance.timing.owned import per_type_wait_problems
from signing_support import suite

REAL = json.loads((Path(__file__).resolve().parents[1] / "support" / "real_run_data18" / "checks.json").read_text())
ACC = "simacc"


def real(cid: str) -> dict[str, Any]:
    return copy.deepcopy(next(c for c in REAL["checks"] if c["id"] == cid))


def manifest() -> dict[str, Any]:
    return copy.deepcopy(REAL["manifest"])


def verdict(entry: dict[str, Any], man: dict[str, Any] | None = None) -> judges.Verdict:
    check = suite().checklist.by_id()[entry["id"]]
    return judges.judge(check, entry["metrics"], manifest() if man is None else man, params=entry["params"])


def hide_type(entry: dict[str, Any], why: str = "ValueError: the device cannot hold this payload") -> dict[str, Any]:
    """The red team's edit (redteam/attacks.py _hide_type): the accelerator's record replaced by
    "not applicable on simacc", its share of the totals and its scenarios removed."""
    m = entry["metrics"]
    m["devices"] = [d for d in m["devices"] if d != ACC]
    sub = m.pop(ACC, None)
    m.setdefault("not_applicable_on", {})[ACC] = why
    for k in ("cases", "wrong", "transfers", "freed_objects", "step_count"):
        if k in m and isinstance(sub, dict) and k in sub and isinstance(m[k], (int, float)):
            m[k] = m[k] - sub[k]
    if isinstance(m.get("scenarios"), dict):
        m["scenarios"] = {k: v for k, v in m["scenarios"].items() if not k.endswith(f"on {ACC}")}
    return entry


TRANSPORT = sorted(c["id"] for c in REAL["checks"] if c["id"].startswith("TR-") and ACC in c["metrics"].get("devices", []))


# ------------------------------------------------------------------ the rule itself
def test_the_accelerator_is_the_first_declared_type_that_is_not_the_host() -> None:
    assert rule.accelerator_type(["cpu", "npu", "xpu"]) == "npu"
    assert rule.accelerator_type(["cpu"]) is None
    man = manifest()
    man["collective"]["rdt_devices"] = ["cpu", "npu"]
    assert rule.accelerator_types(man) == {"simacc", "npu"}


@pytest.mark.parametrize("reason, holds_when", [
    (rule.endpoints_reason(ACC, 2), {"devices_per_node": 1}),
    (rule.actors_reason(ACC, 3, 2.0, "SIMACC"), {"devices_per_node": 2}),
    (rule.peers_reason(ACC, 2, "SIMACC"), {"devices_per_node": 1}),
    (rule.one_node_reason(ACC, "SIMACC"), {"nodes": 1}),
    (rule.members_reason(f"RDT over SIMCOLL on {ACC}", 2, "SIMACC", [1.0]), {"devices_per_node": 1, "nodes": 1}),
])
def test_each_reason_the_suite_gives_holds_only_where_the_manifest_gives_it(reason: str, holds_when: dict[str, int]) -> None:
    man = manifest()                                              # 2 nodes of 4 units: room for every check
    assert rule.recomputed(reason, ACC, man) is None
    assert rule.coverage_problem([ACC, "cpu"], ["cpu"], {ACC: reason}, man) is not None
    if "devices_per_node" in holds_when:
        man["accelerator"]["expected"]["devices_per_node"] = holds_when["devices_per_node"]
    if "nodes" in holds_when:
        man["cluster"]["nodes"] = holds_when["nodes"]
        man["cluster"]["node_env"] = man["cluster"]["node_env"][:1]
    assert rule.recomputed(reason, ACC, man) is not None
    assert rule.coverage_problem([ACC, "cpu"], ["cpu"], {ACC: reason}, man) is None
    if ACC in reason:
        assert rule.recomputed(reason.replace(ACC, "npu"), ACC, man) is None  # a reason about another type


def test_a_node_the_manifest_leaves_without_devices_does_not_count_as_a_second_one() -> None:
    man = manifest()
    man["cluster"]["node_env"][1]["SIMACC_NUM_DEVICES"] = "0"       # a CPU node (tests/manifests/topology-3node.yaml)
    assert rule.recomputed(rule.one_node_reason(ACC, "SIMACC"), ACC, man) is not None


@pytest.mark.parametrize("why", ["ValueError: the device cannot hold this payload", "", "   ",
                                 "needs 2 endpoints with a simacc device on one node; trust me"])
def test_any_other_reason_leaves_the_accelerator_unexercised(why: str) -> None:
    problem = rule.coverage_problem([ACC, "cpu"], ["cpu"], {ACC: why}, manifest())
    assert problem is not None and rule.RULE in problem


def test_the_host_keeps_its_reasons_and_a_manifest_of_the_host_alone_has_no_accelerator() -> None:
    assert rule.coverage_problem([ACC, "cpu"], [ACC], {"cpu": "the cluster has one node; needs two"}, manifest()) is None
    assert rule.coverage_problem(["cpu"], ["cpu"], {}, manifest()) is None


# ------------------------------------------------------------------ class 1: the accelerator declared not applicable
def test_the_real_records_pass() -> None:
    for entry in REAL["checks"]:
        if entry["outcome"] == "pass" and judges.judge_for(suite().checklist.by_id()[entry["id"]]) is not None:
            assert verdict(entry).outcome == "pass", (entry["id"], verdict(entry))


@pytest.mark.parametrize("cid", TRANSPORT)
def test_x02_a_transport_check_not_applicable_on_the_accelerator_fails(cid: str) -> None:
    v = verdict(hide_type(real(cid)))
    assert v.outcome == "fail" and "accelerator's type simacc was not exercised" in str(v.reason), v


def test_x02_a_reason_the_manifest_gives_keeps_the_pass() -> None:
    entry = hide_type(real("TR-001"), why=rule.endpoints_reason(ACC, 2))
    assert verdict(entry).outcome == "fail"                       # 4 units per node hold a pair
    man = manifest()
    man["accelerator"]["expected"]["devices_per_node"] = 1
    assert verdict(entry, man).outcome == "pass"


@pytest.mark.parametrize("why", ["ValueError: the device cannot hold this payload", ""])   # R02, R02b
def test_r02_a_recovery_transfer_not_applicable_on_the_accelerator_fails(why: str) -> None:
    v = verdict(hide_type(real("FR-013"), why))
    assert v.outcome == "fail" and "accelerator's type simacc was not exercised" in str(v.reason), v


def test_c07b_rdt_over_the_backend_declared_on_the_accelerator_and_not_applicable_there_fails() -> None:
    man = manifest()
    man["collective"]["rdt_devices"] = ["cpu", ACC]
    for cid in ("CC-011", "CC-012"):
        entry = real(cid)
        old = entry["metrics"]
        new = {"devices": ["cpu"], "not_applicable_on": {ACC: "ValueError: the backend cannot move simacc tensors"},
               "cpu": {k: v for k, v in old.items() if k not in ("devices", "waits")}}
        new.update({k: old[k] for k in ("transfers", "error_bound_s", "waits") if k in old})
        honest = copy.deepcopy(new)
        honest["not_applicable_on"] = {ACC: rule.members_reason(f"RDT over SIMCOLL on {ACC}", 2, "SIMACC", [0.0, 0.0])}
        entry["metrics"] = new
        v = verdict(entry, man)
        assert v.outcome == "fail" and "accelerator's type simacc" in str(v.reason), (cid, v)
        entry["metrics"] = honest                                 # the check's own reason, which 4 units contradict
        assert verdict(entry, man).outcome == "fail"


def test_verify_holds_every_record_to_the_rule_whatever_its_judge() -> None:
    entry = hide_type(real("TR-001"))
    check = suite().checklist.by_id()["TR-001"]
    found = evidence.entry_problems(entry, check, manifest())
    assert any("claims pass but the accelerator's type simacc was not exercised" in p for p in found), found
    assert not [p for p in evidence.entry_problems(real("TR-001"), check, manifest()) if "accelerator" in p]


# ------------------------------------------------------------------ class 2: a record the judge requires dropped
def test_x05_the_device_memory_series_of_a_device_type_is_required() -> None:
    entry = real("TR-013")
    growth = entry["metrics"]["growth_per_round_bytes"]
    for k in [k for k in growth if k.startswith("simacc:") and k.endswith("device_used_bytes")]:
        del growth[k]
    v = verdict(entry)
    assert v.outcome != "pass" and "device_used_bytes is missing" in str(v.reason), v


def test_r01_a_transfer_checks_scenario_on_each_exercised_type_is_required() -> None:
    entry = real("FR-012")
    del entry["metrics"]["scenarios"][next(k for k in entry["metrics"]["scenarios"] if k.endswith(f"on {ACC}"))]
    v = verdict(entry)
    assert v.outcome == "fail" and "one on each type it exercised" in str(v.reason), v


def test_c05_cc008_holds_every_member_the_cycles_run_in() -> None:
    entry = real("CC-008")
    mem = entry["metrics"]["memory"]
    assert len(mem["growth_mib"]) == len(mem["held_mib"][0])      # the real record: one figure per member
    mem["held_mib"] = [row[:1] for row in mem["held_mib"]]
    mem["growth_mib"] = mem["growth_mib"][:1]
    v = verdict(entry)
    assert v.outcome == "fail" and "the cycles run in 2" in str(v.reason), v


def test_r10_r11_fr006_holds_the_manifests_nodes() -> None:
    dropped = real("FR-006")
    for side in ("before", "after"):
        dropped["metrics"][side] = dropped["metrics"][side][:1]
    v = verdict(dropped)
    assert v.outcome == "fail" and "cluster.nodes = 2" in str(v.reason), v
    zeroed = real("FR-006")
    for side in ("before", "after"):
        zeroed["metrics"][side][1].update(devices=0.0, types=[])
    v = verdict(zeroed)
    assert v.outcome == "fail" and "1 node(s) advertise devices" in str(v.reason), v
    cpu_node = manifest()                                         # a node the manifest leaves without devices
    cpu_node["cluster"]["node_env"][1]["SIMACC_NUM_DEVICES"] = "0"
    assert verdict(zeroed, cpu_node).outcome == "pass"


def test_g25_a_plugin_wait_on_one_type_is_required_on_every_type() -> None:
    entry = real("WL-003")
    m = entry["metrics"]
    assert per_type_wait_problems(m["waits"], m["devices"]) == []
    m["waits"]["each"] = [w for w in m["waits"]["each"] if not (w["owner"] == "plugin" and ACC in w["what"])]
    m["waits"]["count"] = len(m["waits"]["each"])
    found = per_type_wait_problems(m["waits"], m["devices"])
    assert found and "'pipeline on simacc'" in found[0]
    check = suite().checklist.by_id()["WL-003"]
    assert any("no plugin wait 'pipeline on simacc'" in p for p in evidence.entry_problems(entry, check, manifest()))


def test_x04_tr005s_current_device_round_skipped_only_for_a_reason_the_manifest_gives() -> None:
    entry = real("TR-005")
    entry["metrics"][ACC]["current_device"] = {"not_run": "the node offers one device to an actor"}
    assert verdict(entry).outcome == "fail"
    entry["metrics"][ACC]["current_device"] = {"not_run": TJ.current_units_not_run("SIMACC", 2)}
    assert verdict(entry).outcome == "fail"                       # 4 units leave 2 beside the pair
    man = manifest()
    man["accelerator"]["expected"]["devices_per_node"] = 3
    assert verdict(entry, man).outcome == "pass"
    entry["metrics"][ACC]["current_device"] = {"not_run": TJ.CURRENT_IN_GROUP}
    assert verdict(entry).outcome == "fail"                       # SIMXFER is no built-in collective transport
    man = manifest()
    man["transport"] = {"name": "GLOO", "devices": [ACC, "cpu"]}
    v = verdict(entry, man)
    assert "current device" not in str(v.reason) and "two devices was not run" not in str(v.reason)


def test_x03_a_dtype_recorded_unsupported_in_tr001_alone_contradicts_tr005s_record_of_the_probe() -> None:
    from conformance.signing.same_probe import dtype_probe_problems

    checks = [real("TR-001"), real("TR-005")]
    assert dtype_probe_problems(checks) == []
    s = checks[0]["metrics"][ACC]
    s["dtypes"] = [d for d in s["dtypes"] if d != "complex64"]
    s.setdefault("unsupported_by_device", {})["complex64"] = "TypeError: complex64 is not supported on simacc"
    s["cases"] -= len(s["shapes"])
    checks[0]["metrics"]["cases"] -= len(s["shapes"])
    assert verdict(checks[0]).outcome == "pass"                  # alone, the device's answer (by design)
    found = dtype_probe_problems(checks)
    assert found and "complex64" in found[0] and "simacc" in found[0]
    assert dtype_probe_problems(checks, merged=True) == []       # shards may come from different runs
