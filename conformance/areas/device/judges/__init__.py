"""The device area's judges: each check's recorded evidence + the release's params -> its outcome.

The checklist names a check's judge (`judge: <function name>`); the live check decides with it
(CheckContext.decide) and `verify` decides again with it (conformance/report/judges.py says the
rules every judge keeps). Pure: no Ray, no clock, no I/O.

The contract checks record the slice of the run's contract probe their `problems_*` function
reads (conformance.areas.device.evidence); their judges recompute the same problems from it. The
live and host checks record what each task, actor, node and host probe saw. Every judge also
holds the evidence to what the release and the manifest fix: the resource name, the accelerator
type, the devices per node and the node count the manifest declares, the quantities and host
overlays it declares (each must have been exercised), and the counts and ids the release's
params fix (tasks, calls, rounds, the ids set). Evidence that is not what a probe writes (a
number that is not one, a type name beside a value of another type) is an error, never a pass.

One module per group of checks, each registering its judges in the one table (common.JUDGES, the
area's `Area.judges` reads it here): contract (DP-001..DP-005, DP-016), live (DP-006..DP-015), hosts (DP-017..DP-020).
Every name stays importable from here.
"""
from __future__ import annotations

from conformance.areas.device.judges.common import (  # the table and what the area shares
    JUDGES,
    Metrics,
    _accelerator,
    _bool,
    _call,
    _description,
    _ids,
    _key,
    _list,
    _mapping,
    _observed,
    _resource_recorded,
    _str_or_none,
    _typed_value,
    _verdict,
    contract_probe,
    detection_probe,
    manifest_devices,
    manifest_nodes,
    manifest_quantities,
    manifest_resource,
    manifest_type,
)
from conformance.areas.device.judges.contract import (  # registers its judges
    _env_var_problems,
    _round_trip_problems,
    _visible_ids_judge,
    documented_return_types,
    named_variable_written,
    no_other_variable_written,
    resource_name_valid_and_declared,
    unset_variable_reads_none,
    visible_ids_round_trip,
)
from conformance.areas.device.judges.hosts import (  # registers its judges
    FAULT_HOSTS,
    detection_degrades_under_faults,
    host_without_device_detects_nothing,
    node_asking_more_than_visible_refused,
    noset_variable_leaves_visible_ids,
)
from conformance.areas.device.judges.live import (  # registers its judges
    _counts,
    _seen,
    accelerator_type_probed_and_advertised,
    actor_keeps_its_id,
    concurrent_actors_get_disjoint_ids,
    invalid_quantities_refused_with_message,
    node_set_problems,
    nodes_advertise_expected_count,
    one_device_task_sees_its_id,
    preset_variable_restricts_node,
    split_ids,
    task_without_resource_sees_no_variable,
    two_device_task_sees_both_ids,
    valid_quantities_accepted_and_run,
)

# Every name the checks, the tests and Area.judges read here (mypy's implicit_reexport stays off).
__all__ = [
    "JUDGES", "Metrics", "_accelerator", "_bool", "_call", "_description", "_ids", "_key", "_list", "_mapping",
    "_observed", "_resource_recorded", "_str_or_none", "_typed_value", "_verdict", "contract_probe",
    "detection_probe", "manifest_devices", "manifest_nodes", "manifest_quantities", "manifest_resource",
    "manifest_type", "_env_var_problems", "_round_trip_problems", "_visible_ids_judge", "documented_return_types",
    "named_variable_written", "no_other_variable_written", "resource_name_valid_and_declared",
    "unset_variable_reads_none", "visible_ids_round_trip", "FAULT_HOSTS", "detection_degrades_under_faults",
    "host_without_device_detects_nothing", "node_asking_more_than_visible_refused",
    "noset_variable_leaves_visible_ids", "_counts", "_seen", "accelerator_type_probed_and_advertised",
    "actor_keeps_its_id", "concurrent_actors_get_disjoint_ids", "invalid_quantities_refused_with_message",
    "node_set_problems", "nodes_advertise_expected_count", "one_device_task_sees_its_id",
    "preset_variable_restricts_node", "split_ids", "task_without_resource_sees_no_variable",
    "two_device_task_sees_both_ids", "valid_quantities_accepted_and_run",
]
