"""The time bounds of the recovery checks, in seconds, read from the checklist's params.

Every recovery scenario ends within the bounds its checklist entry carries, and its requirement
text states them (tests/unit/test_recovery_unit.py holds the text to the params). The bounds the
helpers shared by several checks read (actor_ready_s, ...) are declared once, in the checklist's
`area_params.recovery` block; each check names the ones it uses. The values are generous for
a loaded 2-core machine (and for real devices whose context creation takes seconds), yet
finite: a device that never comes back, or an error that never surfaces, fails instead of
hanging.
"""
from __future__ import annotations

from typing import Any

from conformance.catalog.data import area_param


def shared_param(name: str) -> Any:
    """The recovery area's shared param `name` (area_params.recovery; a data error when missing)."""
    return area_param("recovery", name)


# Devices of a dead actor are back in the pool (available again in Ray's view).
DEVICE_RELEASE_S = shared_param("device_release_s")
# A new or restarted actor / retried task is running and answers with its device state.
ACTOR_READY_S = shared_param("actor_ready_s")
# One kill/restart round of the stress scenario (all victims back and audited).
STRESS_ROUND_S = shared_param("stress_round_s")
STRESS_ROUNDS = shared_param("stress_rounds")
# A fresh cluster in the same process is up and shows its devices.
RESTART_CLUSTER_S = shared_param("restart_cluster_s")

# Simulated nodes, with the fast health-check system config (failure detected in ~1 s).
NODE_GONE_S = shared_param("node_gone_s")            # a hard-killed node's devices and labels leave the view
RESCHEDULE_S = shared_param("reschedule_s")          # label-selected work runs again on a surviving matching node
PENDING_WINDOW_S = shared_param("pending_window_s")  # work with no matching node stays pending this long
PG_RESCHEDULE_S = shared_param("pg_reschedule_s")    # a placement group's lost bundle is placed again
REJOIN_S = shared_param("rejoin_s")                  # a rejoined node shows its devices and labels again
VIEW_SETTLE_S = shared_param("view_settle_s")        # once a node is alive, its resources and labels are final
SURVIVOR_WATCH_S = shared_param("survivor_watch_s")  # survivors of a node death are watched this long

# Transfers.
RDT_FETCH_TIMEOUT_S = shared_param("rdt_fetch_timeout_s")  # RAY_rdt_fetch_fail_timeout_milliseconds (transfer shape)
TRANSFER_ERROR_S = shared_param("transfer_error_s")        # a failed transfer surfaces to the receiver's caller
ABORT_SEEN_S = shared_param("abort_seen_s")                # Ray's abort_transport calls / actor kills are observed

# Health-check settings of the node shape (health_check_* in Ray's system config). A hard-killed
# raylet refuses the check at once, so it is declared dead after threshold x period (~0.6 s); a
# live but starved raylet must miss three 500 ms checks in a row (~1.9 s unanswered) to be.
FAST_HEALTH_CHECK = {"health_check_initial_delay_ms": 0, "health_check_period_ms": 200,
                     "health_check_timeout_ms": 500, "health_check_failure_threshold": 3}

# The total bound of each scenario (the sum of its steps' bounds; the checklist's timeout_s, the
# hard backstop, must be larger). What each requirement states is its params (see the test).
FETCH_ERROR_S = RDT_FETCH_TIMEOUT_S + TRANSFER_ERROR_S   # a failed transfer surfaces (simulated nodes)
HELD_RECEIVE_S = shared_param("held_receive_s")           # FR-013: the suite holds the receive this long
SCENARIO_BOUND_S: dict[str, float] = {  # knob: multipliers count a scenario's steps; each bound is a param
    "FR-001": ACTOR_READY_S + DEVICE_RELEASE_S + ACTOR_READY_S,
    "FR-002": ACTOR_READY_S + DEVICE_RELEASE_S + ACTOR_READY_S,
    "FR-003": 3 * ACTOR_READY_S + DEVICE_RELEASE_S,
    "FR-004": ACTOR_READY_S + STRESS_ROUNDS * STRESS_ROUND_S,
    "FR-005": 2 * ACTOR_READY_S + DEVICE_RELEASE_S,
    "FR-006": RESTART_CLUSTER_S + ACTOR_READY_S,
    "FR-007": 2 * ACTOR_READY_S + 2 * NODE_GONE_S + SURVIVOR_WATCH_S,
    "FR-008": 3 * ACTOR_READY_S + DEVICE_RELEASE_S + NODE_GONE_S + RESCHEDULE_S,
    "FR-009": ACTOR_READY_S + NODE_GONE_S + PENDING_WINDOW_S + REJOIN_S + VIEW_SETTLE_S,
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
    from conformance.catalog.data import check_param
    return float(sum(check_param(check, n) for n in names))


SCENARIO_BOUND_S["FR-017"] = 2 * ACTOR_READY_S + DEVICE_RELEASE_S + VIEW_SETTLE_S + _params_total(
    "FR-017", "dead_within_s", "reschedule_s", "healed_watch_s", "rejoin_s")
SCENARIO_BOUND_S["FR-018"] = 3 * ACTOR_READY_S + 2 * TRANSFER_ERROR_S + _params_total("FR-018", "transfer_end_s")
