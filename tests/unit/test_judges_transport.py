"""The transport area's and PF-001's judges, rule by rule: every declared device type exercised
or recorded not applicable, per-type evidence and its totals, counts the checks fix, what the
driver saw against Ray's semantics, scenario steps and the time left to Ray's machinery, the
sweep against its own trials. Pure: no Ray."""
from __future__ import annotations

import copy
from typing import Any

from judged import MANIFEST, PASSING, manifest

from conformance.areas.transport import judges as J
from conformance.report import judges
from signing_support import suite


def verdict(cid: str, metrics: Any, man: Any = None) -> judges.Verdict:
    return judges.judge(suite().checklist.by_id()[cid], metrics, MANIFEST if man is None else man)


def two_types() -> dict[str, Any]:
    out = manifest()
    out["transport"] = {"name": "NPUXFER", "devices": ["npu", "cpu"]}
    return out


def nested(cid: str, **per_type: dict[str, Any]) -> dict[str, Any]:
    """PASSING's flat record of `cid` as a run with two declared types records it."""
    flat = {k: v for k, v in PASSING[cid].items() if k != "devices"}
    out: dict[str, Any] = {"devices": ["npu", "cpu"], "npu": copy.deepcopy(flat), "cpu": copy.deepcopy(flat)}
    for d, changes in per_type.items():
        out[d].update(changes)
    for name in ("cases", "wrong"):
        out[name] = sum(out[d][name] for d in ("npu", "cpu"))
    return out


def test_every_declared_type_is_exercised_or_not_applicable_with_a_reason() -> None:
    man = two_types()
    assert verdict("TR-001", nested("TR-001"), man).outcome == "pass"
    only_npu = nested("TR-001")
    only_npu["devices"] = ["npu"]
    del only_npu["cpu"]
    only_npu["cases"], only_npu["wrong"] = only_npu["npu"]["cases"], 0
    v = verdict("TR-001", only_npu, man)
    assert v.outcome == "fail" and "declared device type cpu" in (v.reason or "")
    only_npu["not_applicable_on"] = {"cpu": "needs 2 endpoints with a cpu device on one node"}
    assert verdict("TR-001", only_npu, man).outcome == "pass"
    only_npu["not_applicable_on"] = {"cpu": " "}                       # no reason is no record
    assert verdict("TR-001", only_npu, man).outcome == "fail"


def test_a_type_the_manifest_does_not_declare_is_not_evidence() -> None:
    v = verdict("TR-001", dict(PASSING["TR-001"], devices=["npu"]))
    assert v.outcome == "fail" and "does not declare" in (v.reason or "")


def test_per_type_totals_must_be_the_types_own() -> None:
    record = nested("TR-001", cpu={"wrong": 2, "failures": ["bool/0-d: sha256"]})
    record["wrong"] = 0                                                 # the total hides the cpu failure
    assert verdict("TR-001", record, two_types()).outcome == "fail"


def test_every_failing_type_is_named() -> None:
    bad = {"objects": [{**o, "tensor_device": "x"} for o in PASSING["TR-011"]["objects"]]}
    record = {"devices": ["npu", "cpu"], "cases": 2 * len(J.EXTRACT_CASES),
              "npu": {**{k: v for k, v in PASSING["TR-011"].items() if k != "devices"}, **bad},
              "cpu": {**{k: v for k, v in PASSING["TR-011"].items() if k != "devices"}, **bad}}
    v = verdict("TR-011", record, two_types())
    assert v.outcome == "fail" and "on npu: float32/4-d: tensor_device 'x'" in (v.reason or "") \
        and "on cpu: float32/4-d: tensor_device 'x'" in (v.reason or "")


def test_sidedness_of_a_builtin_is_rays() -> None:
    man = manifest()
    man["transport"] = {"name": "GLOO"}
    v = verdict("TR-009", PASSING["TR-009"], man)                       # one-sided claimed for GLOO
    assert v.outcome == "fail" and "two-sided" in (v.reason or "")
    two_sided = dict(PASSING["TR-009"], one_sided=False, cases=2,
                     driver={J.DRIVER_GET: "ValueError: use _use_object_store", J.DRIVER_GET_STORE: J.RETURNED})
    assert verdict("TR-009", two_sided, man).outcome == "pass"


