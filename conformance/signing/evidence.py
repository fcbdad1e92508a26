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
               failures   a pass records no failure of its own: every `problems`, `wrong` and
                          `wrong_pairs` in its metrics (at any depth) is empty or zero, as every
                          check that records them asserts
               waits      every wait it recorded (conformance.timing.owned: whose time, its bound,
                          what it was granted, how long it took) holds under the release's params:
                          a plugin's bound is the param's value and never stretched, a wait on Ray's
                          machinery no wider than the suite stretches, and a pass records no
                          plugin wait past its bound
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
                          largest size, the largest the object store held, their trials
                          (conformance.signing.same_measurement)
               nodes      DP-006's, DP-007's and DP-009's node records are the nodes (and devices)
                          of the run's own description of its cluster (environment.devices)
  summary    the summary counts equal the counts of the per-check outcomes, every outcome key
             present (a deleted or altered key fails)
  selection  the run executed the whole checklist, uninterrupted; a partial run (collect-only,
             -k, -m, --deselect, node ids, a subset of modules, checks no test ran for, the
             collection record missing) is "not a certification run" (conformance.selection
             and signing/trust.run_problems)
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any, Mapping

from conformance.catalog.data import Check, Checklist
from conformance.catalog.selection import partial_reasons
from conformance.catalog.strict_input import as_list, as_map
from conformance.report import judges
from conformance.report.results import OUTCOMES
from conformance.sanitize import terminal
from conformance.timing.host_load import MAX_FACTOR
from conformance.timing.owned import wait_problems

NOT_CERTIFICATION = "not a certification run"


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
        problems += [f"{check.id} {p}" for p in entry_problems(entry, check, manifest, remote)]
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


_DURATION, _BANDWIDTH = "_s", "_gbps"


def implausible_figures(metrics: Any, under: str = "", limit: int = 3) -> list[str]:
    """Durations and bandwidths (any number under a key ending in _s or _gbps, at any depth) that
    are negative or not finite: no clock runs backwards, no link moves negative bytes."""
    found: list[str] = []
    stack: list[tuple[str, Any, bool]] = [(under, metrics, False)]
    while stack and len(found) < limit:
        path, value, figure = stack.pop()
        if isinstance(value, Mapping):
            for k, v in value.items():
                key = str(k)
                stack.append((f"{path}.{key}" if path else key, v,
                              figure or key.endswith(_DURATION) or key.endswith(_BANDWIDTH)))
        elif isinstance(value, list):
            stack.extend((f"{path}[{i}]", v, figure) for i, v in enumerate(value))
        elif figure and isinstance(value, (int, float)) and not isinstance(value, bool) \
                and (not math.isfinite(value) or value < 0):
            found.append(f"{path} = {value!r}")
    return found


def release_scenario_bound(check: Check, metrics: Mapping[str, Any], remote: bool) -> float | None:
    """The most a scenario of `check` may be given under the release's params
    (conformance/catalog/scenario_bounds.scenario_bound), stretched on a vendor's own cluster by
    its longer RDT fetch timeout (FR-012..016, as the live check does); None when the release's
    params do not give it (a release whose check predates the bound's params)."""
    from conformance.catalog.scenario_bounds import SCENARIO_CHECKS, scenario_bound
    from conformance.errors import UserError

    if check.id not in SCENARIO_CHECKS:
        return None
    try:
        bound = scenario_bound(check)
    except (UserError, KeyError, TypeError, ValueError):
        return None
    fetch = as_map(metrics.get("transport")).get("rdt_fetch_timeout_s")
    param = check.params.get("rdt_fetch_timeout_s")
    if remote and check.id in _STRETCHED and isinstance(fetch, (int, float)) and isinstance(param, (int, float)):
        # never further than the suite stretches a wait on Ray's machinery: a cluster configured
        # longer is not applicable (conformance/areas/recovery/fixtures.py), so no argument widens it
        bound += min(max(float(fetch) - float(param), 0.0), float(param) * (MAX_FACTOR - 1.0))
    return bound


_STRETCHED = ("FR-012", "FR-013", "FR-014", "FR-015", "FR-016")  # TransferRecoveryCtx.bound()


