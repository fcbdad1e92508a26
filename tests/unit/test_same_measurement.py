"""One measurement recorded twice (PF-001's sweep, copied by PF-002 and PF-003) agrees with itself.

The figures are a real 2-node run's (main at b2c55b1, the simulated accelerator, SIMXFER), the two
largest sizes of its sweep; the edits are the held-out round's P01-P03."""
from __future__ import annotations

import copy
from typing import Any

from conformance.signing.same_measurement import same_measurement_problems

TOP, NEXT = 268435456, 67108864
TOP_TRIALS = [0.17551084207764975, 0.19965270269203747, 0.2884034083098683, 0.31098697861281926, 0.3150351656662161]
TOP_STORE = [0.12045737488136689, 0.1436348120065031, 0.16183171133026858]
NEXT_TRIALS = [0.29229070710760785, 0.2948525068886798, 0.29556297153349087, 0.2960959522392097, 0.304354903033514]
NEXT_STORE = [0.17474413468775915, 0.18159296494551166, 0.18162379596913322]


def run() -> list[dict[str, Any]]:
    sweep = {"sizes_bytes": [NEXT, TOP], "bandwidth": {
        "64MiB": {"trials_gbps": NEXT_TRIALS, "object_store_trials_gbps": NEXT_STORE},
        "256MiB": {"trials_gbps": TOP_TRIALS, "object_store_trials_gbps": TOP_STORE}}}
    return [{"id": "PF-001", "outcome": "pass", "metrics": sweep},
            {"id": "PF-002", "outcome": "pass", "metrics": {"largest_bytes": TOP, "largest_size_trials_gbps": list(TOP_TRIALS)}},
            {"id": "PF-003", "outcome": "pass", "metrics": {"bytes": TOP, "rdt_trials_gbps": list(TOP_TRIALS),
                                                            "object_store_trials_gbps": list(TOP_STORE)}}]


def edited(check: int, key: str, value: Any) -> list[dict[str, Any]]:
    checks = run()
    checks[check]["metrics"][key] = value
    return checks


def test_the_runs_own_copies_agree() -> None:
    assert same_measurement_problems(run(), merged=False) == []


def test_a_copy_scaled_in_one_check_is_named() -> None:
    p01 = same_measurement_problems(edited(1, "largest_size_trials_gbps", [t * 10 for t in TOP_TRIALS]), merged=False)
    assert len(p01) == 1 and p01[0].startswith("PF-002 largest_size_trials_gbps") and "must agree" in p01[0]
    p02 = same_measurement_problems(edited(2, "object_store_trials_gbps", [t / 3 for t in TOP_STORE]), merged=False)
    assert len(p02) == 1 and p02[0].startswith("PF-003 object_store_trials_gbps")


def test_a_comparison_moved_to_a_smaller_size_is_named() -> None:
    checks = run()
    checks[2]["metrics"].update(bytes=NEXT, rdt_trials_gbps=NEXT_TRIALS, object_store_trials_gbps=NEXT_STORE)
    [p03] = same_measurement_problems(checks, merged=False)
    assert p03.startswith("PF-003 bytes 67108864 is not the largest size") and str(TOP) in p03
    [p02] = same_measurement_problems(edited(1, "largest_bytes", NEXT), merged=False)
    assert p02.startswith("PF-002 largest_bytes 67108864")


def test_the_largest_size_the_store_held_is_the_comparison() -> None:
    """Where the object store did not hold the top size, PF-003 compares at the largest it held."""
    checks = run()
    del checks[0]["metrics"]["bandwidth"]["256MiB"]["object_store_trials_gbps"]
    checks[2]["metrics"].update(bytes=NEXT, rdt_trials_gbps=NEXT_TRIALS, object_store_trials_gbps=NEXT_STORE)
    assert same_measurement_problems(checks, merged=False) == []


def test_a_merged_report_or_a_check_that_did_not_pass_is_left_alone() -> None:
    scaled = edited(1, "largest_size_trials_gbps", [t * 10 for t in TOP_TRIALS])
    assert same_measurement_problems(scaled, merged=True) == []
    failed = copy.deepcopy(scaled)
    failed[1]["outcome"] = "fail"
    assert same_measurement_problems(failed, merged=False) == []
    assert same_measurement_problems(run()[1:], merged=False) == []      # no sweep in the report


# ---------------------------------------------------------------- the cluster's nodes, observed twice
from conformance.signing.same_measurement import same_nodes_problems

A, B = "937177266d2aaa3825f1ca1867476a42e3b050bc3e0ba83968edd007", "05605f1fac981f24611b9704674286de9445f1890f429b560d2a5637"
ENVIRONMENT = {"devices": {"resource": "SIMACC", "total": 8.0, "nodes": [{"node_id": A, "count": 4.0}, {"node_id": B, "count": 4.0}]}}


def nodes_run() -> list[dict[str, Any]]:
    """A real 2-node run's node records (main at b2c55b1)."""
    counts = {A[:8]: 4.0, B[:8]: 4.0}
    return [{"id": "DP-006", "outcome": "pass", "metrics": {"device_counts": dict(counts), "resource": "SIMACC"}},
            {"id": "DP-007", "outcome": "pass", "metrics": {"node_types": {k: {"accelerator_type:SIMACC-X1": 1.0} for k in counts}}},
            {"id": "DP-009", "outcome": "pass", "metrics": {"devices_by_node": dict(counts)}}]


def test_the_device_checks_name_the_cluster_the_run_described() -> None:
    assert same_nodes_problems(nodes_run(), ENVIRONMENT, merged=False) == []
    for k, name in ((0, "device_counts"), (1, "node_types"), (2, "devices_by_node")):
        checks = nodes_run()
        del checks[k]["metrics"][name][B[:8]]              # the bad node dropped (G39, G43, G42)
        [problem] = same_nodes_problems(checks, ENVIRONMENT, merged=False)
        assert problem.startswith(f"{checks[k]['id']} {name} names nodes") and "environment.devices" in problem
    checks = nodes_run()
    checks[0]["metrics"]["device_counts"][B[:8]] = 3.0     # another count than the run's description
    assert same_nodes_problems(checks, ENVIRONMENT, merged=False)[0].startswith("DP-006 device_counts records")


def test_a_node_without_devices_is_in_the_counts_only() -> None:
    cpu_node = {"node_id": "c" * 56, "count": 0.0}
    env = {"devices": {**ENVIRONMENT["devices"], "nodes": [*ENVIRONMENT["devices"]["nodes"], cpu_node]}}
    checks = nodes_run()
    checks[0]["metrics"]["device_counts"]["c" * 8] = 0.0
    assert same_nodes_problems(checks, env, merged=False) == []


def test_no_description_or_a_merge_holds_nothing() -> None:
    checks = nodes_run()
    del checks[0]["metrics"]["device_counts"][B[:8]]
    assert same_nodes_problems(checks, {}, merged=False) == []
    assert same_nodes_problems(checks, ENVIRONMENT, merged=True) == []
