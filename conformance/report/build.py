"""Building and writing the report files: report.json, report.md, junit.xml, and report.html.

`build_report` is pure (inputs in, dict out) so the verifier and tests reuse it; writers never
overwrite a file the user made elsewhere — they only write inside the run's output folder.
"""
from __future__ import annotations

import datetime as dt
import json
import os
import xml.etree.ElementTree as ET
from pathlib import Path
from typing import Any, Iterable

from tabulate import tabulate

from conformance import SUITE_NAME
from conformance.catalog.data import SuiteData
from conformance.catalog.datafiles import load_schema, schema_path, sha256_file
from conformance.catalog.ladder import RunContext, compute_tiers
from conformance.catalog.selection import is_partial, selection_record
from conformance.report.coverage import coverage_markdown
from conformance.report.findings import findings_markdown
from conformance.report.flakes import flakes_markdown
from conformance.report.results import TestRecord, summarize
from conformance.sanitize import markdown_cell

OUTCOME_MARK = {"pass": "PASS", "fail": "FAIL", "error": "ERROR", "skip": "SKIP",
                "not_applicable": "N/A", "waived": "WAIVED", "flaky": "FLAKY"}


def now_iso() -> str:
    return dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds")


def build_report(*, data: SuiteData, manifest: dict[str, Any], manifest_sha256: str, manifest_path: str,
                 environment: dict[str, Any], cluster: dict[str, Any], started_at: str, finished_at: str,
                 duration_s: float, checks: list[dict[str, Any]], interrupted: bool,
                 interrupted_reason: str | None = None, sections: dict[str, Any] | None = None,
                 plugin_artifact: dict[str, str] | None = None,
                 selection: dict[str, Any] | None = None, shape: dict[str, Any] | None = None) -> dict[str, Any]:
    ctx = RunContext(transport_declared=bool(manifest.get("transport")), nodes=int(cluster.get("nodes") or 0),
                     shape=shape)
    tier, tiers = compute_tiers(checks, data.checklist, data.ladder, ctx)
    from conformance.catalog.releases import current_version  # the release these data files belong to

    suite = {"name": SUITE_NAME, "version": current_version(), "checklist_sha256": data.checklist.sha256,
             "tiers_sha256": data.ladder.sha256, "report_schema_sha256": sha256_file(schema_path("report"))}
    if data.waivers_sha256:
        suite["waivers_sha256"] = data.waivers_sha256
    report: dict[str, Any] = {
        "schema_version": 1, "suite": suite, "manifest": manifest, "manifest_sha256": manifest_sha256,
        "manifest_path": manifest_path, "environment": environment, "cluster": cluster,
        "started_at": started_at, "finished_at": finished_at, "duration_s": round(duration_s, 2),
        "interrupted": interrupted, "interrupted_reason": interrupted_reason,
        "checks": checks, "tier": tier, "tiers": tiers, "summary": summarize(checks),
        "sections": sections or {},
    }
    from conformance.catalog.capabilities import compute_capabilities, load_profiles
    report["capabilities"] = compute_capabilities(checks, data.checklist, load_profiles(), manifest)
    report["selection"] = selection if selection is not None else selection_record(checks)
    report["partial"] = is_partial(report["selection"])
    if plugin_artifact:
        report["plugin_artifact"] = plugin_artifact
    if shape is not None:
        report["shape"] = shape
    return report


def _atomic_write(path: Path, text: str) -> None:
    tmp = path.with_name(f".{path.name}.tmp{os.getpid()}")
    tmp.write_text(text, encoding="utf-8")
    os.replace(tmp, path)


def write_json(report: dict[str, Any], out_dir: Path) -> Path:
    path = out_dir / "report.json"
    _atomic_write(path, json.dumps(report, indent=2, sort_keys=True, allow_nan=False) + "\n")
    return path


def ran_lines(report: dict[str, Any], limit: int = 20) -> list[str]:
    """A partial run's checks that ran, each with its outcome (and reason, unless it passed)."""
    from conformance.sanitize import terminal
    not_run = set((report.get("selection") or {}).get("not_run") or [])
    ran = [c for c in report.get("checks") or [] if c["id"] not in not_run]
    lines = [f"this run's checks ({len(ran)}):"]
    for c in ran[:limit]:
        why = "" if c["outcome"] == "pass" or not c.get("reason") else f": {c['reason']}"
        lines.append(terminal(f"  {c['id']} {OUTCOME_MARK.get(c['outcome'], c['outcome'])}{why}", limit=300))
    if len(ran) > limit:
        lines.append(f"  ... and {len(ran) - limit} more (report.md lists every check)")
    return lines


# The terminal's tier table: its "blocking checks" column holds at most this many characters
# (a 1-node run blocks stable on dozens of checks: 250 characters made every row wrap); the rest
# are counted, and report.md lists them all.
TERMINAL_BLOCKERS_WIDTH = 64