def _excluded_s(scenario: Mapping[str, Any]) -> float | str:
    """The seconds a scenario left out of its bound for Ray's own machinery (an actor's start:
    conformance/timing/clock.Clock.exclude records them as steps_s.excluded_s and adds them to
    bound_s), or why that record cannot be believed: it is a finite, non-negative figure no larger
    than the scenario's own elapsed time (time that did not pass cannot have gone to Ray)."""
    value = as_map(scenario.get("steps_s")).get("excluded_s", 0.0)
    elapsed = scenario.get("elapsed_s")
    if not isinstance(value, (int, float)) or isinstance(value, bool) or not math.isfinite(value) or value < 0:
        return f"records steps_s.excluded_s {terminal(repr(value), limit=20)}, not a non-negative number of seconds"
    if isinstance(elapsed, (int, float)) and not isinstance(elapsed, bool) and value > elapsed + 0.001:
        return f"records steps_s.excluded_s {value:g}, more than its elapsed {elapsed:g} s"
    return float(value)


def scenario_problems(metrics: Mapping[str, Any], most: float | None = None) -> list[str]:
    """Scenarios a pass records as failed or over their bound (conformance/areas/recovery/scenario.py:
    the scenario is `ok` only when it ended within bound_s), or given a bound larger than the
    release's params give (`most`) plus the seconds it recorded leaving out for Ray's machinery."""
    scenarios = metrics.get("scenarios")
    if scenarios is None:
        return []
    if not isinstance(scenarios, Mapping):
        return ["metrics.scenarios is not an object"]
    problems = []
    for name, sc in scenarios.items():
        sc = as_map(sc)
        outcome, elapsed, bound = sc.get("outcome"), sc.get("elapsed_s"), sc.get("bound_s")
        excluded = _excluded_s(sc)
        if isinstance(excluded, str):
            problems.append(f"scenario {terminal(name, limit=60)} {excluded}")
        elif most is not None and isinstance(bound, (int, float)) and not isinstance(bound, bool) \
                and bound > most + excluded + (0.001 if excluded else 1e-6):   # excluded_s is rounded to 1 ms
            problems.append(f"scenario {terminal(name, limit=60)} records bound_s {bound:g}, more than the "
                            f"{most:g} s the release's params give"
                            + (f" plus the {excluded:g} s it left out for Ray's machinery" if excluded else ""))
        elif outcome != "ok":
            problems.append(f"scenario {terminal(name, limit=60)} records outcome {terminal(repr(outcome), limit=40)}")
        elif not isinstance(elapsed, (int, float)) or not isinstance(bound, (int, float)) \
                or isinstance(elapsed, bool) or isinstance(bound, bool) \
                or elapsed > bound + 0.001:  # elapsed is rounded to 1 ms
            problems.append(f"scenario {terminal(name, limit=60)} took {terminal(repr(elapsed), limit=20)} s "
                            f"of its {terminal(repr(bound), limit=20)} s bound")
    return problems


def _scenario_exclusions(metrics: Any) -> list[float]:
    """The seconds each recorded scenario left out of its bound for Ray's machinery, at any depth
    (`scenarios.<name>.steps_s.excluded_s`, a transport check's `scenario.excluded_s` per type)."""
    found: list[float] = []
    stack: list[Any] = [metrics]
    while stack:
        value = stack.pop()
        if isinstance(value, Mapping):
            for key, inner in value.items():
                if key == "scenarios" and isinstance(inner, Mapping):
                    scenarios = [x for x in inner.values() if isinstance(x, Mapping)]
                elif key == "scenario" and isinstance(inner, Mapping):
                    scenarios = [inner]
                else:
                    stack.append(inner)
                    continue
                for sc in scenarios:
                    raw = as_map(sc.get("steps_s")).get("excluded_s", sc.get("excluded_s", 0.0))
                    if isinstance(raw, (int, float)) and not isinstance(raw, bool) and math.isfinite(raw):
                        found.append(float(raw))
        elif isinstance(value, list):
            stack.extend(value)
    return found