def test_received_metadata_on_a_device_needs_both_current_devices() -> None:
    man = manifest()
    man["transport"] = {"name": "NPUXFER", "devices": ["npu"]}
    rounds = {f"current_{i}": {"current_device": i, "device_count": 2, "checked": 5, "wrong": 0, "when": "w"} for i in (0, 1)}
    good = dict(PASSING["TR-005"], devices=["npu"], current_device=rounds)
    assert verdict("TR-005", good, man).outcome == "pass"
    not_run = {"not_run": J.current_units_not_run("NPU", 2)}
    assert verdict("TR-005", dict(good, current_device=not_run), man).outcome == "fail"   # 4 units leave room for it
    three = copy.deepcopy(man)
    three["accelerator"]["expected"]["devices_per_node"] = 3
    assert verdict("TR-005", dict(good, current_device=not_run), three).outcome == "pass"
    first = copy.deepcopy(good)
    first["current_device"]["current_0"].update(wrong=5, on_another_device=["float32/2-d <root>: npu:1"])
    v = verdict("TR-005", first, man)
    assert v.outcome == "fail" and "received on another device than the receiver's current" in (v.reason or "")
    forged = copy.deepcopy(good)
    forged["current_device"]["current_1"]["current_device"] = 0         # both rounds on device 0
    assert verdict("TR-005", forged, man).outcome == "fail"
    assert verdict("TR-005", {k: v for k, v in good.items() if k != "current_device"}, man).outcome == "error"


def test_scenario_exclusions_are_bounded_by_the_waits_on_rays_machinery() -> None:
    good = copy.deepcopy(PASSING["TR-018"])
    assert verdict("TR-018", good).outcome == "pass"
    stretched = copy.deepcopy(good)
    stretched["scenario"] = {"elapsed_s": 600.0, "excluded_s": 500.0, "bound_s": 740.0}
    v = verdict("TR-018", stretched)
    assert v.outcome == "fail" and "Ray's machinery" in (v.reason or "")
    no_waits = {k: v for k, v in good.items() if k != "waits"}
    assert verdict("TR-018", no_waits).outcome == "error"


def test_a_wave_given_more_backs_the_time_its_scenario_left_out_as_verify_reads_it() -> None:
    """The judge and verify (signing.ray_seconds) read one rule (timing.owned.seconds_backed): a
    wave given more on a loaded host backs what it used of it even when its own record took less
    than the scenario left out around it (make test-load, session 32: the wave 147 s, granted 360 s
    on a 60 s bound; the starts 24 s and 99 s)."""
    loaded = copy.deepcopy(PASSING["TR-019"])
    loaded.update(all_bound_s=360.0, all_done_s=122.8, scenario={"elapsed_s": 247.6, "excluded_s": 210.0, "bound_s": 450.0})
    loaded["waits"]["each"][0].update(took_s=246.9, granted_s=450.0, excluded_s=210.0)
    loaded["waits"]["each"][1:] = [
        {"owner": "ray", "what": "concurrent transfers", "bound_s": 60.0, "granted_s": 360.0, "took_s": 147.0,
         "verdict": "met", "param": "all_bound_s", "factor": 1.0},
        {"owner": "ray", "what": "4 async actor(s) to start", "bound_s": 120.0, "granted_s": 120.0, "took_s": 24.1,
         "verdict": "met", "factor": 1.0}]
    loaded["waits"]["count"] = 3
    assert verdict("TR-019", loaded).outcome == "pass"           # 210 s > 171 s taken, within the 300 s more
    loaded["scenario"]["excluded_s"] = loaded["waits"]["each"][0]["excluded_s"] = 240.0
    loaded["scenario"]["elapsed_s"] = 230.0
    v = verdict("TR-019", loaded)
    assert v.outcome == "fail" and "to Ray's machinery" in (v.reason or "")   # never more than it spent
    # never more than the waits back either: the wave's 300 s more and the start's 24.1 s back 324.1 s
    loaded["scenario"].update(elapsed_s=400.0, excluded_s=330.0, bound_s=570.0)
    loaded["waits"]["each"][0].update(took_s=399.0, granted_s=570.0, excluded_s=330.0)
    v = verdict("TR-019", loaded)
    assert v.outcome == "fail" and "took 324.1s" in (v.reason or ""), v.reason
    loaded["scenario"]["excluded_s"] = loaded["waits"]["each"][0]["excluded_s"] = 324.5
    assert verdict("TR-019", loaded).outcome == "pass"


