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