def exclusion_problems(metrics: Mapping[str, Any]) -> list[str]:
    """Time a check's scenarios left out of their bounds for Ray's machinery is time its recorded
    waits on Ray left out (conformance.run.budget: each such wait records its `excluded_s`), never
    more: a bound cannot stretch by an exclusion no recorded wait spent. Where the waits record
    kept only the first waits (`count` above the ones listed), each one not listed may account
    for as much as the largest listed exclusion."""
    claimed = [x for x in _scenario_exclusions(metrics) if x > 0]
    if not claimed:
        return []
    waits = as_map(metrics.get("waits"))
    each = [as_map(e) for e in as_list(waits.get("each"))]
    spent = [float(e["excluded_s"]) for e in each if isinstance(e.get("excluded_s"), (int, float))
             and not isinstance(e.get("excluded_s"), bool) and math.isfinite(e["excluded_s"]) and e["excluded_s"] > 0]
    count = waits.get("count")
    unlisted = max(int(count) - len(each), 0) if isinstance(count, int) and not isinstance(count, bool) else 0
    allowed = sum(spent) + unlisted * max(spent, default=0.0)
    slack = 0.002 * (len(claimed) + len(spent))   # each figure is rounded to 1 ms
    if sum(claimed) <= allowed + slack:
        return []
    return [f"its scenarios left {sum(claimed):.3f} s out of their bounds for Ray's machinery, but its recorded "
            f"waits on Ray left out {allowed:.3f} s: a bound stretched by time no recorded wait spent"]


FAILURE_KEYS = ("problems", "wrong", "wrong_pairs")


def recorded_failures(metrics: Any, limit: int = 3) -> list[str]:
    """Paths of `problems` / `wrong` / `wrong_pairs` figures that record a failure (anything but
    empty, zero or null): the checks that record them fail whenever one is not."""
    found: list[str] = []
    stack: list[tuple[str, Any]] = [("", metrics)]
    while stack and len(found) < limit:
        path, value = stack.pop()
        if isinstance(value, Mapping):
            for k, v in value.items():
                key, here = str(k), f"{path}.{k}" if path else str(k)
                if key in FAILURE_KEYS and v not in (None, 0, [], {}) and not isinstance(v, bool):
                    found.append(f"{terminal(here, limit=80)} = {terminal(repr(v), limit=80)}")
                else:
                    stack.append((here, v))
        elif isinstance(value, list):
            stack.extend((f"{path}[{i}]", v) for i, v in enumerate(value))
    return found


def _manifest_value(manifest: Mapping[str, Any], path: str) -> Any:
    value: Any = manifest
    for key in path.split("."):
        value = value.get(key) if isinstance(value, Mapping) else None
    return value


def reference_problems(check: Check, metrics: Mapping[str, Any], manifest: Mapping[str, Any]) -> list[str]:
    """A judged figure's reference that is not the manifest's (dropped, or another value)."""
    judge = judges.judge_for(check)
    if judge is None or not all(n in metrics for n in judge.needs):
        return []  # nothing was measured (a fail before measuring, not applicable)
    problems = []
    for metric, path in judge.references:
        declared, recorded = _manifest_value(manifest, path), metrics.get(metric)
        same = (declared is None and recorded is None) or (
            isinstance(declared, (int, float)) and isinstance(recorded, (int, float))
            and not isinstance(recorded, bool) and math.isclose(float(declared), float(recorded), rel_tol=1e-9))
        if not same:
            problems.append(f"records {metric} {terminal(repr(recorded), limit=30)} but the manifest's {path} is "
                            f"{terminal(repr(declared), limit=30)}: judged without the reference it was measured against")
    return problems


def test_area_problems(tests: Any, area: str) -> list[str]:
    """Tests that are not in the area's folder of the checks (`<area>/test_*.py::…`, directly: a
    folder nested in it or around it is a vendor's, not the suite's)."""
    if not isinstance(tests, list):
        return []  # the selection line judges a check without tests
    foreign = [t for t in tests if not isinstance(t, str) or t.split("::")[0].replace("\\", "/").split("/")[:-1] != [area]]
    return [f"names test(s) outside its area {area!r}: {terminal(', '.join(map(str, foreign[:2])), limit=160)}"] \
        if foreign else []


