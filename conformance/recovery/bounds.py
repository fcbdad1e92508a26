"""The time bounds of the recovery checks, in seconds.

Every recovery scenario ends within a bound its checklist requirement states; these constants
are the one place the code reads them from, and tests/test_recovery_unit.py asserts that each
requirement text names the bound its check enforces. The values are generous for a loaded
2-core machine (and for real devices whose context creation takes seconds), yet finite: a
device that never comes back, or an error that never surfaces, fails instead of hanging.
"""
from __future__ import annotations

# Devices of a dead actor are back in the pool (available again in Ray's view).
DEVICE_RELEASE_S = 30
# A new or restarted actor / retried task is running and answers with its device state.
ACTOR_READY_S = 60
# One kill/restart round of the stress scenario (all victims back and audited).
STRESS_ROUND_S = 90
STRESS_ROUNDS = 3
# A fresh cluster in the same process is up and shows its devices.
RESTART_CLUSTER_S = 120

# Simulated nodes, with the fast health-check system config (failure detected in ~1 s).
NODE_GONE_S = 30          # a hard-killed node's devices and labels leave the view
RESCHEDULE_S = 60         # label-selected work runs again on a surviving matching node
PENDING_WINDOW_S = 5      # work with no matching node stays pending (not run, not failed) this long
PG_RESCHEDULE_S = 60      # a placement group's lost bundle is placed again
REJOIN_S = 60             # a rejoined node shows its devices and labels again
VIEW_SETTLE_S = 10        # once a node is alive, its resources and labels are final within this
SURVIVOR_WATCH_S = 5      # survivors of a node death are watched this long after it is declared dead

# Transfers.
RDT_FETCH_TIMEOUT_S = 5   # RAY_rdt_fetch_fail_timeout_milliseconds used by the transfer shape
TRANSFER_ERROR_S = 30     # a failed transfer surfaces to the receiver's caller (no hang)
TRANSFER_TIMEOUT_ERROR_S = RDT_FETCH_TIMEOUT_S + 30  # a transfer past the fetch timeout fails
ABORT_SEEN_S = 20         # Ray's abort_transport calls / actor kills are observed after a failure

# Health-check settings of the node shape (health_check_* in Ray's system config).
FAST_HEALTH_CHECK = {"health_check_initial_delay_ms": 0, "health_check_period_ms": 500,
                     "health_check_timeout_ms": 500, "health_check_failure_threshold": 2}

# What each check's requirement text states (tests/test_recovery_unit.py holds the checklist to
# it), and the total bound of its scenario (the sum of its steps' bounds; the checklist's
# timeout_s, the hard backstop, must be larger).
STATED: dict[str, tuple[float, ...]] = {
    "FR-001": (DEVICE_RELEASE_S, ACTOR_READY_S),
    "FR-002": (DEVICE_RELEASE_S, ACTOR_READY_S),
    "FR-003": (ACTOR_READY_S,),
    "FR-004": (STRESS_ROUND_S,),
    "FR-005": (ACTOR_READY_S,),
    "FR-006": (RESTART_CLUSTER_S, ACTOR_READY_S),
    "FR-007": (NODE_GONE_S, SURVIVOR_WATCH_S),
    "FR-008": (RESCHEDULE_S,),
    "FR-009": (PENDING_WINDOW_S, REJOIN_S),
    "FR-010": (PG_RESCHEDULE_S,),
    "FR-011": (REJOIN_S, ACTOR_READY_S),
    "FR-012": (TRANSFER_ERROR_S,),
    "FR-013": (TRANSFER_ERROR_S,),
    "FR-014": (RDT_FETCH_TIMEOUT_S, TRANSFER_ERROR_S, ABORT_SEEN_S),
    "FR-015": (TRANSFER_ERROR_S,),
    "FR-016": (ACTOR_READY_S, TRANSFER_ERROR_S),
}
FETCH_ERROR_S = RDT_FETCH_TIMEOUT_S + TRANSFER_ERROR_S   # a failed transfer surfaces (simulated nodes)
HELD_RECEIVE_S = 4.0                                      # FR-013: the suite holds the receive this long
SCENARIO_BOUND_S: dict[str, float] = {
    "FR-001": ACTOR_READY_S + DEVICE_RELEASE_S + ACTOR_READY_S,
    "FR-002": ACTOR_READY_S + DEVICE_RELEASE_S + ACTOR_READY_S,
    "FR-003": 3 * ACTOR_READY_S + DEVICE_RELEASE_S,
    "FR-004": ACTOR_READY_S + STRESS_ROUNDS * STRESS_ROUND_S,
    "FR-005": 2 * ACTOR_READY_S + DEVICE_RELEASE_S,
    "FR-006": RESTART_CLUSTER_S + ACTOR_READY_S,
    "FR-007": 2 * ACTOR_READY_S + 2 * NODE_GONE_S + SURVIVOR_WATCH_S,
    "FR-008": 3 * ACTOR_READY_S + DEVICE_RELEASE_S + NODE_GONE_S + RESCHEDULE_S,
    "FR-009": ACTOR_READY_S + NODE_GONE_S + PENDING_WINDOW_S + REJOIN_S + 10,
    "FR-010": 3 * ACTOR_READY_S + DEVICE_RELEASE_S + NODE_GONE_S + PG_RESCHEDULE_S,
    "FR-011": NODE_GONE_S + REJOIN_S + VIEW_SETTLE_S + ACTOR_READY_S,
    "FR-012": 3 * ACTOR_READY_S + FETCH_ERROR_S + 3 * TRANSFER_ERROR_S,
    "FR-013": 3 * ACTOR_READY_S + FETCH_ERROR_S + HELD_RECEIVE_S + 3 * TRANSFER_ERROR_S,
    "FR-014": 3 * ACTOR_READY_S + FETCH_ERROR_S + ABORT_SEEN_S + 2 * TRANSFER_ERROR_S,
    "FR-015": 2 * ACTOR_READY_S + 4 * TRANSFER_ERROR_S,
    "FR-016": 4 * ACTOR_READY_S + 3 * TRANSFER_ERROR_S,
}

# Partition checks (FR-017, FR-018): their bounds are the checks' params in the checklist.
def _params_total(check: str, *names: str) -> float:
    from conformance.data import check_param
    return float(sum(check_param(check, n) for n in names))


STATED["FR-017"] = ()
STATED["FR-018"] = (TRANSFER_ERROR_S,)
SCENARIO_BOUND_S["FR-017"] = 2 * ACTOR_READY_S + DEVICE_RELEASE_S + VIEW_SETTLE_S + _params_total(
    "FR-017", "dead_within_s", "reschedule_s", "healed_watch_s", "rejoin_s")
SCENARIO_BOUND_S["FR-018"] = 3 * ACTOR_READY_S + 2 * TRANSFER_ERROR_S + _params_total("FR-018", "transfer_end_s")