def bounded_join(items: list[str], width: int | None, sep: str = ", ") -> str:
    """`items` joined, ending with "+N more" once the next one would pass `width` (None: all)."""
    whole = sep.join(items)
    if width is None or len(whole) <= width:
        return whole
    out: list[str] = []
    for i, item in enumerate(items):
        rest = len(items) - i - 1   # room for this item and the count that replaces the ones after it
        if len(sep.join([*out, item, f"+{rest} more"])) > width:
            return sep.join([*out, f"+{len(items) - i} more"])
        out.append(item)
    return whole


def tier_table(report: dict[str, Any], *, ran_only: bool = False, blockers_width: int | None = None) -> str:
    """The tier ladder with each tier's blocking checks; `ran_only` (a partial run's terminal):
    checks that did not run are counted, not listed, so the ones this run judged stand out;
    `blockers_width` (the terminal's): the blocking checks beyond it are counted, not listed."""
    not_run = set((report.get("selection") or {}).get("not_run") or []) if ran_only else set()
    rows = []
    for t in report["tiers"]:
        shown = [b for b in t["blocking"] if b["id"] not in not_run]
        hidden = len(t["blocking"]) - len(shown)
        blockers = bounded_join([f"{b['id']}({OUTCOME_MARK.get(b['outcome'], b['outcome'])})" for b in shown],
                                blockers_width)
        if hidden:
            blockers = ", ".join(x for x in [blockers, f"+{hidden} not run"] if x)
        unmet = "; ".join(c["detail"] for c in t["conditions"] if not c["met"])
        if t.get("below") and not t["achieved"]:
            unmet = "; ".join(x for x in [unmet, f"needs {t['below']} first"] if x)
        rows.append([t["name"], "yes" if t["achieved"] else "no", blockers or "-", unmet or "-"])
    return tabulate(rows, headers=["tier", "achieved", "blocking checks", "unmet conditions"], tablefmt="github")


def host_note(report: dict[str, Any]) -> str:
    """' (of the errors, 2 not judged: host)': errors the host caused, not the plugin (run/outcomes.py)."""
    n = sum(1 for c in report.get("checks") or [] if c.get("outcome") == "error"
            and str(c.get("reason") or "").startswith("not judged: host: "))
    return f" (of the errors, {n} not judged: host — rerun on a less loaded host)" if n else ""


def checks_table(report: dict[str, Any]) -> str:
    """The checks, each with the host's load while it ran (conformance.timing.host_load): a bound
    missed at load 4 per CPU reads differently from one missed on an idle host."""
    from conformance.timing.host_load import load_text
    rows = [[c["id"], c["area"], c["level"], OUTCOME_MARK[c["outcome"]], f"{c['duration_s']:.1f}",
             markdown_cell(load_text(c.get("host_load"))), markdown_cell(c["reason"] or "", limit=160)]
            for c in report["checks"]]
    return tabulate(rows, headers=["check", "area", "level", "outcome", "s", "host load", "reason"], tablefmt="github")


def render_markdown(report: dict[str, Any]) -> str:
    m = {k: markdown_cell(v, limit=200) for k, v in report["manifest"].items() if k in ("vendor", "product")}
    env = {k: markdown_cell(v, limit=200) for k, v in report["environment"].items()}
    lines = [
        f"# Conformance report: {m.get('vendor')} — {m.get('product')}",
        "",
        f"**Tier achieved: {report['tier'] or 'none'}**" + ("  (run interrupted: "
                                                           f"{markdown_cell(report.get('interrupted_reason'))})"
                                                           if report["interrupted"] else "")
        + ("  — **partial run: not a certification run** (checks not run: "
           f"{len(report['selection']['not_run'])}, deselected tests: {len(report['selection']['deselected'])})"
           if report.get("partial") else ""),
        "",
        f"- Suite: {report['suite']['name']} {report['suite']['version']} "
        f"(checklist sha256 `{report['suite']['checklist_sha256'][:16]}…`, tiers `{report['suite']['tiers_sha256'][:16]}…`)",
        f"- Manifest: {markdown_cell(report.get('manifest_path', ''))} (sha256 `{report['manifest_sha256'][:16]}…`)",
        f"- Cluster: {report['cluster']['mode']}, {report['cluster']['nodes']} node(s)",
        f"- Environment: Ray {env['ray']}, torch {env['torch']}, Python {env['python']}, {env['os']}, {env['cpu']}",
        f"- Run: {report['started_at']} → {report['finished_at']} ({report['duration_s']} s)",
        # in a fixed order (outcomes, then section titles), so that rendering report.json as it
        # was written (keys sorted) gives these bytes again: verify derives report.md from it
        "- Outcomes: " + ", ".join(f"{k} {report['summary'][k]}" for k in sorted(report["summary"],
                                                                                  key=_outcome_rank)
                                   if report["summary"][k]) + host_note(report),
        "",
        "## Tiers",
        "",
        tier_table(report),
        "",
        capabilities_line(report),
        "",
        "## Checks",
        "",
        checks_table(report),
        "",
    ]
    for note in report["cluster"].get("notes", []):
        lines.insert(10, f"- Note: {markdown_cell(note)}")
    lines += findings_markdown(report)
    lines += flakes_markdown(report)
    lines += coverage_markdown(report)
    for title, section in sorted((report.get("sections") or {}).items()):
        if isinstance(section, dict) and section.get("markdown"):
            lines += [f"## {title}", "", section["markdown"], ""]
    from conformance.report.guidance import guidance_markdown
    lines += guidance_markdown(report)
    return "\n".join(lines)