def test_a_recorded_failure_is_the_verdict_and_steps_keep_their_bounds() -> None:
    failed = dict(PASSING["TR-016"], failure="[producer-errors] a transfer after the retries ran out: failed")
    v = verdict("TR-016", failed)
    assert v.outcome == "fail" and "a transfer after the retries ran out" in (v.reason or "")
    slow = copy.deepcopy(PASSING["TR-016"])
    slow["steps"][3]["took_s"] = slow["steps"][3]["bound_s"] * J.STEP_READ_SLACK + 1.0   # past the bound and its read slack
    assert verdict("TR-016", slow).outcome == "fail"
    two_sided = copy.deepcopy(PASSING["TR-018"])
    two_sided["transport"]["one_sided"] = False                         # borrowers are one-sided only
    two_sided["steps"] = two_sided["steps"][:len(J.USER_REF_STEPS)]
    two_sided["step_count"] = len(two_sided["steps"])
    assert verdict("TR-018", two_sided).outcome == "pass"


def test_receiver_death_without_abort_needs_a_new_pair() -> None:
    no_abort = copy.deepcopy(PASSING["TR-015"])
    no_abort["transport"]["can_abort"] = False
    assert verdict("TR-015", no_abort).outcome == "fail"                # it records a kept source, not a new pair
    no_abort["steps"] = [s for s in no_abort["steps"] if ":" not in s["step"]] + \
        [{**no_abort["steps"][1], "step": f"{phase}: a transfer between new actors"} for phase in J.RECOVERY_PHASES]
    no_abort["step_count"] = len(no_abort["steps"])
    assert verdict("TR-015", no_abort).outcome == "pass"


def test_sweep_median_of_an_even_number_of_trials() -> None:
    from judged.performance import _size
    sweep = copy.deepcopy(PASSING["PF-001"])
    size = _size([1.9, 1.99, 2.0, 2.01, 2.02, 2.03], [1.5, 1.6, 1.55], 8.0)
    size["median_gbps"] = 2 / (1 / 2.0 + 1 / 2.01)                       # the bandwidth of the middle times' mean
    size["ratio_to_object_store"] = size["median_gbps"] / size["object_store_median_gbps"]
    size["ratio_to_clone"] = size["median_gbps"] / size["clone_median_gbps"]
    sweep["bandwidth"]["4KiB"] = size
    sweep["cv_met_all_sizes"] = all(f["cv_met"] for f in sweep["bandwidth"].values())
    assert verdict("PF-001", sweep).outcome == "pass", verdict("PF-001", sweep)
    short = copy.deepcopy(PASSING["PF-001"])
    short["bandwidth"]["4KiB"]["trials_gbps"] = [1.0, 2.0, 3.0, 4.0, 9.0]   # a CV over max_cv, stopped early
    short["bandwidth"]["4KiB"].update(median_gbps=3.0, min_gbps=1.0, max_gbps=9.0)
    v = verdict("PF-001", short)
    assert v.outcome == "fail" and ("is not its trials'" in (v.reason or "") or "before max_trials" in (v.reason or ""))


def test_sweep_judged_from_a_report_whose_keys_are_sorted() -> None:
    """report.json sorts every object's keys: the sizes' order is the sweep's, never the keys'."""
    import json
    sweep = json.loads(json.dumps(PASSING["PF-001"], sort_keys=True))
    sweep["bandwidth"] = dict(reversed(list(sweep["bandwidth"].items())))
    sweep["verification"] = dict(reversed(list(sweep["verification"].items())))
    assert verdict("PF-001", sweep).outcome == "pass"
