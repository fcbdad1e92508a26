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

# The total bound of each scenario is checklist data (each check's `scenario_bound:` steps), read
# by the core (conformance/catalog/scenario_bounds.py): `verify` holds a report's recorded bounds
# to the release's without importing an area.
from conformance.catalog.scenario_bounds import scenario_bound as scenario_bound  # re-exported

# Health-check settings of the node shape (health_check_* in Ray's system config). A hard-killed
# raylet refuses the check at once, so it is declared dead after threshold x period (~1.2 s, far
# inside node_gone_s); a live but starved raylet must miss six 500 ms checks in a row (~4 s
# unanswered) to be. At three (~2 s) a node just started on a loaded host, busy starting its
# workers and agent, could be declared dead by Ray and never come back; a setup rejoin that did not
# come within 60 s (the golden path's FR-009 in make test, s27b) fits that, unconfirmed.
FAST_HEALTH_CHECK = {"health_check_initial_delay_ms": 0, "health_check_period_ms": 200,
                     "health_check_timeout_ms": 500, "health_check_failure_threshold": 6}
