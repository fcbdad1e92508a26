"""The total time bound of each recovery scenario, from its check's params (pure).

A scenario's bound is the sum of its steps' bounds, each one of the check's params (the shared
ones are explained in conformance/areas/recovery/bounds.py). The recovery checks run their
scenario under it, and `verify` holds the bound a report records to what the release's params
give (conformance/signing/evidence.py), so the formulas live here, in the core, once.
"""
from __future__ import annotations

from typing import TYPE_CHECKING, Callable

if TYPE_CHECKING:
    from conformance.catalog.data import Check


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
    "FR-019": lambda p: (2 * p("actor_ready_s") + p("node_gone_s") + p("pending_window_s") + p("rejoin_s")
                         + p("pg_reschedule_s")),
}
SCENARIO_CHECKS = tuple(_SCENARIOS)


def fetch_error_s(p: Callable[[str], float]) -> float:
    """A failed transfer surfaces within Ray's fetch timeout plus transfer_error_s (simulated nodes)."""
    return p("rdt_fetch_timeout_s") + p("transfer_error_s")


def scenario_bound(check: "Check") -> float:
    """The total bound of `check`'s scenario (the catalog Check as the run loaded it), from its
    params (a data error names the param it lacks)."""
    return scenario_bound_of(check.id, lambda name: float(check.param(name)))


def scenario_bound_of(check_id: str, param: Callable[[str], float]) -> float:
    """The same bound from a check id and a reader of its params (a judge holds a record's params,
    not a catalog Check); KeyError: `check_id` has no scenario formula."""
    return float(_SCENARIOS[check_id](param))
