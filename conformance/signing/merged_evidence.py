"""The cross-check rules of verify's `evidence` line on a merged report (`ray-conformance merge`).

A merged report's checks come from N runs (its shards), each on its own cluster with its own
sweep, probe and machinery measurement, so a rule that compares two records of ONE measurement or
ONE cluster holds only between checks of one shard. Which shard ran a check is the shards'
recorded plan, which the `shards` line holds to its structure (report.merge.plan_problems: every
shard records it, each ran exactly its slice, and the checks that record one measurement twice,
catalog.shards.SAME_SHARD, share a slice), not recomputed from the run's durations, which no
release binds (catalog.shards' docstring). Held-out round 34, S1: PF-001's sweep lowered in one
hand-made shard, PF-002 and PF-003 kept at the run's figures in another, and the merged report
verified stable because every rule below was turned off for a merged report. Each rule now
applies as follows:

  copies      (same_measurement_problems: PF-002's and PF-003's copies of the PF-001 sweep) over
              the union: the rule reads those three checks alone, and a merged report whose
              `shards` line passes ran them in one shard (SAME_SHARD), so the union's records of
              them are that shard's, of its one sweep
  dtypes      (same_probe: TR-001's and TR-005's dtypes are the one probe's answer) over the
              union likewise: it reads those two checks alone, which SAME_SHARD keeps in one shard
  types       (identity_problems' copied types: one check's record of a device type is not another
              type's) over the union: it compares one check's own records
  references  (reference_sample_problems), the size knob, the traits, host verdicts and host load:
              over the union, as on any report (each reads one check, or records every shard states
              alike: selection.environment and the Transport section)
  nodes, identity's nodes, coverage, stretch (DP-006/007/009 and TL-001 node records, the
              transport checks' node lists, node_coverage, the waits' and bounds' stretch by the
              run's machinery factor) compare node ids or the machinery of ONE cluster, which differ
              between shards: applied within each shard, to that shard's whole report against its
              own environment and cluster, by the `shards` line (conformance.signing.shards:
              every shard's own `evidence` line must pass); the merged report's environment and
              cluster are one shard's (report.merge.observer), so the union is not held to them
"""
from __future__ import annotations

from typing import Any, Sequence


def one_measurement_problems(checks: Sequence[Any]) -> list[str]:
    """The rules of one measurement (copies, dtypes) over a report's checks, a merged report's
    too: each reads only the checks of one SAME_SHARD group, which one shard ran (the module
    docstring says why the union is then that shard's)."""
    from conformance.signing.same_measurement import same_measurement_problems
    from conformance.signing.same_probe import dtype_probe_problems

    return same_measurement_problems(checks, merged=False) + dtype_probe_problems(checks, merged=False)
