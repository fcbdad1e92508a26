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


def _sized(summary: dict[str, Any], names: list[str]) -> str:
    sizes = summary.get("shm_entry_mb") or {}
    return ", ".join(f"{n} ({sizes[n]} MB)" if n in sizes else n for n in names[:5])


def _folders(summary: dict[str, Any], names: list[str]) -> str:
    empty = set(summary.get("shm_folders_empty") or [])
    return ", ".join(f"{n} (empty)" if n in empty else n for n in names[:5])


def left_behind_lines(summary: dict[str, Any]) -> list[str]:
    """Lines about what this run left (its processes, the segments they held, folders they made in
    /dev/shm, files elsewhere they held); never a neighbour's."""
    if not summary:
        return []
    procs = summary.get("ray_processes") or []
    lines = []
    if procs:
        lines.append(f"{len(procs)} Ray process(es) of this run still alive: "
                     + ", ".join(f"{p['pid']} ({p['kind']})" for p in procs[:10]))
    if summary.get("shm_entries_count"):
        lines.append(f"/dev/shm: {summary['shm_entries_count']} segment(s) this run's processes held are still there "
                     f"({summary.get('shm_growth_mb', 0)} MB): " + _sized(summary, summary["shm_entries"]))
    if summary.get("shm_folders"):
        lines.append(f"/dev/shm: {len(summary['shm_folders'])} folder(s) this run's processes kept segments in are "
                     "still there: " + _folders(summary, summary["shm_folders"]))
    if summary.get("shm_unattributed_count"):
        lines.append(f"/dev/shm: {summary['shm_unattributed_count']} new segment(s) held by no process "
                     f"({summary.get('shm_unattributed_mb', 0)} MB), never seen held by this run's processes (read "
                     "at each check's end and before each actor the suite killed), so not counted as this run's "
                     "(their creator is unknown): " + _sized(summary, summary["shm_unattributed"]))
    if summary.get("shm_folders_unattributed"):
        lines.append(f"/dev/shm: {len(summary['shm_folders_unattributed'])} new folder(s), no segment in them seen held by "
                     "this run's processes, so not counted as this run's (their creator is unknown): "
                     + _folders(summary, summary["shm_folders_unattributed"]))
    if summary.get("files_left_count"):
        lines.append(f"files: {summary['files_left_count']} file(s) this run's processes held open are still there, "
                     "held by no process: " + ", ".join(summary.get("files_left") or [])[:400])
    kept = summary.get("cluster_kept")
    if isinstance(kept, dict) and (kept.get("ray_processes") or kept.get("shm_entries_held")):
        procs, held = kept.get("ray_processes") or [], kept.get("shm_entries_held") or []
        lines.append(f"the vendor's cluster (--ray-address) keeps running, so these are its own, not counted as "
                     f"left: {len(procs)} Ray process(es) started during the run"
                     + (" (" + ", ".join(f"{p['pid']} ({p['kind']})" for p in procs[:10]) + ")" if procs else "")
                     + f", {kept.get('shm_entries_held_count', len(held))} /dev/shm segment(s) the run's processes "
                     "held that a live process still holds" + (": " + _sized(summary, held) if held else ""))
    return lines or ["nothing: no Ray process of this run alive, no /dev/shm segment or folder and no file of this "
                     "run left"]


def host_markdown(report: Mapping[str, Any]) -> list[str]:
    host = report.get("host")
    if not host:
        return []
    return ["## Left on the host by this run", ""] + \
        [f"- {markdown_text(x)}" for x in left_behind_lines(host.get("left_behind") or {})] + [""]


def guidance_markdown(report: Mapping[str, Any]) -> list[str]:
    return (preflight_markdown(report) + failures_markdown(report) + host_markdown(report)
            + next_steps_markdown(report.get("next_steps")))
