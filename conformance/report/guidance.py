"""The parts of report.md that help a person act: failures with Ray's log excerpts, the
preflight, what the run left on the host, and the next steps (every outside string sanitised)."""
from __future__ import annotations

from typing import Any, Mapping

from conformance.report.next_steps import next_steps_markdown
from conformance.sanitize import markdown_code, markdown_text


def failures_markdown(report: Mapping[str, Any]) -> list[str]:
    failed = [c for c in report.get("checks", []) if c.get("log_excerpt") or c.get("log_files")]
    if not failed:
        return []
    lines = ["## Failures and Ray's logs", ""]
    for c in failed:
        lines.append(f"### {c['id']} ({c['outcome']})")
        lines += ["", markdown_text(c.get("reason") or ""), ""]
        if c.get("log_excerpt"):
            lines += ["~~~", markdown_code(c["log_excerpt"]), "~~~", ""]
        if c.get("log_files"):
            lines += ["Log files: " + ", ".join(markdown_text(f) for f in c["log_files"]), ""]
    return lines


def preflight_markdown(report: Mapping[str, Any]) -> list[str]:
    pre = report.get("preflight")
    if not pre:
        return []
    lines = ["## Preflight", "", f"{'ok' if pre['ok'] else 'FAILED'} in {pre['duration_s']} s, "
             f"{pre['nodes']} node(s) probed.", ""]
    for f in pre.get("findings", []):
        lines.append(f"- {f['level']} — {markdown_text(f['where'])}: {markdown_text(f['message'])}")
        if f.get("detail") and f["level"] != "warning":
            lines += ["", "  ~~~", *("  " + x for x in markdown_code(f["detail"]).splitlines()[-30:]), "  ~~~"]
    return lines + [""]


def host_markdown(report: Mapping[str, Any]) -> list[str]:
    from conformance.run.preflight import left_behind_lines

    host = report.get("host")
    if not host:
        return []
    return ["## Left on the host by this run", ""] + \
        [f"- {markdown_text(x)}" for x in left_behind_lines(host.get("left_behind") or {})] + [""]


def guidance_markdown(report: Mapping[str, Any]) -> list[str]:
    return (preflight_markdown(report) + failures_markdown(report) + host_markdown(report)
            + next_steps_markdown(report.get("next_steps")))
