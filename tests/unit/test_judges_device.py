"""The device judges' subtler rules: the contract evidence is the probe, compacted without
changing what its problems_* functions find; forged or implausible evidence is refused; the host
checks' records are capped with what decides kept. Pure: no Ray."""
from __future__ import annotations

import copy
from typing import Any

from judged import MANIFEST, PASSING
from judged.device import ENV_VAR, TRIPS, VALIDATE, WARNING, detection, observed, ok, probe, with_

from conformance.areas.device import evidence
from conformance.areas.device.contract import problems_round_trip, problems_types
from conformance.report import judges
from signing_support import suite


def judged(cid: str, metrics: Any, manifest: Any = None) -> judges.Verdict:
    check = suite().checklist.by_id()[cid]
    return judges.judge(check, metrics, MANIFEST if manifest is None else manifest)


def raw_probe() -> dict[str, Any]:
    """A probe as contract_probe writes it: tracebacks, the labels call, long reprs."""
    p = probe(validate=VALIDATE, unset_get=ok(None), round_trips=TRIPS)
    p["methods"]["get_current_node_accelerator_labels"] = ok({"ray.io/accelerator-type": "NPU-X1"})
    p["methods"]["get_current_node_num_accelerators"] = {"ok": False, "error": "RuntimeError: driver gone",
                                                         "traceback": "Traceback ...\n" * 200}
    p["round_trips"][1]["get"] = ok([1, 3])
    p["methods"]["get_current_node_additional_resources"] = ok({f"k{i}": "x" * 50 for i in range(40)})
    return p


def test_compact_evidence_finds_what_the_raw_probe_finds() -> None:
    raw = raw_probe()
    for cid, problems_of in (("DP-001", problems_types), ("DP-003", problems_round_trip)):
        record = evidence.contract_evidence(raw, cid)
        verdict = judged(cid, {"probe": record})
        assert verdict.outcome == "fail"
        found, raw_found = problems_of(record), problems_of(raw)
        assert found and set(found) <= set(raw_found) and "; ".join(found) == verdict.reason, (cid, verdict)
        assert len(found) == len(raw_found) - (40 - evidence.ITEMS_CAP if cid == "DP-001" else 0)
    compact = evidence.contract_evidence(raw, "DP-001")
    assert "traceback" not in compact["methods"]["get_current_node_num_accelerators"]
    assert "get_current_node_accelerator_labels" not in compact["methods"]
    assert "round_trips" not in compact and "unset_get" not in compact   # DP-001 reads neither
    extra = compact["methods"]["get_current_node_additional_resources"]["result"]
    assert len(extra["items"]) == evidence.ITEMS_CAP and len(extra["repr"]) == evidence.REPR_CAP
    assert extra["items_dropped"] == 40 - evidence.ITEMS_CAP


def test_a_contract_check_without_a_parts_row_records_the_basic_methods() -> None:
    """A new contract check whose judge reads only what every one reads needs no CONTRACT_PARTS
    row (the add-a-check recipe walked in a clone met a KeyError there: docs/architecture.md)."""
    raw = raw_probe()
    compact = evidence.contract_evidence(raw, "DP-999")
    assert set(compact["methods"]) == set(evidence.BASIC_METHODS)
    assert not {"validate", "round_trips", "unset_get"} & set(compact)


def test_capping_a_long_answer_hides_no_wrong_entry() -> None:
    """One wrong entry among many right ones is kept, so the capped record fails as the live one."""
    many = {f"k{i}": 1.0 for i in range(40)}
    many["k39"] = "lots"
    raw = probe(validate=VALIDATE)
    raw["methods"]["get_current_node_additional_resources"] = ok(many)
    verdict = judged("DP-001", {"probe": evidence.contract_evidence(raw, "DP-001")})
    assert verdict.outcome == "fail" and "'k39'" in (verdict.reason or "")


