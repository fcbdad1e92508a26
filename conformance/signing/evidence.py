"""verify's recomputation of what a report's own evidence says (pure; no signature or file work).

Three lines, each recomputed from report.json and the release's checklist, never taken from the
submitter's claims:

  evidence   every judged (metric-based) check's outcome is what its judge
             (conformance.report.judges) gives on its recorded metrics under the release's params, and
             every check records exactly the release's params
  summary    the summary counts equal the counts of the per-check outcomes, every outcome key
             present (a deleted or altered key fails)
  selection  the run executed the whole checklist, uninterrupted; a partial run (collect-only,
             -k, -m, --deselect, node ids, a subset of modules, checks no test ran for, the
             collection record missing) is "not a certification run" (conformance.selection
             and signing/trust.run_problems)
"""
from __future__ import annotations

from typing import Any, Mapping

from conformance.catalog.data import Checklist
from conformance.catalog.strict_input import as_list, as_map
from conformance.report import judges
from conformance.report.results import OUTCOMES
from conformance.report.sanitize import terminal
from conformance.run.selection import partial_reasons

NOT_CERTIFICATION = "not a certification run"


def _claimed(entry: Mapping[str, Any]) -> str:
    """The outcome the entry claims its test reached (a waived check reached `fail`)."""
    outcome = str(entry.get("outcome"))
    if outcome == "waived":
        waiver = as_map(entry.get("waiver"))
        return str(waiver.get("original_outcome") or "fail")
    return outcome


def evidence_problems(checks: list[Any], checklist: Checklist) -> tuple[list[str], int]:
    """(problems, number of judged entries) for the report's checks under the release's checklist."""
    released = checklist.by_id()
    problems: list[str] = []
    judged = 0
    for entry in checks:
        if not isinstance(entry, Mapping) or str(entry.get("id")) not in released:
            continue  # completeness names unknown or malformed entries
        check = released[str(entry["id"])]
        if entry.get("params") != check.params:
            problems.append(f"{check.id} records params {terminal(entry.get('params'), limit=160)}, "
                            f"the release's are {check.params}")
        if check.id not in judges.JUDGES:
            continue
        claimed = _claimed(entry)
        if claimed not in ("pass", "fail"):
            continue
        judged += 1
        metrics = as_map(entry.get("metrics"))
        verdict = judges.judge(check.id, metrics, check.params)
        reason = terminal(verdict.reason, limit=240)
        if claimed == "pass" and verdict.outcome != "pass":
            problems.append(f"{check.id} claims pass but its evidence gives {verdict.outcome}: {reason}")
        elif claimed == "fail" and verdict.outcome == "pass" and judges.JUDGES[check.id].decides_all:
            problems.append(f"{check.id} claims {entry.get('outcome')} (failed) but its evidence gives pass: {reason}")
    return problems, judged


def summary_problems(report: Mapping[str, Any]) -> list[str]:
    checks = as_list(report.get("checks"))
    counts = {o: 0 for o in OUTCOMES}
    for entry in checks:
        outcome = entry.get("outcome") if isinstance(entry, Mapping) else None
        if outcome in counts:
            counts[outcome] += 1
    summary = as_map(report.get("summary"))
    problems = [f"{k} is {terminal(summary[k], limit=40)}, the checks give {counts[k]}"
                for k in OUTCOMES if k in summary and summary[k] != counts[k]]
    problems += [f"{k} is missing (the checks give {counts[k]})" for k in OUTCOMES if k not in summary]
    extra = sorted(str(k) for k in summary if k not in counts)
    if extra:
        problems.append(f"unknown key(s) {terminal(', '.join(extra), limit=120)}")
    return problems


def evidence_lines(report: Mapping[str, Any], checklist: Checklist | None,
                   published: str | None = None) -> list[tuple[str, bool, str]]:
    """(name, ok, detail) lines for verify: evidence, summary, selection. `published`: the day the
    report's release was published (its recorded arguments are judged by the definition of then)."""
    lines: list[tuple[str, bool, str]] = []
    checks = as_list(report.get("checks"))
    if checklist is None:
        lines.append(("evidence", False, "cannot judge: the release's checklist is not available"))
    else:
        problems, judged = evidence_problems(checks, checklist)
        lines.append(("evidence", not problems, "; ".join(problems) if problems else
                      f"{judged} judged check(s) agree with their metrics under the release's params; "
                      "every check records the release's params"))
    problems = summary_problems(report)
    lines.append(("summary", not problems, "; ".join(problems) if problems else
                  "summary counts equal the per-check outcomes"))
    from conformance.run.certification import is_legacy_release
    from conformance.signing.trust import run_problems

    reasons = list(dict.fromkeys(partial_reasons(report)
                                 + run_problems(report, legacy=is_legacy_release(published))))
    lines.append(("selection", not reasons, f"{NOT_CERTIFICATION}: {terminal('; '.join(reasons), limit=600)}"
                  if reasons else "the whole checklist ran (nothing deselected, every check has a test result)"))
    return lines