def entry_problems(entry: Mapping[str, Any], check: Check, manifest: Mapping[str, Any],
                   remote: bool = False) -> list[str]:
    """What one check's own record contradicts, whatever its judge (see the module docstring).
    `remote`: the run was on the vendor's own cluster (signing/trust.runs_remote)."""
    area = check.area
    metrics = as_map(entry.get("metrics"))
    problems = [f"records an implausible figure: {', '.join(implausible_figures(metrics))}"] \
        if implausible_figures(metrics) else []
    passed = _claimed(entry) == "pass"
    problems += [f"{'claims pass but ' if passed else ''}records {p}"
                 for p in wait_problems(metrics.get("waits"), check.params, passed=passed)]
    if passed:
        problems += [f"claims pass but {p}" for p in
                     scenario_problems(metrics, release_scenario_bound(check, metrics, remote))]
        problems += [f"claims pass but its metrics record a failure: {p}" for p in recorded_failures(metrics)]
        if check.judge or "waits" in metrics:   # releases before the waits record (and declared judges) kept none
            problems += [f"claims pass but {p}" for p in exclusion_problems(metrics)]
    problems += reference_problems(check, metrics, manifest)
    problems += test_area_problems(entry.get("tests"), area)
    return problems


def summary_problems(report: Mapping[str, Any]) -> list[str]:
    """The summary's counts against the per-check outcomes, and each check's outcome against its
    recorded attempts (a `pass` whose attempts show a failure is flaky at best: refused). An
    outcome added later (`flaky`) may be absent from an older report's summary while no check has it."""
    from conformance.report.results import LATER_OUTCOMES, attempt_problems

    checks = as_list(report.get("checks"))
    counts = {o: 0 for o in OUTCOMES}
    problems: list[str] = []
    for entry in checks:
        outcome = entry.get("outcome") if isinstance(entry, Mapping) else None
        if outcome in counts:
            counts[outcome] += 1
        if isinstance(entry, Mapping):
            problems += [terminal(p, limit=300) for p in attempt_problems(entry)]
    summary = as_map(report.get("summary"))
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


def evidence_lines(report: Mapping[str, Any], checklist: Checklist | None,
                   published: str | None = None) -> list[tuple[str, bool, str]]:
    """(name, ok, detail) lines for verify: evidence, summary, selection. `published`: the day the
    report's release was published (its recorded arguments are judged by the definition of then)."""
    lines: list[tuple[str, bool, str]] = []
    checks = as_list(report.get("checks"))
    if checklist is None:
        lines.append(("evidence", False, "cannot judge: the release's checklist is not available"))
    else:
        from conformance.signing.same_measurement import same_measurement_problems, same_nodes_problems
        from conformance.signing.trust import runs_remote

        problems, tally = evidence_problems(checks, checklist, as_map(report.get("manifest")), runs_remote(report))
        wrong_cap, capped = size_cap_problems(checks, as_map(as_map(report.get("selection")).get("environment")))
        problems += wrong_cap
        problems += transport_trait_problems(checks, as_map(report.get("sections")), checklist)
        merged = bool(as_map(report.get("selection")).get("shards"))
        problems += same_measurement_problems(checks, merged=merged)
        problems += same_nodes_problems(checks, as_map(report.get("environment")), merged=merged)
        lines.append(("evidence", not problems, "; ".join(problems) if problems else
                      f"{tally.line()}; every check records the release's params{capped}"))
    problems = summary_problems(report)
    lines.append(("summary", not problems, "; ".join(problems) if problems else
                  "summary counts equal the per-check outcomes"))
    from conformance.run.certification import legacy_forms
    from conformance.signing.trust import run_problems

    reasons = list(dict.fromkeys(partial_reasons(report)
                                 + run_problems(report, legacy=legacy_forms(published))))
    lines.append(("selection", not reasons, f"{NOT_CERTIFICATION}: {terminal('; '.join(reasons), limit=600)}"
                  if reasons else "the whole checklist ran (nothing deselected, every check has a test result)"))
    return lines
