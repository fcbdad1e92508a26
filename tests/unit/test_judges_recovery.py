"""The recovery judges' subtler rules (conformance/areas/recovery/judges.py). Pure: no Ray.

tests/unit/test_judges.py holds every judge to judged.PASSING / judged.FAILING; here: the scenario
bounds the release's params give, the legacy judges kept for releases before declared judges, the
evidence part the live check asks inside its scenario, device types declared vs exercised, and the
reasons the teeth table's rows look for."""
from __future__ import annotations

import copy
from typing import Any

from judged import MANIFEST, manifest
from judged.recovery import IDS, PASSING, holder, on

from conformance.areas.recovery import judges as rj
from conformance.catalog.scenario_bounds import scenario_bound
from conformance.rdt.accelerator_rule import peers_reason
from conformance.report import judges
from signing_support import suite


def check(cid: str) -> Any:
    return suite().checklist.by_id()[cid]


def judged(cid: str, metrics: dict[str, Any], man: Any = None) -> judges.Verdict:
    return judges.judge(check(cid), metrics, MANIFEST if man is None else man)


def passing(cid: str) -> dict[str, Any]:
    return copy.deepcopy(PASSING[cid])


def only_scenario(m: dict[str, Any]) -> dict[str, Any]:
    return next(iter(m["scenarios"].values()))


def test_a_scenario_bound_the_release_does_not_give_fails() -> None:
    m = passing("FR-001")
    given = scenario_bound(check("FR-001"))   # the release's params give it
    only_scenario(m).update(bound_s=given + 1)
    v = judged("FR-001", m)
    assert v.outcome == "fail" and f"more than the {given:g} s" in str(v.reason)
    only_scenario(m)["steps_s"]["excluded_s"] = 1.0   # ... unless it left a second out for Ray's machinery
    assert judged("FR-001", m).outcome == "pass"
    only_scenario(m)["steps_s"]["excluded_s"] = 99.0  # more than the time that passed
    assert judged("FR-001", m).outcome == "fail"


def test_a_transfer_scenario_stretches_by_the_fetch_timeout_the_run_recorded() -> None:
    m = passing("FR-012")
    bound = only_scenario(m)["bound_s"]
    only_scenario(m)["bound_s"] = bound + 10
    assert judged("FR-012", m).outcome == "fail"
    m["transport"]["rdt_fetch_timeout_s"] = 15.0      # the run's fetch timeout was 10 s longer
    assert judged("FR-012", m).outcome == "pass"


def test_a_scenario_that_failed_or_ran_over_fails_the_judge() -> None:
    for change in ({"outcome": "fail"}, {"outcome": "timeout"}, {"elapsed_s": 151.0}):
        m = passing("FR-001")
        only_scenario(m).update(change)
        assert judged("FR-001", m).outcome == "fail", change
    m = passing("FR-001")
    m["scenarios"] = {}
    assert judged("FR-001", m).outcome == "error"


def test_the_legacy_judges_stay_for_releases_before_declared_judges() -> None:
    """A report of 0.1.0+data.16 and earlier records only round_s / restart_s: judged as it was."""
    old = {"round_s": [1.3, 2.0, 2.0], "restarts": 6}
    legacy = judges.area_judges("FR-004")["storm_ran_release_rounds"]
    assert judges.run_judge(legacy, "FR-004", old, check("FR-004").params).outcome == "pass"
    assert judged("FR-004", old).outcome == "error"      # this release's judge needs what it observed
    assert "FR-004" in judges.LEGACY and judges.LEGACY["FR-006"] in judges.area_judges("FR-006")


def test_the_storm_judge_recomputes_every_rounds_audit() -> None:
    m = passing("FR-004")
    m["rounds"][2]["holders"][3] = holder(299, "3")                 # a non-victim whose process changed
    assert "no victim but its process changed" in str(judged("FR-004", m).reason)
    m = passing("FR-004")
    m["rounds"][1]["cause"] = "kill"                                  # the release alternates kill and crash
    assert judged("FR-004", m).outcome == "fail"
    m = passing("FR-004")
    m["rounds"][0]["holders"][1] = holder(101, "0")                  # 0 held twice after round 1
    assert "held by more than one live holder" in str(judged("FR-004", m).reason)


