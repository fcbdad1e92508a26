"""Flaky and provisional checks for the SIG, as the report shows them (report.md, the terminal).
Pure over report.json.

A flaky check failed and then passed on a re-run in the same run (tiers/tiers.yaml
`flakes.retries`; report/results.py records every attempt): it is never `pass`, it counts as not
passed for a tier or a profile unless the release allows it (`allow_flaky`), and it is listed
here with each attempt, so an intermittent bug is named rather than hidden by its retry.

A provisional check is new and soaking (tiers/checklist.yaml `provisional: true`, its soak record
in tiers/soak.yaml): reported like any check, counted toward nothing until a release promotes it.
"""
from __future__ import annotations

from typing import Any, Mapping

from conformance.sanitize import markdown_cell, terminal

FLAKY_TITLE = "Flaky checks for the SIG"
FLAKY_NOTE = ("Each failed, then passed when the suite ran its test again in the same run (the release's "
              "`retries`). A flaky check is never a pass: it counts as not passed for a tier or a capability "
              "profile unless the release allows flakes there (docs/tiers.md, \"Flakes and provisional checks\").")
PROVISIONAL_TITLE = "Provisional checks"
PROVISIONAL_NOTE = ("New checks still soaking: reported, never counted toward a tier, a SHOULD share or a "
                    "capability profile until a release promotes them after their soak record (tiers/soak.yaml).")


def flaky_checks(report: Mapping[str, Any]) -> list[dict[str, Any]]:
    """The report's flaky checks, in report order."""
    return [c for c in report.get("checks") or [] if isinstance(c, dict) and c.get("outcome") == "flaky"]


def provisional_checks(report: Mapping[str, Any]) -> list[dict[str, Any]]:
    """The report's provisional checks, in report order."""
    return [c for c in report.get("checks") or [] if isinstance(c, dict) and c.get("provisional") is True]


def attempt_text(attempt: Mapping[str, Any]) -> str:
    """`attempt 1 of test_x: fail (reason) in 0.2 s`."""
    test = str(attempt.get("test") or "").rsplit("::", 1)[-1]
    reason = f" ({attempt.get('reason')})" if attempt.get("reason") else ""
    return f"attempt {attempt.get('attempt')} of {test}: {attempt.get('outcome')}{reason} in {attempt.get('duration_s')} s"


def _attempts(check: Mapping[str, Any]) -> list[Mapping[str, Any]]:
    attempts = check.get("attempts")
    return [a for a in attempts if isinstance(a, Mapping)] if isinstance(attempts, list) else []


def flakes_markdown(report: dict[str, Any]) -> list[str]:
    """report.md's sections (empty when the run had neither flaky nor provisional checks)."""
    lines: list[str] = []
    flaky = flaky_checks(report)
    if flaky:
        lines += [f"## {FLAKY_TITLE}", "", FLAKY_NOTE, ""]
        for c in flaky:
            lines += [f"### {markdown_cell(c.get('id'))}: {markdown_cell(c.get('title'), limit=200)}", ""]
            lines += [f"- {markdown_cell(attempt_text(a), limit=500)}" for a in _attempts(c)] or ["- no attempts recorded"]
            lines.append("")
    provisional = provisional_checks(report)
    if provisional:
        lines += [f"## {PROVISIONAL_TITLE}", "", PROVISIONAL_NOTE, ""]
        lines += [f"- {markdown_cell(c.get('id'))}: {markdown_cell(c.get('title'), limit=200)} "
                  f"({markdown_cell(c.get('outcome'))})" for c in provisional]
        lines.append("")
    return lines


def flakes_terminal(report: dict[str, Any]) -> list[str]:
    """The terminal's lines: each flaky check with its attempts, then the provisional ones (sanitised)."""
    out: list[str] = []
    flaky = flaky_checks(report)
    if flaky:
        out.append(f"{FLAKY_TITLE} (failed, then passed on a re-run: never a pass, counted as not passed):")
        for c in flaky:
            out += [terminal(f"  {c.get('id')}: {attempt_text(a)}", limit=300) for a in _attempts(c)]
    provisional = provisional_checks(report)
    if provisional:
        out.append(terminal("provisional checks (soaking, counted toward nothing): " +
                            ", ".join(f"{c.get('id')} {c.get('outcome')}" for c in provisional), limit=600))
    return out
