"""Findings for the SIG: the checks of an uncounted level (INFO, tiers/vocabulary.yaml) as the
report shows them (report.md, report.html, the terminal). Pure over report.json.

A finding records what Ray does with the vendor's device where Ray has no plug-in point (today:
Ray's libraries, WL-010..WL-013); it is never counted toward a tier, a SHOULD share or a
capability profile (catalog.data.select_checks), and every page says so in the same words.
Each check leaves its sentences in `metrics.findings` and the upstream place that decides them
in `metrics.upstream`.
"""
from __future__ import annotations

from typing import Any, Mapping

from conformance.catalog.data import load_vocabulary
from conformance.sanitize import markdown_cell, terminal

TITLE = "Findings for the SIG"
NOTE = ("Informational: never counted toward a tier, a SHOULD share or a capability profile. They record "
        "what Ray itself does with the vendor's device where Ray 2.60 offers no plug-in point, so they show "
        "where Ray needs an interface, not where the vendor needs a fix (docs/ray-libraries.md).")


def finding_checks(report: Mapping[str, Any]) -> list[dict[str, Any]]:
    """The report's checks of an uncounted level, in report order."""
    uncounted = load_vocabulary().uncounted
    return [c for c in report.get("checks") or [] if isinstance(c, dict) and c.get("level") in uncounted]


def _lines(check: dict[str, Any], key: str) -> list[str]:
    value = (check.get("metrics") or {}).get(key)
    return [str(x) for x in value] if isinstance(value, list) else []


def findings_markdown(report: dict[str, Any]) -> list[str]:
    """report.md's section (empty when the run had no finding checks)."""
    checks = finding_checks(report)
    if not checks:
        return []
    lines = [f"## {TITLE}", "", NOTE, ""]
    for c in checks:
        lines += [f"### {markdown_cell(c.get('id'))}: {markdown_cell(c.get('title'), limit=200)} "
                  f"({markdown_cell(c.get('outcome'))})", ""]
        found = _lines(c, "findings")
        lines += [f"- {markdown_cell(x, limit=400)}" for x in found] or \
                 [f"- nothing recorded: {markdown_cell(c.get('reason') or 'not run', limit=300)}"]
        lines += [f"- Ray's side: {markdown_cell(x, limit=400)}" for x in _lines(c, "upstream")]
        lines.append("")
    return lines


def findings_terminal(report: dict[str, Any]) -> list[str]:
    """The terminal's lines: one heading, then each finding (sanitised)."""
    checks = finding_checks(report)
    if not checks:
        return []
    out = [f"{TITLE} (informational, never counted; Ray has no plug-in point here: docs/ray-libraries.md):"]
    for c in checks:
        found = _lines(c, "findings") or [f"nothing recorded ({c.get('outcome')}: {c.get('reason') or 'not run'})"]
        out += [terminal(f"  {c.get('id')}: {x}", limit=300) for x in found]
    return out


HTML_TITLE = "Findings for the SIG: Ray's libraries on the accelerator (never counted)"
HTML_NOTICE = "No findings in this report (no check of an uncounted level ran)."


def html_block(report: Mapping[str, Any]) -> dict[str, Any]:
    """report.html's block (the generic section template: tables of escaped cells, notes)."""
    checks = finding_checks(report)
    if not checks:
        return {}
    rows = [[str(c.get("id")), str(c.get("outcome")), x] for c in checks
            for x in (_lines(c, "findings") or [f"nothing recorded: {c.get('reason') or 'not run'}"])]
    upstream = [[str(c.get("id")), x] for c in checks for x in _lines(c, "upstream")]
    tables = [{"caption": "what Ray did with the vendor's resource", "columns": ["check", "outcome", "finding"],
               "rows": rows}]
    if upstream:
        tables.append({"caption": "where Ray decides it (no plug-in point in Ray 2.60)", "columns": ["check", "Ray's source"],
                       "rows": upstream})
    return {"charts": [], "tables": tables, "notes": [NOTE]}
