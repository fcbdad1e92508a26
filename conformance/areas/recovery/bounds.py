"""The time bounds of the recovery checks: each check's params, and the total bound of its scenario.

Every recovery scenario ends within the bounds its checklist entry carries, and its requirement
text states them (tests/unit/test_recovery_unit.py holds the text to the params). The bounds the
helpers shared by several checks use (actor_ready_s, device_release_s, ...) are declared once, in
the checklist's `area_params.recovery` block; each check names the ones it uses, and they reach
code only as that check's params (`ctx.param(name)`, conformance.run.check_context): the values
this run loaded, which the report records. The values are generous for a loaded 2-core machine
(and for real devices whose context creation takes seconds), yet finite: a device that never
comes back, or an error that never surfaces, fails instead of hanging.

Shared bounds, by name (area_params.recovery):

* device_release_s   – devices of a dead actor are back in the pool (available again in Ray's view);
* actor_ready_s      – a new or restarted actor / retried task is running and answers;
* stress_round_s, stress_rounds – one kill/restart round of the stress scenario, and how many;
* restart_cluster_s  – a fresh cluster in the same process is up and shows its devices;
* node_gone_s        – a hard-killed node's devices and labels leave the view (fast health checks);
* reschedule_s       – label-selected work runs again on a surviving matching node;
* pending_window_s   – work with no matching node stays pending this long;
* pg_reschedule_s    – a placement group's lost bundle is placed again;
* rejoin_s           – a rejoined node shows its devices and labels again;
* view_settle_s      – once a node is alive, its resources and labels are final;
* survivor_watch_s   – survivors of a node death are watched this long;
* rdt_fetch_timeout_s – RAY_rdt_fetch_fail_timeout_milliseconds of the transfer shape;
* transfer_error_s   – a failed transfer surfaces to the receiver's caller;
* abort_seen_s       – Ray's abort_transport calls / actor kills are observed;
* held_receive_s     – FR-013: the suite holds the receive this long.
"""
from __future__ import annotations

from typing import TYPE_CHECKING, Callable

if TYPE_CHECKING:
    from conformance.catalog.data import Check


# Health-check settings of the node shape (health_check_* in Ray's system config). A hard-killed
# raylet refuses the check at once, so it is declared dead after threshold x period (~0.6 s); a
# live but starved raylet must miss three 500 ms checks in a row (~1.9 s unanswered) to be.
FAST_HEALTH_CHECK = {"health_check_initial_delay_ms": 0, "health_check_period_ms": 200,
                     "health_check_timeout_ms": 500, "health_check_failure_threshold": 3}

# The total bound of each scenario: the sum of its steps' bounds (the checklist's timeout_s, the
# hard backstop, must be larger). knob: multipliers count a scenario's steps; each bound is a param.
_SCENARIOS: dict[str, Callable[[Callable[[str], float]], float]] = {
    "FR-001": lambda p: p("actor_ready_s") + p("device_release_s") + p("actor_ready_s"),
    "FR-002": lambda p: p("actor_ready_s") + p("device_release_s") + p("actor_ready_s"),
    "FR-003": lambda p: 3 * p("actor_ready_s") + p("device_release_s"),
    "FR-004": lambda p: p("actor_ready_s") + p("stress_rounds") * p("stress_round_s"),
    "FR-005": lambda p: 2 * p("actor_ready_s") + p("device_release_s"),
    "FR-006": lambda p: p("restart_cluster_s") + p("actor_ready_s"),
    "FR-007": lambda p: 2 * p("actor_ready_s") + 2 * p("node_gone_s") + p("survivor_watch_s"),
    "FR-008": lambda p: 3 * p("actor_ready_s") + p("device_release_s") + p("node_gone_s") + p("reschedule_s"),
    "FR-009": lambda p: (p("actor_ready_s") + p("node_gone_s") + p("pending_window_s") + p("rejoin_s")
                         + p("view_settle_s")),
    "FR-010": lambda p: 3 * p("actor_ready_s") + p("device_release_s") + p("node_gone_s") + p("pg_reschedule_s"),
    "FR-011": lambda p: p("node_gone_s") + p("rejoin_s") + p("view_settle_s") + p("actor_ready_s"),
    "FR-012": lambda p: 3 * p("actor_ready_s") + fetch_error_s(p) + 3 * p("transfer_error_s"),
    "FR-013": lambda p: 3 * p("actor_ready_s") + fetch_error_s(p) + p("held_receive_s") + 3 * p("transfer_error_s"),
    "FR-014": lambda p: 3 * p("actor_ready_s") + fetch_error_s(p) + p("abort_seen_s") + 2 * p("transfer_error_s"),
    "FR-015": lambda p: 2 * p("actor_ready_s") + 4 * p("transfer_error_s"),
    "FR-016": lambda p: 4 * p("actor_ready_s") + 3 * p("transfer_error_s"),
    # Partition checks: dead_within_s, healed_watch_s and transfer_end_s are their own params.
    "FR-017": lambda p: (2 * p("actor_ready_s") + p("device_release_s") + p("view_settle_s") + p("dead_within_s")
                         + p("reschedule_s") + p("healed_watch_s") + p("rejoin_s")),
    "FR-018": lambda p: 3 * p("actor_ready_s") + 2 * p("transfer_error_s") + p("transfer_end_s"),
}
SCENARIO_CHECKS = tuple(_SCENARIOS)


def fetch_error_s(p: Callable[[str], float]) -> float:
    """A failed transfer surfaces within Ray's fetch timeout plus transfer_error_s (simulated nodes)."""
    return p("rdt_fetch_timeout_s") + p("transfer_error_s")


def scenario_bound(check: "Check") -> float:
    """The total bound of `check`'s scenario (the catalog Check as the run loaded it), from its
    params (a data error names the param it lacks)."""
    return float(_SCENARIOS[check.id](lambda name: float(check.param(name))))