def test_the_reasons_name_what_the_teeth_rows_look_for() -> None:
    cases = {
        "FR-001": ("new", {**holder(200, "0"), "env_value": ""}, "='' but Ray assigned"),
        "FR-005": ("result", {**holder(151, "0"), "env_value": ""}, "='' but Ray assigned"),
        "FR-006": ("after", [{"devices": 3.0, "types": [], "labels": {}}], "after a fresh start"),
        "FR-007": ("survivors", {"head": {"before": on("head", 1), "after": "ActorDiedError: x"},
                                 "c": {"before": on("c", 2), "after": on("c", 2)}}, "stopped answering after"),
        "FR-012": ("left_by_killed_source", 1, "left behind what its killed source held"),
        "FR-015": ("again", {"error": "ObjectLostError"}, "the failed receive lost the source's copy"),
    }
    for cid, (key, value, needle) in cases.items():
        m = passing(cid)
        m[key] = value
        v = judged(cid, m)
        assert v.outcome == "fail" and needle in str(v.reason), (cid, v)
    m = passing("FR-012")
    m["recovered"] = {"how": "receiver died", "bitexact": None}
    assert "the receiver died with its source" in str(judged("FR-012", m).reason)
    m = passing("FR-003")
    m["restarts"][1]["holder"] = holder(202, "1", restarted=True)
    assert "held by more than one live holder" in str(judged("FR-003", m).reason)


def test_devices_must_be_the_manifests() -> None:
    man = copy.deepcopy(MANIFEST)
    man["accelerator"]["expected"]["devices_per_node"] = 8
    v = judged("FR-001", passing("FR-001"), man)
    assert v.outcome == "fail" and "the manifest declares 8" in str(v.reason)
    man = copy.deepcopy(MANIFEST)
    man["accelerator"]["expected"]["accelerator_type"] = "NPU-X2"
    assert judged("FR-008", passing("FR-008"), man).outcome == "fail"    # its selector selects NPU-X1
    assert judged("FR-011", passing("FR-011"), man).outcome == "fail"    # node b advertised NPU-X1


def test_every_declared_device_type_of_the_transport_is_exercised() -> None:
    man = manifest()
    man["transport"]["devices"] = ["cpu", "npu"]
    one = {k: v for k, v in passing("FR-015").items() if k not in ("transport", "devices", "scenarios")}
    (base, sc), = PASSING["FR-015"]["scenarios"].items()
    m = {"transport": {**PASSING["FR-015"]["transport"], "devices": ["cpu", "npu"]}, "devices": ["cpu", "npu"],
         "cpu": one, "npu": copy.deepcopy(one), "scenarios": {f"{base} on cpu": sc, f"{base} on npu": sc}}
    assert judged("FR-015", m, man).outcome == "pass"
    m["npu"]["new_transfer"] = False
    assert "on npu: a new transfer" in str(judged("FR-015", m, man).reason)
    m["devices"] = ["cpu"]
    assert "accelerator's type npu was not exercised" in str(judged("FR-015", m, man).reason)
    m["not_applicable_on"] = {"npu": peers_reason("npu", 2, "NPU")}   # the check's own reason (RecoveryCtx.each_device)
    m.pop("npu")
    m["scenarios"] = {f"{base} on cpu": sc}
    v = judged("FR-015", m, man)                                        # the manifest's nodes have 4 units each
    assert v.outcome == "fail" and "accelerator's type npu was not exercised" in str(v.reason)
    man["accelerator"]["expected"]["devices_per_node"] = 1              # a node of one unit: the reason holds
    assert judged("FR-015", m, man).outcome == "pass"


def test_the_live_check_asks_the_evidence_part_without_scenarios_or_later_evidence() -> None:
    j = judges.judge_for(check("FR-009"))
    assert j is not None
    m = passing("FR-009")
    m.pop("scenarios")
    assert rj.evidence_verdict(j, "FR-009", m, check("FR-009").params, MANIFEST).outcome == "pass"
    early = {k: m[k] for k in ("node_b_devices", "env_var", "selector", "first", "gone_s")}
    early["window"] = {"ran_on": "c", "failed": None, "watched_s": 1.0}   # the window failed: nothing after it
    v = rj.evidence_verdict(j, "FR-009", early, check("FR-009").params, MANIFEST)
    assert v.outcome == "fail" and "ran on node 'c'" in str(v.reason)
    assert judged("FR-009", early).outcome != "pass"   # the whole judge: its needs first