def test_a_type_name_beside_a_value_of_another_type_is_an_error() -> None:
    m = copy.deepcopy(PASSING["DP-002"])
    m["probe"]["methods"]["get_resource_name"]["result"]["value"] = 7     # "str" holding an int
    assert judged("DP-002", m).outcome == "error"
    m = with_(PASSING["DP-017"], "probe/get_current_node_num_accelerators/value", 0.0)   # "int" holding a float
    assert judged("DP-017", m).outcome == "error"
    m = with_(PASSING["DP-017"], "probe/get_current_node_num_accelerators/seconds", -1)
    assert judged("DP-017", m).outcome == "error"


def test_a_visible_ids_check_without_a_variable_is_no_pass() -> None:
    """The live check is not applicable there; a report that calls it a pass is refused."""
    for cid in ("DP-003", "DP-004", "DP-005", "DP-016"):
        m = with_(PASSING[cid], "probe/env_var", None)
        verdict = judged(cid, m)
        assert verdict.outcome == "fail" and "not applicable" in (verdict.reason or ""), cid


def test_every_quantity_the_manifest_declares_is_judged() -> None:
    more = copy.deepcopy(MANIFEST)
    more["accelerator"]["quantities"] = {"valid": [0.5, 1, 2, 4], "invalid": [1.5, 0.25]}
    assert "4.0" in (judged("DP-001", PASSING["DP-001"], more).reason or "")
    assert "quantity 4.0 was not probed" in (judged("DP-013", PASSING["DP-013"], more).reason or "")
    assert "quantity 0.25 was not probed" in (judged("DP-014", PASSING["DP-014"], more).reason or "")
    # a valid quantity above the devices per node is validated but not run
    big = copy.deepcopy(MANIFEST)
    big["accelerator"]["quantities"] = {"valid": [1, 8], "invalid": [1.5]}
    m = with_(PASSING["DP-013"], "probe/validate/8.0", ok((True, None)))
    assert judged("DP-013", m, big).outcome == "pass"


def test_a_malformed_quantities_block_of_an_embedded_manifest_is_an_error_never_a_traceback() -> None:
    """verify judges the manifest a report embeds, which nothing has held to the schema yet: a
    quantities block of another shape is missing evidence (the fuzz of test_signing_properties
    met a list there: AttributeError out of verify)."""
    for quantities in ([1, 2], {"valid": 1}, {"invalid": ["1.5"]}, {"valid": [float("nan")]}, {"valid": [True]}):
        odd = copy.deepcopy(MANIFEST)
        odd["accelerator"]["quantities"] = quantities
        for cid in ("DP-001", "DP-013", "DP-014"):
            verdict = judged(cid, PASSING[cid], odd)
            assert verdict.outcome == "error" and "accelerator.quantities" in (verdict.reason or ""), (quantities, cid, verdict)


def test_the_manifest_decides_what_a_pass_must_show() -> None:
    bare = copy.deepcopy(MANIFEST)
    del bare["accelerator"]["quantities"], bare["accelerator"]["hosts"], bare["accelerator"]["noset_env_var"]
    for cid in ("DP-014", "DP-017", "DP-018", "DP-020"):   # not applicable under it: no pass
        verdict = judged(cid, PASSING[cid], bare)
        assert verdict.outcome == "fail" and "not applicable" in (verdict.reason or ""), (cid, verdict)
    two = copy.deepcopy(MANIFEST)
    two["accelerator"]["expected"]["devices_per_node"] = 2
    assert judged("DP-006", PASSING["DP-006"], two).outcome == "fail"       # 4 advertised, 2 declared
    assert judged("DP-015", PASSING["DP-015"], two).outcome == "fail"       # needs 3 devices per node
    other = copy.deepcopy(MANIFEST)
    other["accelerator"]["expected"]["accelerator_type"] = "NPU-X2"
    assert judged("DP-007", PASSING["DP-007"], other).outcome == "fail"
    three = copy.deepcopy(MANIFEST)
    three["cluster"]["nodes"] = 3
    assert "records 2 node(s)" in (judged("DP-006", PASSING["DP-006"], three).reason or "")


