"""verify's recomputation of what a report's own evidence says (pure; no signature or file work).

Three lines, each recomputed from report.json and the release's checklist, never taken from the
submitter's claims:

  evidence   every judged (metric-based) check's outcome is what its judge
             (conformance.report.judges) gives on its recorded metrics under the release's params
             (its raw data and the counts the params fix included), every check records exactly
             the release's params, and, for every check:
               plausible  no duration (`*_s`) or bandwidth (`*_gbps`) anywhere in its metrics is
                          negative or not finite
               scenarios  a pass has every recorded scenario `ok` within its bound, and no bound
                          larger than the release's params give (the recovery scenarios record
                          their own failure and the bound they ran under)
               durations  no step's recorded time (a scenario's elapsed_s or steps_s, a wait's
                          took_s or excluded_s, a figure left to Ray) is longer than the check's
                          own duration_s (entry_rules.duration_problems)
               failures   a pass records no failure of its own: every `problems`, `wrong` and
                          `wrong_pairs` in its metrics (at any depth) is empty or zero, as every
                          check that records them asserts
               types      a pass recording the accelerator's type not applicable records a reason
                          the suite gives and the manifest bears out (conformance.rdt.accelerator_rule)
               ray time   the seconds a pass leaves to Ray's machinery (a recovery figure's
                          released_s/started_s/crash_waited_s/retried_s/registered_s, its plugin
                          waits' excluded_s) are no more than its recorded waits on Ray took
                          (conformance.signing.ray_seconds)
               waits      every wait it recorded (conformance.timing.owned: whose time, its bound,
                          what it was granted, how long it took) holds under the release's params:
                          a plugin's bound is the param's value and never stretched, a wait on Ray's
                          machinery no wider than the suite stretches, and a pass records no
                          plugin wait past its bound, and every per-type scenario's plugin wait on
                          every type it exercised (per_type_wait_problems); each wait of a pass has
                          the owner and the bound its release's checklist declares (`waits:`), and a
                          check that declares plugin waits records one (conformance.catalog.declared_waits)
               reference  a figure measured against a manifest reference records that reference
                          (CC-010's nominal_link_gbps = the manifest's collective.nominal_link_gbps)
               tests      its tests are tests of its own area (the release's area's folder)
               size knob  a check sized by RAY_CONFORMANCE_TRANSPORT_MAX_BYTES records the value the
                          run record (selection.environment) gives, and the line names the checks
                          judged at a capped size (size_cap_problems)
               traits     every record of the transport's traits (one_sided, can_abort: what the
                          vendor's class returned, which several judges branch on) agrees with the
                          report's Transport section and with every other record of them
                          (transport_trait_problems)
               copies     PF-002's and PF-003's copies of the PF-001 sweep are the sweep's: its
                          largest size, the largest the object store held, their trials, PF-002's
                          object store there (conformance.signing.same_measurement)
               references a merit reference diff reads as the host's, recorded beside the samples
                          it is the median of, is their median (same_measurement.REFERENCE_SAMPLES)
               nodes      DP-006's, DP-007's and DP-009's node records are the nodes (and devices)
                          of the run's own description of its cluster (environment.devices)
               identity   TL-001's node records are nodes of the run with their own labels, the
                          transport checks' per-type nodes are the run's, and no two device types'
                          errors name one Ray object (same_measurement.identity_problems)
               stretch    the run's machinery factor is what its measurements give, and TR-019's
                          wave bound, every wait on Ray's machinery and (on a cluster the suite
                          started) the RDT fetch timeout stretch no further than it
                          (same_measurement.stretch_problems); a plugin wait naming no param is held
                          to its scenario's bound (timing/owned.plugin_bound); no bandwidth is past
                          MAX_PLAUSIBLE_GBPS (plausible)
               dtypes     TR-001's and TR-005's dtypes on each type are the one probe's answer
                          (conformance.signing.same_probe)
             On a merged report (shards) copies and dtypes hold over each shard's checks of the
             suite's plan, nodes, identity's nodes, coverage and stretch within each shard by the
             `shards` line (conformance.signing.merged_evidence says which rule applies how)
  summary    the summary counts equal the counts of the per-check outcomes, every outcome key
             present (a deleted or altered key fails)
  selection  the run executed the whole checklist, uninterrupted; a partial run (collect-only,
             -k, -m, --deselect, node ids, a subset of modules, checks no test ran for, the
             collection record missing) is "not a certification run" (conformance.selection
             and signing/trust.run_problems)

The figure rules of one check's record (plausible, scenarios, failures, reference, tests) live in
conformance/signing/entry_rules.py; entry_problems here applies them with the rest.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Mapping

from conformance.catalog import declared_waits
from conformance.catalog.data import Check, Checklist
from conformance.catalog.selection import partial_reasons
from conformance.catalog.strict_input import as_map
from conformance.rdt import accelerator_rule
from conformance.report import judges
from conformance.report.results import OUTCOMES
from conformance.report.view import Report
from conformance.sanitize import terminal
from conformance.signing.entry_rules import (
    duration_problems,
    exclusion_problems,
    implausible_figures,
    recorded_failures,
    reference_problems,
    release_scenario_bound,
    scenario_problems,
    test_area_problems,
)
from conformance.signing.passed_waits import passed_wait_problems
from conformance.signing.ray_seconds import ray_seconds_problems
from conformance.timing.owned import per_type_wait_problems, wait_problems

NOT_CERTIFICATION = "not a certification run"
# Held-out round 25, N25_37: a check that failed and passed on its re-run records both attempts, and
# verify refuses a pass beside attempts that failed; but a flake's attempts deleted whole (the outcome
# "pass", the duration the passing attempt's, junit.xml re-synced) leave no field behind: the record
# verify judges is the passing attempt's own. So "no flake" (stable's rule) is the vendor's word
# (redteam/FINDINGS.md, round 27; docs/signing.md "What verify cannot recompute").
ATTEMPTS_WORD = ("; whether each pass was its check's first attempt rests on the vendor's word (a flake's "
                 "attempts deleted whole leave no record)")


def _claimed(entry: Mapping[str, Any]) -> str:
    """The outcome the entry claims its test reached (a waived check reached `fail`)."""
    outcome = str(entry.get("outcome"))
    if outcome == "waived":
        waiver = as_map(entry.get("waiver"))
        return str(waiver.get("original_outcome") or "fail")
    return outcome


@dataclass
class Recomputed:
    """What verify decided again of a report's passes: those its judges recomputed, and those
    resting on the vendor's word (check id -> why: the release declares the check `unjudged`, or
    declares no judge for it)."""

    passes: int = 0
    recomputed: list[str] = field(default_factory=list)
    vendor_word: dict[str, str] = field(default_factory=dict)

    def line(self) -> str:
        said = f"{len(self.recomputed)} of {self.passes} pass(es) recomputed from their evidence by their judges"
        if not self.vendor_word:
            return said
        by_why: dict[str, list[str]] = {}
        for cid, why in sorted(self.vendor_word.items()):
            by_why.setdefault(why, []).append(cid)
        groups = "; ".join(f"{', '.join(ids)} ({why})" for why, ids in by_why.items())
        return f"{said}; {len(self.vendor_word)} on the vendor's word: " + terminal(groups, limit=1200)


def _unjudged_why(check: Check) -> str:
    if check.unjudged:
        return check.unjudged
    return "its release declares no judge for it"


def evidence_problems(checks: list[Any], checklist: Checklist, manifest: Mapping[str, Any] | None = None,
                      remote: bool = False) -> tuple[list[str], Recomputed]:
    """(problems, what was recomputed) for the report's checks under the release's checklist
    (`manifest`: the report's, which judges read beside the evidence)."""
    manifest = manifest or {}
    released = checklist.by_id()
    problems: list[str] = []
    tally = Recomputed()
    for entry in checks:
        if not isinstance(entry, Mapping) or str(entry.get("id")) not in released:
            continue  # completeness names unknown or malformed entries
        check = released[str(entry["id"])]
        if entry.get("params") != check.params:
            problems.append(f"{check.id} records params {terminal(entry.get('params'), limit=160)}, "
                            f"the release's are {check.params}")
        problems += [f"{check.id} {p}" for p in entry_problems(entry, check, manifest)]
        claimed = _claimed(entry)
        if claimed == "pass":
            tally.passes += 1
        judge = judges.judge_for(check)
        if judge is None:
            if claimed == "pass":
                tally.vendor_word[check.id] = _unjudged_why(check)
            continue
        if claimed not in ("pass", "fail"):
            continue
        if claimed == "pass":
            tally.recomputed.append(check.id)
        verdict = judges.contradiction(check, claimed, as_map(entry.get("metrics")), manifest, remote)
        if verdict is None:
            continue
        reason = terminal(verdict.reason, limit=240)
        if claimed == "pass":
            problems.append(f"{check.id} claims pass but its evidence gives {verdict.outcome}: {reason}")
        else:
            problems.append(f"{check.id} claims {entry.get('outcome')} (failed) but its evidence gives pass: {reason}")
    return problems, tally


def entry_problems(entry: Mapping[str, Any], check: Check, manifest: Mapping[str, Any]) -> list[str]:
    """What one check's own record contradicts, whatever its judge (see the module docstring)."""
    area = check.area
    metrics = as_map(entry.get("metrics"))
    problems = [f"records an implausible figure: {', '.join(implausible_figures(metrics))}"] \
        if implausible_figures(metrics) else []
    passed = _claimed(entry) == "pass"
    problems += [f"{'claims pass but ' if passed else ''}records {p}"
                 for p in wait_problems(metrics.get("waits"), check.params, passed=passed,
                                        plugin_bound_s=release_scenario_bound(check, metrics))]
    problems += [f"claims pass but {p}" for p in per_type_wait_problems(metrics.get("waits"), metrics.get("devices"))
                 if passed]
    if passed:
        problems += [f"claims pass but {p}" for p in passed_wait_problems(metrics.get("waits"))]
        problems += [f"claims pass but {p}" for p in declared_waits.problems(metrics.get("waits"), check.waits)]
        problems += [f"claims pass but {p}" for p in
                     scenario_problems(metrics, release_scenario_bound(check, metrics))]
        problems += [f"claims pass but its metrics record a failure: {p}" for p in recorded_failures(metrics)]
        not_run = accelerator_rule.recorded_problem(metrics, manifest)
        problems += [f"claims pass but {not_run}"] if not_run else []
        if check.judge or "waits" in metrics:   # releases before the waits record (and declared judges) kept none
            problems += [f"claims pass but {p}" for p in exclusion_problems(metrics)]
            problems += [f"claims pass but {p}" for p in ray_seconds_problems(metrics, area)]
    problems += duration_problems(metrics, entry.get("duration_s"))
    problems += reference_problems(check, metrics, manifest)
    problems += test_area_problems(entry.get("tests"), area)
    return problems


def summary_problems(report: Report) -> list[str]:
    """The summary's counts against the per-check outcomes, and each check's outcome against its
    recorded attempts (a `pass` whose attempts show a failure is flaky at best: refused). An
    outcome added later (`flaky`) may be absent from an older report's summary while no check has it."""
    from conformance.report.results import LATER_OUTCOMES, attempt_problems

    counts = {o: 0 for o in OUTCOMES}
    problems: list[str] = []
    for check in report.checks:
        if check.outcome in counts:
            counts[check.outcome] += 1
        problems += [terminal(p, limit=300) for p in attempt_problems(check.document)]
    summary = report.summary
    problems += [f"{k} is {terminal(summary[k], limit=40)}, the checks give {counts[k]}"
                 for k in OUTCOMES if k in summary and summary[k] != counts[k]]
    problems += [f"{k} is missing (the checks give {counts[k]})" for k in OUTCOMES
                 if k not in summary and not (k in LATER_OUTCOMES and counts[k] == 0)]
    extra = sorted(str(k) for k in summary if k not in counts)
    if extra:
        problems.append(f"unknown key(s) {terminal(', '.join(extra), limit=120)}")
    return problems


def size_cap_problems(checks: list[Any], environment: Mapping[str, Any]) -> tuple[list[str], str]:
    """(problems, what the evidence line adds) of the size knob (conformance.rdt.config: a check
    sized by RAY_CONFORMANCE_TRANSPORT_MAX_BYTES records it as metric size_cap, the run record as
    selection.environment). The two must agree: a cap in a check's evidence the run record does
    not show, or another value, is a problem. A capped check's judge holds its sizes to the cap,
    so its pass is evidence of the capped sizes only: the line names those checks and the cap
    (the release's sizes were not moved), never silently."""
    from conformance.rdt.config import DEFAULT_MAX_BYTES, MAX_BYTES_ENV, SIZE_CAP, format_size

    run_cap = environment.get(MAX_BYTES_ENV)
    problems: list[str] = []
    capped: list[str] = []
    for entry in checks:
        cap = as_map(entry).get("metrics")
        cap = cap.get(SIZE_CAP) if isinstance(cap, Mapping) else None
        if cap is None:
            continue
        cid = str(as_map(entry).get("id"))
        value = cap.get("value") if isinstance(cap, Mapping) else None
        if run_cap is None or value != run_cap:
            problems.append(f"{cid} records {MAX_BYTES_ENV}={terminal(repr(value), limit=40)} but the run record "
                            f"(selection.environment) says {terminal(repr(run_cap), limit=40)}")
        else:
            capped.append(cid)
    note = ""
    if capped:
        note = (f"; {len(capped)} check(s) ran capped by {MAX_BYTES_ENV}={terminal(str(run_cap), limit=40)} "
                f"({', '.join(capped)}): judged at that size, not the release's {format_size(DEFAULT_MAX_BYTES)}")
    return problems, note


TRAIT_AREAS = ("transport", "recovery")   # the areas whose checks record the manifest's transport's traits


def _trait_records(check_id: str, metrics: Mapping[str, Any]) -> list[tuple[str, str, Any]]:
    """(where, trait, value) of every record of the transport's traits in one check's metrics: its
    `transport` record (the usage and recovery checks), and one_sided where a check records it
    beside its behaviour (TR-009, TR-010: the metrics, or each device type's under its name)."""
    from conformance.rdt.config import TRAITS

    found: list[tuple[str, str, Any]] = []
    record = metrics.get("transport")
    if isinstance(record, Mapping):
        found += [(f"{check_id} transport.{t}", t, record[t]) for t in TRAITS if t in record]
    if "one_sided" in metrics:
        found.append((f"{check_id} one_sided", "one_sided", metrics["one_sided"]))
    devices = metrics.get("devices")
    for d in devices if isinstance(devices, list) else []:
        per = metrics.get(d) if isinstance(d, str) else None
        if isinstance(per, Mapping) and "one_sided" in per:
            found.append((f"{check_id} {d}.one_sided", "one_sided", per["one_sided"]))
    return found


def transport_trait_problems(checks: list[Any], sections: Mapping[str, Any], checklist: Checklist) -> list[str]:
    """Every record of the transport's traits in the report says the same. The manifest declares
    no trait of a vendor's own transport; its class's answers are recorded by every check that
    reads them (and by the run in the Transport section), and judges branch on them (a failure
    that is no failure for a transport that cannot abort). A trait flipped in one check's record
    to make its judge lenient contradicts the run's other records of it, which their own judges
    hold to behaviour (TR-010: the source never sends for a one-sided transport; FR-014: Ray calls
    abort_transport only for one that can abort). Held to the Transport section when it records
    the trait, else to the first record."""
    from conformance.rdt.config import TRAITS
    from conformance.rdt.tables import SECTION

    section = as_map(as_map(as_map(sections).get(SECTION)).get("data")).get("transport")
    want: dict[str, tuple[str, Any]] = {t: (f"the report's {SECTION} section", section[t]) for t in TRAITS
                                        if isinstance(section, Mapping) and t in section}
    released = checklist.by_id()
    problems: list[str] = []
    for entry in checks:
        check = released.get(str(as_map(entry).get("id")))
        metrics = as_map(entry).get("metrics")
        if check is None or check.area not in TRAIT_AREAS or not isinstance(metrics, Mapping):
            continue
        for where, trait, value in _trait_records(check.id, metrics):
            first = want.setdefault(trait, (where, value))
            if value != first[1] or not isinstance(value, bool):
                problems.append(f"{where} is {terminal(repr(value), limit=20)} but {first[0]} says "
                                f"{terminal(repr(first[1]), limit=20)}: the transport's {trait} is one answer of its class")
    return problems[:4]


def evidence_lines(report: Report, checklist: Checklist | None,
                   published: str | None = None) -> list[tuple[str, bool, str]]:
    """(name, ok, detail) lines for verify: evidence, summary, selection. `published`: the day the
    report's release was published (its recorded arguments are judged by the definition of then)."""
    lines: list[tuple[str, bool, str]] = []
    if checklist is None:
        lines.append(("evidence", False, "cannot judge: the release's checklist is not available"))
    else:
        problems, tally, capped = _evidence_problems(report, checklist)
        lines.append(("evidence", not problems, "; ".join(problems) if problems else
                      f"{tally.line()}; every check records the release's params{capped}"))
    problems = summary_problems(report)
    lines.append(("summary", not problems, "; ".join(problems) if problems else
                  "summary counts equal the per-check outcomes" + ATTEMPTS_WORD))
    reasons = _selection_reasons(report, published)
    lines.append(("selection", not reasons, f"{NOT_CERTIFICATION}: {terminal('; '.join(reasons), limit=600)}"
                  if reasons else "the whole checklist ran (nothing deselected, every check has a test result)"))
    return lines


def _entries(report: Report) -> list[Any]:
    """The check entries as JSON: the record rules below judge each check's record as signed."""
    return [c.document for c in report.checks]


def _evidence_problems(report: Report, checklist: Checklist) -> tuple[list[str], Recomputed, str]:
    """The evidence line's problems (see the module docstring), what its judges recomputed and
    what the line adds of the checks run at a capped size."""
    from conformance.signing.coverage_rule import coverage_problems, release_shapes
    from conformance.signing.host_load_rule import host_load_problems
    from conformance.signing.host_verdict import host_verdict_problems
    from conformance.signing.matrix_nodes import matrix_nodes_problems
    from conformance.signing.merged_evidence import one_measurement_problems
    from conformance.signing.same_measurement import (
        identity_problems,
        reference_sample_problems,
        restart_signature_problems,
        same_nodes_problems,
        stretch_problems,
    )
    from conformance.signing.trust import runs_remote

    checks, remote = _entries(report), runs_remote(report.document)
    environment, cluster = report.environment.document, report.cluster
    problems, tally = evidence_problems(checks, checklist, report.manifest, remote)
    wrong_cap, capped = size_cap_problems(checks, report.selection.environment or {})
    problems += wrong_cap
    problems += transport_trait_problems(checks, report.sections or {}, checklist)
    # the rules of one measurement over the checks, a merged report's too (one shard ran each
    # measurement's checks); those of one cluster's node ids within each shard by the shards line
    # (signing/merged_evidence.py)
    merged = report.selection.merged
    problems += one_measurement_problems(checks)
    problems += reference_sample_problems(checks)
    problems += same_nodes_problems(checks, environment, merged=merged)
    problems += matrix_nodes_problems(checks, environment, merged=merged)
    problems += identity_problems(checks, environment, merged=merged)
    problems += restart_signature_problems(checks, environment, remote)
    problems += stretch_problems(checks, cluster, remote, merged=merged)
    shapes = release_shapes(checklist)
    problems += coverage_problems(checks, environment, cluster, remote=remote, merged=merged, shapes=shapes)
    problems += host_verdict_problems(checks, cluster, report.preflight or {}, shapes=shapes)
    problems += host_load_problems(checks, environment)
    return problems, tally, capped


def _selection_reasons(report: Report, published: str | None) -> list[str]:
    """Why the run is not a certification run: conformance.selection's reasons and trust's, which
    judge the JSON as signed (an older release's records included)."""
    from conformance.run.certification import legacy_forms
    from conformance.signing.trust import run_problems

    return list(dict.fromkeys(partial_reasons(report.document)
                              + run_problems(report.document, legacy=legacy_forms(published))))