def _outcome_rank(outcome: str) -> tuple[int, str]:
    from conformance.report.results import OUTCOMES

    return (OUTCOMES.index(outcome) if outcome in OUTCOMES else len(OUTCOMES), outcome)


def capabilities_line(report: dict[str, Any]) -> str:
    """'Capabilities: device certified, collective not declared, ...' (report.md, review); a
    profile with checks out of its declared scope says which and the field that would bring them in."""
    caps = report.get("capabilities") or []
    if not caps:
        return "Capabilities: not recorded (report written before capability profiles)."
    return "Capabilities: " + ", ".join(_capability_cell(c) for c in caps)


def _capability_cell(cap: dict[str, Any]) -> str:
    name, state = markdown_cell(cap.get("name")), markdown_cell(cap.get("state"))
    text = f"{name} **{state}**" if cap.get("state") == "certified" else f"{name} {state}"
    outside = [o for o in cap.get("out_of_scope") or [] if isinstance(o, dict)]
    if outside:
        fields = ", ".join(dict.fromkeys(markdown_cell(o.get("declared_by")) for o in outside))
        ids = ", ".join(markdown_cell(o.get("id")) for o in outside)
        text += f" (out of its declared scope: {ids}; declaring {fields} brings them in)"
    return text


def write_markdown(report: dict[str, Any], out_dir: Path) -> Path:
    path = out_dir / "report.md"
    _atomic_write(path, render_markdown(report))
    return path


def write_html(report: dict[str, Any], out_dir: Path) -> Path:
    """report.html: the same report as a self-contained page (conformance/html_report)."""
    from conformance.report.html import render_report_html

    path = out_dir / "report.html"
    _atomic_write(path, render_report_html(report))
    return path


def write_junit(report: dict[str, Any], records: Iterable[TestRecord], out_dir: Path) -> Path:
    """JUnit XML: one testcase per test, classname = check id; checks with no test get one too."""
    by_check: dict[str, list[TestRecord]] = {}
    for r in records:
        by_check.setdefault(r.check_id, []).append(r)
    suite = ET.Element("testsuite", name=SUITE_NAME, timestamp=report["started_at"])
    counts = {"tests": 0, "failures": 0, "errors": 0, "skipped": 0}
    for c in report["checks"]:
        recs = by_check.get(c["id"]) or [TestRecord(nodeid=f"{c['id']}::not_run", check_id=c["id"],
                                                     outcome="skip", reason=c["reason"])]
        for r in recs:
            counts["tests"] += 1
            seconds = r.duration_s + sum(a["duration_s"] for a in r.earlier)   # every attempt's
            case = ET.SubElement(suite, "testcase", classname=c["id"], name=r.nodeid.split("::")[-1],
                                 time=f"{seconds:.3f}")
            final = r.final_outcome()
            outcome = "waived" if c["outcome"] == "waived" and final in ("fail", "error") else final
            if outcome == "flaky":   # never a pass: a failure whose message says it passed on a re-run
                counts["failures"] += 1
                ET.SubElement(case, "failure", message=f"flaky: {c['reason'] or ''}"[:1000])
            elif outcome == "fail":
                counts["failures"] += 1
                ET.SubElement(case, "failure", message=(r.reason or "")[:1000])
            elif outcome == "error":
                counts["errors"] += 1
                ET.SubElement(case, "error", message=(r.reason or "")[:1000])
            elif outcome in ("skip", "not_applicable", "waived"):
                counts["skipped"] += 1
                ET.SubElement(case, "skipped", message=f"{outcome}: {r.reason or c['reason'] or ''}"[:1000])
    for k, v in counts.items():
        suite.set(k, str(v))
    suite.set("time", f"{report['duration_s']:.3f}")
    root = ET.Element("testsuites")
    root.append(suite)
    tree = ET.ElementTree(root)
    ET.indent(tree)
    path = out_dir / "junit.xml"
    tmp = path.with_name(f".junit.xml.tmp{os.getpid()}")
    tree.write(tmp, encoding="utf-8", xml_declaration=True)
    os.replace(tmp, path)
    return path


def validate_report(report: dict[str, Any]) -> None:
    import jsonschema
    jsonschema.Draft202012Validator(load_schema("report")).validate(report)
