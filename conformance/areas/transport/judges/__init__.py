"""The transport area's judges: each check's recorded evidence + the release's params -> its outcome.

The checklist names a check's judge (`judge: <function name>`); the live check decides with it
(CheckContext.decide) and `verify` decides again with it (conformance/report/judges.py says the
rules every judge keeps). Pure: no Ray, no clock, no I/O.

One module per group of checks, each registering its judges in the one table (common.JUDGES, the
area's `Area.judges` reads it here): common (what the checks do, shared with them, and every
declared type's record), memory (TR-013, TR-014), data (TR-001..TR-009), lifecycle (TR-010..TR-012),
usage (TR-015..TR-020: usage and failures). Every name stays importable from here.
"""
from __future__ import annotations

from conformance.areas.transport.judges.common import (  # noqa: F401 - the table and what the area shares
    ANOTHER_CONSUMER,
    BORROWER_STEPS,
    BUSY_SENDER_STEP,
    CONCURRENT_ROUNDS,
    CROSS_NODE_CASES,
    CROSS_NODE_ENDPOINTS,
    DRIVER_GET,
    DRIVER_GET_STORE,
    DRIVER_PUT,
    EXCLUDED_SLACK_S,
    EXTRACT_CASES,
    FETCH_STEPS,
    GC_OBJECTS,
    JUDGES,
    LATER_OBJECT,
    METADATA_EXTRA_CASES,
    NEW_PAIR_STEPS,
    OWNERSHIP_STEPS,
    PAIR,
    PRODUCER_ERROR_STEPS,
    RECEIVER_DIED,
    RECEIVER_KILLED,
    RECOVERY_PHASES,
    RETRY_ATTEMPTS,
    RETURNED,
    SAME_REF_RECEIVES,
    SIDEDNESS_TRANSFERS,
    SOURCE_KEPT_STEPS,
    STEP_READ_SLACK,
    USER_REF_STEPS,
    USER_TIMEOUT_GETS,
    WAVE_STRETCH_MAX,
    Refused,
    TypeFailures,
    count_of,
    declared_devices,
    devices_per_node,
    endpoints_as_the_node_allows,
    errors_of,
    first_type_payload,
    intra_node_endpoints,
    names,
    no_mismatch,
    per_type,
    refusing,
    run_max_bytes,
    sidedness,
    total_agrees,
    trait,
)
from conformance.areas.transport.judges.data import (  # noqa: F401 - registers its judges
    CURRENT_IN_GROUP,
    CURRENT_UNITS,
    PROBE_ERROR,
    concurrent_transfers_each_intact,
    current_round_not_run,
    current_units_not_run,
    driver_get_follows_ray,
    driver_semantics_problems,
    every_container_intact,
    every_dtype_and_shape_bit_exact,
    every_view_as_its_values,
    large_tensor_bit_exact,
    received_metadata_as_sent,
    same_ref_intact_every_time,
    transfers_between_nodes,
    unsupported_dtypes_plausible,
)
from conformance.areas.transport.judges.lifecycle import (  # noqa: F401 - registers its judges
    data_path_matches_sidedness,
    extract_once_on_source_describes,
    extract_problems,
    garbage_collect_once_on_source,
)
from conformance.areas.transport.judges.memory import (  # noqa: F401 - registers its judges
    HELD_PROBES,
    LEAK_PAYLOAD_MAX,
    LEGACY_HELD,
    MiB,
    _memory_growth,
    leak_payload_bytes,
    leak_probes_complete,
    memory_growth_per_round,
    memory_growth_per_round_as_recorded,
    transport_query_answers_in_time,
)
from conformance.areas.transport.judges.usage import (  # noqa: F401 - registers its judges
    async_transfers_and_busy_sender,
    branch_steps,
    driver_fetches_and_timeouts,
    missing_steps,
    producer_errors_reach_consumers,
    ran,
    received_tensors_stay_the_receivers,
    receiver_death_errors_and_recovers,
    refs_passed_as_users_pass_them,
    scenario_checks,
    scenario_record,
    transport_traits,
)
