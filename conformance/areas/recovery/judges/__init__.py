"""The recovery area's judges: each check's recorded evidence + the release's params -> its outcome.

The checklist names a check's judge (`judge: <function name>`); the live check decides with it
(CheckContext.decide) and `verify` decides again with it (conformance/report/judges.py says the
rules every judge keeps). Pure: no Ray, no clock, no I/O.

What a recovery check records is what it observed after each kill, crash, partition or restart:
every holder's three views of its devices (Ray's assignment, the visible-devices variable, the
manager's view; `holder` records, conformance.areas.recovery.evidence), which node each ran on
(by role), the errors the callers saw (type and message), the step durations, the cluster view
(device totals, labels) and the transfer outcomes (digests of what was sent and received). A
judge recomputes the audit of those views (conformance.areas.recovery.audit), holds every step
duration to its param, every count to the release's params (rounds, devices) and the manifest
(devices per node, accelerator type, transport and its device types), and finally every recorded
scenario to its bound (`scenarios`, conformance/areas/recovery/scenario.py).

The live check asks the evidence part (`EVIDENCE[name]`) inside its scenario, so a finding fails
the scenario with the judge's reason; the whole judge (evidence, then scenarios) decides after it.

One module per group of checks, each registering its judges in the one table (common.JUDGES, the
area's `Area.judges` reads it here): devices (FR-001..FR-006), nodes (FR-007..FR-011, FR-017, FR-019), transfers (FR-012..FR-016, FR-018).
Every name stays importable from here.
"""
from __future__ import annotations

from conformance.areas.recovery.judges.common import (  # the table and what the area shares
    ACTOR_ERRORS,
    EVIDENCE,
    JUDGES,
    ROUNDING,
    TYPE_LABEL,
    Findings,
    M,
    _Wrong,
    actor_error,
    assigned,
    at_least,
    device_count,
    env_var,
    evidence_verdict,
    expected_devices,
    expected_type,
    guarded,
    holder_audit,
    labels_match,
    left_to_ray,
    most_fetch_timeout_s,
    on_node,
    pid,
    record,
    records,
    recovery_rule,
    scenario_findings,
    selector_of,
    signature_findings,
    signatures,
    text,
    universe,
    view_after_loss,
    within,
)
from conformance.areas.recovery.judges.devices import (  # registers its judges
    _freed_device_reused,
    crashed_holders_device_reused,
    fresh_cluster_in_time,
    fresh_start_same_devices,
    killed_holders_device_reused,
    restarted_holder_views_agree,
    retry_holds_crashed_attempts_device,
    storm_ran_release_rounds,
    storm_rounds_audited,
)
from conformance.areas.recovery.judges.nodes import (  # registers its judges
    _moved_to_c,
    dead_node_left_view_survivors_kept,
    lost_bundle_placed_again_survivor_kept,
    packed_group_waits_for_its_domain,
    partitioned_node_replaced_and_rejoined_new,
    pinned_work_waited_for_rejoin,
    pool_work_moved_to_matching_survivor,
    rejoined_node_advertises_as_before,
)
from conformance.areas.recovery.judges.transfers import (  # registers its judges
    ABORT_EVIDENCE,
    NO_ABORT_EVIDENCE,
    PER_TYPE,
    PerType,
    _dead_source,
    abort_branch,
    dead_source_before_fetch_ended,
    dead_source_mid_transfer_ended,
    ended_in_data_or_error,
    fetch_bound,
    fetch_timeout_failed_and_transport_recovered,
    manifest_collective,
    no_leftovers,
    partition_transfer_ended_in_bound,
    receive_error_reached_caller,
    recovered,
    restarted_actor_transfers_again,
    transfer_rule,
    transport_traits,
    transport_types,
)

# Every name the checks, the tests and Area.judges read here (mypy's implicit_reexport stays off).
__all__ = [
    "ACTOR_ERRORS", "EVIDENCE", "JUDGES", "ROUNDING", "TYPE_LABEL", "Findings", "M", "_Wrong", "actor_error",
    "assigned", "at_least", "device_count", "env_var", "evidence_verdict", "expected_devices", "expected_type",
    "guarded", "holder_audit", "labels_match", "left_to_ray", "most_fetch_timeout_s", "on_node", "pid", "record",
    "records", "recovery_rule", "scenario_findings", "selector_of", "signature_findings", "signatures", "text",
    "universe", "view_after_loss", "within", "_freed_device_reused", "crashed_holders_device_reused",
    "fresh_cluster_in_time", "fresh_start_same_devices", "killed_holders_device_reused",
    "restarted_holder_views_agree", "retry_holds_crashed_attempts_device", "storm_ran_release_rounds",
    "storm_rounds_audited", "_moved_to_c", "dead_node_left_view_survivors_kept",
    "lost_bundle_placed_again_survivor_kept", "packed_group_waits_for_its_domain",
    "partitioned_node_replaced_and_rejoined_new", "pinned_work_waited_for_rejoin",
    "pool_work_moved_to_matching_survivor", "rejoined_node_advertises_as_before", "ABORT_EVIDENCE",
    "NO_ABORT_EVIDENCE", "PER_TYPE", "PerType", "_dead_source", "abort_branch", "dead_source_before_fetch_ended",
    "dead_source_mid_transfer_ended", "ended_in_data_or_error", "fetch_bound",
    "fetch_timeout_failed_and_transport_recovered", "manifest_collective", "no_leftovers",
    "partition_transfer_ended_in_bound", "receive_error_reached_caller", "recovered",
    "restarted_actor_transfers_again", "transfer_rule", "transport_traits", "transport_types",
]