def test_a_strict_spread_bundle_may_not_land_beside_the_kept_one() -> None:
    m = passing("FR-010")
    m.update(new_node="c", moved=on("c", 701, "2", True))
    assert "STRICT_SPREAD" in str(judged("FR-010", m).reason)


def test_the_retry_holds_exactly_the_crashed_attempts_device() -> None:
    m = passing("FR-005")
    m["others"] = [holder(101, "1"), holder(102, "2"), holder(103, "3")]
    m["crashed"] = holder(150, "0")
    assert judged("FR-005", m).outcome == "pass"
    m["result"] = holder(151, "3")
    v = judged("FR-005", m)
    assert "the only free device was ['0']" in str(v.reason) and sorted(IDS) == IDS


def test_no_recorded_fetch_timeout_widens_a_bound_past_what_the_release_stretches() -> None:
    """Issue 43 (no run argument changes a bound): a fetch timeout inflated in the record (a
    vendor's cluster configured longer, or an edited report) is refused beyond the release's
    rdt_fetch_timeout_s x MAX_FACTOR, the most the suite stretches a wait on Ray's machinery."""
    m = passing("FR-012")
    most = rj.most_fetch_timeout_s(check("FR-012").params)
    m["transport"] = {**m["transport"], "rdt_fetch_timeout_s": most + 1.0}
    verdict = judged("FR-012", m)
    assert verdict.outcome == "fail" and "more than the" in (verdict.reason or ""), verdict


def test_a_rejoined_nodes_registration_is_left_out_of_the_figures_that_span_it() -> None:
    """Issue 42: node b's start and registration inside FR-009/011/017 is Ray's machinery, stretched
    on a loaded host and judged as its recorded wait (registered_s); the figures that span it keep
    their bounds for what is the plugin's. A report from before it was recorded keeps the old rule,
    and a registration longer than any wait on Ray's machinery is granted is a finding."""
    from conformance.timing.host_load import MAX_FACTOR
    from conformance.timing.owned import RESAMPLE_S

    rejoin = float(check("FR-009").params["rejoin_s"])
    m = passing("FR-009")
    m["ran_after_rejoin_s"] = rejoin + 30            # over rejoin_s: the old rule, nothing recorded as Ray's
    assert judged("FR-009", m).outcome == "fail"
    m["registered_s"] = 35.0                          # b took 35 s to register on a loaded host: 25 s once it had
    assert judged("FR-009", m).outcome == "pass"
    m["registered_s"] = 20.0                          # the actor then took 70 s of its 60 s
    assert "over its" in str(judged("FR-009", m).reason)
    m["registered_s"] = rejoin * MAX_FACTOR + RESAMPLE_S + 1
    assert "more than any wait on it is granted" in str(judged("FR-009", m).reason)

    m = passing("FR-011")
    m.update(alive_s=rejoin + 20, rejoin_s=rejoin + 25, registered_s=rejoin + 20)   # alive once registered
    assert judged("FR-011", m).outcome == "pass"
    m["rejoin_s"] = rejoin + 20 + float(check("FR-011").params["view_settle_s"]) + rejoin + 1
    assert judged("FR-011", m).outcome == "fail"
    m = passing("FR-017")
    m.update(rejoin_s=rejoin + 9, registered_s=10.0)
    assert judged("FR-017", m).outcome == "pass"


