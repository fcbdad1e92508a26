"""Failure-recovery area (FR-*): devices, actors, nodes and transfers that fail.

The promise certified here is "nothing lost, nothing hung": after a failure every device goes
back to the pool and is usable again, restarted work holds a device that nobody else holds,
and every failure surfaces as an error within a stated bound instead of a hang.

Modules, one job each:

* `bounds`      – each scenario's total bound from its check's params (`scenario_bound`; the
                  requirement texts are unit-tested against tiers/checklist.yaml).
* `scenario`    – timing scenarios against their bound, bounded waits, the report's Recovery section.
* `context`     – RecoveryCtx, the CheckContext every recovery check receives, and its kinds
                  (device node, node lab, registered transport).
* `fixtures`    – the area's one fixture module: `recovery_ctx` builds the kind the check's shape calls for.
* `actors`      – what runs inside Ray workers (device holders, an attempt ledger); importable.
* `audit`       – pure functions judging what holders report (ids agree, disjoint, complete).
* `devices`     – driver-side helpers for device scenarios (holders pinned to a node, releases).
* `nodes`       – the simulated multi-node shape and node kill / rejoin helpers.
* `transfers`   – driver side of RDT failure scenarios (the shape with a short fetch timeout, the
                  driver's fetch timeout, pairs of peers within the area's bounds); the moving
                  itself, the fault-injecting twin and the peers are the RDT harness's
                  (conformance/rdt/).
* `faults`      – fault drivers: what kills, partitions and restarts nodes (cluster_utils or a vendor's).
* `shapes`      – the area's cluster shapes (recovery-devices, -restart, -transfers, -nodes, ...).
* `area`        – the recovery area's declaration (conformance.areas.AREAS).

See docs/recovery.md.
"""
