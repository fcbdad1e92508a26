"""What a run selected, and whether it was partial (pure functions; the report and verify use them).

A certificate speaks for the whole checklist. A run that did not execute every check — pytest
`--collect-only`, a `-k`/`-m` selection, a path to one check module, `-x` stopping early, an
interrupted run — is recorded as `partial: true` with its selection (the pytest arguments, the
deselected tests, the checks no test ran for), and `verify` refuses it as "not a certification
run" whatever tier its outcomes give.
"""
from __future__ import annotations

from typing import Any, Iterable, Mapping, Sequence


def not_run_checks(checks: Iterable[Mapping[str, Any]]) -> list[str]:
    """Ids of report entries that no test ran for (an empty `tests` list)."""
    return [str(c.get("id")) for c in checks if not c.get("tests")]


def selection_record(checks: Sequence[Mapping[str, Any]], *, args: Sequence[str] = (),
                     deselected: Iterable[str] = (), collect_only: bool = False,
                     whole_checklist_collected: bool = True) -> dict[str, Any]:
    """The report's `selection`: the pytest arguments, deselected tests and checks not run."""
    return {"args": [str(a) for a in args], "deselected": sorted(set(deselected)),
            "not_run": not_run_checks(checks), "collect_only": bool(collect_only),
            "whole_checklist_collected": bool(whole_checklist_collected)}


def partial_reasons(report: Mapping[str, Any]) -> list[str]:
    """Why a report is not of a whole-checklist run ([] when it is); reads the claim and the
    per-check evidence, so a report that says `partial: false` beside checks nobody ran is caught."""
    reasons = []
    raw_selection = report.get("selection")
    sel: Mapping[str, Any] = raw_selection if isinstance(raw_selection, Mapping) else {}
    if report.get("partial") is not False:
        reasons.append(f"partial is {report.get('partial')!r}")
    if sel.get("collect_only"):
        reasons.append("collect-only run")
    if sel.get("whole_checklist_collected") is False:
        reasons.append("the checks folder was not collected whole")
    deselected = sel.get("deselected") or []
    if deselected:
        reasons.append(f"{len(deselected)} test(s) deselected")
    raw_checks = report.get("checks")
    checks: list[Any] = raw_checks if isinstance(raw_checks, list) else []
    not_run = sorted(set(map(str, sel.get("not_run") or [])) | set(not_run_checks(c for c in checks
                                                                                 if isinstance(c, Mapping))))
    if not_run:
        reasons.append(f"{len(not_run)} check(s) not run: {', '.join(not_run[:8])}{' …' if len(not_run) > 8 else ''}")
    args = [a for a in sel.get("args") or [] if isinstance(a, str)]
    if reasons and args:
        reasons.append(f"pytest args: {' '.join(args)[:200]}")
    return reasons


def is_partial(selection: Mapping[str, Any]) -> bool:
    return bool(selection.get("not_run") or selection.get("deselected") or selection.get("collect_only")
                or selection.get("whole_checklist_collected") is False)