def test_a_crashed_call_failing_and_a_task_retry_are_rays_time_left_out_of_their_figures() -> None:
    """Issue 42: FR-002's crashing call failing after its process died (crash_waited_s: the raylet,
    the GCS and the caller's core worker) and FR-005's crash noticed, retried and restarted on a new
    worker (retried_s) are Ray's machinery, stretched on a loaded host and judged as their recorded
    waits; crash_error_s and retry_done_s leave them out. The device the retry holds stays the
    plugin's. A report from before they were recorded keeps the old rule; a recorded Ray time past
    the widest grant is a finding."""
    from conformance.timing.host_load import MAX_FACTOR
    from conformance.timing.owned import RESAMPLE_S

    release = float(check("FR-002").params["device_release_s"])
    m = passing("FR-002")
    m["crash_error_s"] = release + 20                      # a loaded host, nothing recorded as Ray's: the old rule
    assert "the crashing holder's call failing took" in str(judged("FR-002", m).reason)
    m.update(crash_waited_s=release + 19.5, crash_waits=1)
    assert judged("FR-002", m).outcome == "pass", judged("FR-002", m)
    assert judged("FR-002", {**m, "crash_error": "returned normally"}).outcome == "fail"   # never excused
    absurd = {**m, "crash_waited_s": release * MAX_FACTOR + RESAMPLE_S + 1, "crash_error_s": release * MAX_FACTOR + 50}
    assert "crash_waited_s records" in str(judged("FR-002", absurd).reason)
    two = {**m, "crash_error_s": 2 * release * MAX_FACTOR, "crash_waited_s": 2 * release * MAX_FACTOR - 1, "crash_waits": 2}
    assert judged("FR-002", two).outcome == "pass", judged("FR-002", two)
    assert "more than any wait on it is granted" in str(judged("FR-002", {**two, "crash_waits": 1}).reason)

    ready = float(check("FR-005").params["actor_ready_s"])
    m = passing("FR-005")
    m["retry_done_s"] = ready + 30
    assert "the retried task took" in str(judged("FR-005", m).reason)
    m["retried_s"] = ready + 29.5
    assert judged("FR-005", m).outcome == "pass", judged("FR-005", m)
    assert "the retry holds" in str(judged("FR-005", {**m, "result": holder(151, "1")}).reason)
    m["retried_s"] = ready * MAX_FACTOR + RESAMPLE_S + 1
    assert "retried_s records" in str(judged("FR-005", m).reason)
    m.update(retry_done_s=ready + 30, retried_s=10.0)     # 90 s, only 10 of them Ray's
    assert "the retried task took" in str(judged("FR-005", m).reason)


def test_a_dead_holders_release_and_a_new_holders_start_are_left_out_of_the_figures_that_span_them() -> None:
    """Issue 42: a killed or crashed holder's device returning to Ray's pool (released_s) and a new
    holder's start (started_s) are Ray's machinery, stretched on a loaded host and judged as their
    recorded waits; release_s, reuse_s (FR-001/002) and holder_s (FR-006) leave them out. Which
    device the new holder gets stays the plugin's. A report from before they were recorded keeps
    the old rule; a recorded Ray time past the widest grant is a finding."""
    from conformance.timing.host_load import MAX_FACTOR
    from conformance.timing.owned import RESAMPLE_S

    release, ready = (float(check("FR-001").params[k]) for k in ("device_release_s", "actor_ready_s"))
    for cid in ("FR-001", "FR-002"):
        m = passing(cid)
        m.update(release_s=release + 40, reuse_s=ready + 50)   # a loaded host, nothing recorded as Ray's: the old rule
        assert judged(cid, m).outcome == "fail"
        m.update(released_s=release + 39.5, release_waits=1, started_s=ready + 49.5)   # both were Ray's waits
        assert judged(cid, m).outcome == "pass", judged(cid, m)
        wrong = {**m, "new": holder(200, "1")}             # the new holder got another device than the freed one
        assert "not the released device" in str(judged(cid, wrong).reason)
        absurd = {**m, "released_s": release * MAX_FACTOR + RESAMPLE_S + 1, "release_s": release * MAX_FACTOR + 100}
        assert "more than any wait on it is granted" in str(judged(cid, absurd).reason)
        # two nodes' waits one after another: the second node's release_s spans both
        two = {**m, "release_s": 2 * release * MAX_FACTOR, "released_s": 2 * release * MAX_FACTOR - 1, "release_waits": 2}
        assert judged(cid, two).outcome == "pass", judged(cid, two)
        assert "more than 1 waits" not in str(judged(cid, {**two, "release_waits": 1}).reason)
        assert "more than any wait on it is granted" in str(judged(cid, {**two, "release_waits": 1}).reason)
        assert "not a count of waits" in str(judged(cid, {**two, "release_waits": 0.5}).reason)
        late = {**m, "started_s": 10.0}                    # the holder took 110 s, 10 of them Ray's
        assert "over its" in str(judged(cid, late).reason)

    m = passing("FR-006")
    m["holder_s"] = ready + 30
    assert judged("FR-006", m).outcome == "fail"
    m["started_s"] = ready + 29
    assert judged("FR-006", m).outcome == "pass"
    m["started_s"] = ready * MAX_FACTOR + RESAMPLE_S + 1
    assert "more than any wait on it is granted" in str(judged("FR-006", m).reason)
    m = passing("FR-006")
    m.update(holder_s=ready + 30, started_s=ready + 29, holder={**holder(400, "0"), "manager_view": ["3"]})
    assert judged("FR-006", m).outcome == "fail"
