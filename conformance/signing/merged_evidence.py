"""The cross-check rules of verify's `evidence` line on a merged report (`ray-conformance merge`).

A merged report's checks come from N runs (its shards), each on its own cluster with its own
sweep, probe and machinery measurement, so a rule that compares two records of ONE measurement or
ONE cluster holds only between checks of one shard. Which shard ran a check is not the vendor's
word: it is the suite's plan (catalog.shards.release_plan over the release's checklist, of the
count selection.shards lists; the core from the first shard, as report.merge.merged_checks takes
it), which the `shards` line holds every shard's recorded slice to (report.merge.plan_problems).
Held-out round 34, S1: PF-001's sweep lowered in one hand-made shard, PF-002 and PF-003 kept at
the run's figures in another, and the merged report verified stable because every rule below was
turned off for a merged report. Each rule now applies as follows:

  copies      (same_measurement_problems: PF-002's and PF-003's copies of the PF-001 sweep) over
              the checks of each shard of the suite's plan: the sweep is measured once per run, and
              the plan keeps PF-001..PF-003 in one shard (one area, one shape), so a copy is held
              to the sweep wherever they ran together; a copy in another shard copied that shard's
              own sweep, which its shard's evidence line held
  dtypes      (same_probe: TR-001's and TR-005's dtypes are the one probe's answer) over the checks
              of each shard of the plan: the probe is made once per run
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

from typing import Any, Mapping, Sequence

from conformance.catalog import shards as sh
from conformance.catalog.data import Checklist, load_run_knobs
from conformance.catalog.strict_input import as_list, as_map


def shard_groups(report: Mapping[str, Any], checks: Sequence[Any], checklist: Checklist) -> list[list[Any]]:
    """The merged report's checks by the shard the suite's plan gives them ([] when the report
    lists no count the suite splits into: its `shards` line refuses it). `report` is JSON:
    selection.shards is judged as signed (signing/shards.is_merged)."""
    count = len(as_list(as_map(report.get("selection")).get("shards")))
    knobs = load_run_knobs()
    policy = sh.shard_policy(knobs)
    if not 2 <= count <= policy.max_count:
        return []
    ran = sorted({str(as_map(c).get("id")) for c in checks if as_map(c).get("tests")} - set(policy.core))
    shard_of = {cid: i for i, part in enumerate(sh.release_plan(ran, count, checklist, knobs)) for cid in part}
    groups: list[list[Any]] = [[] for _ in range(count)]
    for c in checks:
        groups[shard_of.get(str(as_map(c).get("id")), 0)].append(c)   # the core: the first shard's
    return groups


def merged_problems(report: Mapping[str, Any], checks: Sequence[Any], checklist: Checklist) -> list[str]:
    """The rules of one measurement (copies, dtypes) over each shard's checks of the suite's plan
    (the module docstring says which rule applies how)."""
    from conformance.signing.same_measurement import same_measurement_problems
    from conformance.signing.same_probe import dtype_probe_problems

    problems: list[str] = []
    for group in shard_groups(report, checks, checklist):
        problems += same_measurement_problems(group, merged=False)
        problems += dtype_probe_problems(group, merged=False)
    return problems
