"""The collective area's judges: each check's recorded evidence + the release's params -> its outcome.

The checklist names a check's judge (`judge: <function name>`); the live check decides with it
(CheckContext.decide) and `verify` decides again with it (conformance/report/judges.py says the
rules every judge keeps). Pure: no Ray, no clock, no I/O.

One module per group of checks, each registering its judges in the one table (common.JUDGES,
the area's `Area.judges` reads it here): bandwidth (CC-010) and memory (CC-008), failure (CC-009),
ops (CC-004..CC-007: the op programs, orders, creation paths, named groups), contract (CC-001..CC-003:
the class and its registration), rdt (CC-011, CC-012: RDT over the backend).
"""
from __future__ import annotations

from conformance.areas.collective.judges.bandwidth import (  # registers its judges
    bus_bandwidth_against_references,
    compared_at_star_size,
    member_memory_growth,
)
from conformance.areas.collective.judges.common import (  # the table and what the area shares
    _WAIT_SLACK_S,
    HOOK_ELEMENTS,
    HOOK_MEMBERS,
    JUDGES,
    LEAK_MEMBERS,
    _block,
    _claimed,
)
from conformance.areas.collective.judges.contract import (  # registers its judges
    availability_false_where_missing,
    group_class_meets_the_contract,
    registered_in_driver_and_workers,
)
from conformance.areas.collective.judges.failure import (  # registers its judges
    SURVIVOR_ERROR,
    SURVIVOR_HUNG,
    SURVIVOR_RETURNED,
    every_survivor_errored_in_time,
    survivors_errored_in_time,
)
from conformance.areas.collective.judges.ops import (  # registers its judges
    CREATION_PATHS,
    _expected_nodes,
    _group_wrong,
    _units_given,
    creation_paths_give_the_ranks_asked_for,
    every_op_exact_at_each_world_size,
    interleaved_messages_in_order,
    named_groups_isolated,
)
from conformance.areas.collective.judges.rdt import (  # registers its judges
    _per_device,
    _Wrong,
    rdt_objects_arrive_two_sided,
    rdt_without_a_group_errs_in_time,
)

# Every name the checks, the tests and Area.judges read here (mypy's implicit_reexport stays off).
__all__ = [
    "bus_bandwidth_against_references", "compared_at_star_size", "member_memory_growth", "_WAIT_SLACK_S",
    "HOOK_ELEMENTS", "HOOK_MEMBERS", "JUDGES", "LEAK_MEMBERS", "_block", "_claimed",
    "availability_false_where_missing", "group_class_meets_the_contract", "registered_in_driver_and_workers",
    "SURVIVOR_ERROR", "SURVIVOR_HUNG", "SURVIVOR_RETURNED", "every_survivor_errored_in_time",
    "survivors_errored_in_time", "CREATION_PATHS", "_expected_nodes", "_group_wrong", "_units_given",
    "creation_paths_give_the_ranks_asked_for", "every_op_exact_at_each_world_size", "interleaved_messages_in_order",
    "named_groups_isolated", "_per_device", "_Wrong", "rdt_objects_arrive_two_sided",
    "rdt_without_a_group_errs_in_time",
]
