"""Failure-recovery area (FR-*): devices, actors, nodes and transfers that fail.

The promise certified here is "nothing lost, nothing hung": after a failure every device goes
back to the pool and is usable again, restarted work holds a device that nobody else holds,
and every failure surfaces as an error within a stated bound instead of a hang.

Modules, one job each:

* `bounds`    – the time bounds the checklist states (one source of truth, unit-tested against
                tiers/checklist.yaml).
* `scenario`  – timing scenarios against their bound, bounded waits, the report's Recovery section.
* `actors`    – what runs inside Ray workers (device holders, an attempt ledger); importable.
* `audit`     – pure functions judging what holders report (ids agree, disjoint, complete).
* `devices`   – driver-side helpers for device scenarios (holders pinned to a node, releases).
* `nodes`     – the simulated multi-node shape and node kill / rejoin helpers.
* `transfers` – RDT failure scenarios (source death, fetch timeout, receive errors).
"""