def test_host_without_device_on_a_vendor_cluster_without_such_a_node_judges_the_probe() -> None:
    m = {"probe": detection(), "resource": "NPU", "live": "the cluster has no node without devices; only the probe ran"}
    check = suite().checklist.by_id()["DP-017"]
    assert judges.judge(check, m, MANIFEST, remote=True).outcome == "pass"
    # the hatch claimed on a cluster the suite started (it has such a node): the node's evidence is missing
    assert judged("DP-017", m).outcome == "fail"
    assert judged("DP-017", {**m, "probe": detection(count=2)}).outcome == "fail"


def test_the_warning_rule_follows_the_param() -> None:
    quiet = {"faults": ["library_error", "unknown_device"],
             "probes": {"library_error": detection(), "unknown_device": detection(count=4)}}
    check = suite().checklist.by_id()["DP-018"]
    assert judges.judge(check, quiet, MANIFEST).outcome == "fail"
    assert judges.judge(check, quiet, MANIFEST, params={**check.params, "require_warning": False}).outcome == "pass"
    assert judges.judge(check, quiet, MANIFEST, params={**check.params, "require_warning": "yes"}).outcome == "error"


def test_observed_records_keep_errors_and_warnings_first() -> None:
    info = [{"level": "WARNING", "logger": "x", "message": f"w{i}"} for i in range(8)]
    err = {"level": "ERROR", "logger": "x", "message": "boom"}
    kept = evidence.compact_observed(observed(0, records=info + [err]))
    assert kept["records"][0] == err and len(kept["records"]) == evidence.RECORDS_CAP
    assert kept["records_dropped"] == 9 - evidence.RECORDS_CAP
    m = with_(PASSING["DP-017"], "probe/get_current_node_num_accelerators", kept)
    assert "logged ERROR" in (judged("DP-017", m).reason or "")
    assert evidence.compact_detection(detection(records=[WARNING]))["get_current_node_num_accelerators"]["records"] == [WARNING]


def test_an_error_text_keeps_the_plugins_message() -> None:
    message = "NPU quantity 1.5 is invalid"
    exc = ValueError("x" * 2000 + message + "y" * 2000)
    text = evidence.error_text(exc, message)
    assert message in text and len(text) < 2 * evidence.ERROR_CAP
    assert evidence.error_text(ValueError("short")) == "ValueError: short"


def test_a_task_state_is_recorded_as_the_judges_read_it() -> None:
    state = {"pid": 1, "node_id": "n" * 56, "env_set": True, "env_value": "1", "assigned": ["1"],
             "manager_view": "raised RuntimeError: x", "labels": {"a": "b"}}
    assert evidence.seen(state) == {"env_set": True, "env_value": "1", "assigned": ["1"]}
    calls = [evidence.seen(state, manager_view=True)] * 6
    verdict = judged("DP-010", {"calls_made": 6, "calls": calls, "resource": "NPU"})
    assert verdict.outcome == "fail" and "raised RuntimeError" in (verdict.reason or "")
    assert ENV_VAR   # the evidence's variable is the one its round trips name


def test_verify_judges_the_live_hatch_by_the_recorded_command_line() -> None:
    """Which cluster the run was on reaches the judge from the run (verify: the recorded
    --conformance-ray-address), never from the evidence: the same DP-017 record is a pass on the
    vendor's own cluster and a fail on a cluster the suite started."""
    from conformance.signing.evidence import evidence_problems

    check = suite().checklist.by_id()["DP-017"]
    m = {"probe": detection(), "resource": "NPU", "live": "the cluster has no node without devices; only the probe ran"}
    entry = {"id": "DP-017", "outcome": "pass", "params": check.params, "metrics": m}
    local, _ = evidence_problems([entry], suite().checklist, MANIFEST, remote=False)
    remote, _ = evidence_problems([entry], suite().checklist, MANIFEST, remote=True)
    assert any("DP-017 claims pass but its evidence gives fail" in p for p in local), local
    assert not any("its evidence gives" in p for p in remote), remote
