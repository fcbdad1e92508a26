"""What to do next: the checks between this report and the next tier, and the shape's ceiling.

`next_steps(report, checklist, ladder, docs)` is pure: it reads the per-tier detail that
`compute_tiers` already put in the report, names each blocking check with its requirement, the
doc section that explains it and what to change, and says which tier this hardware's verified
shape can reach at most (tiers.yaml `shape_policy`). The Markdown rendering sanitises every
string that came from outside (reasons, names).
"""
from __future__ import annotations

from typing import Any, Mapping

from conformance.catalog.data import Checklist, Ladder
from conformance.catalog.ladder import PARTITION_WHY, context_from_report, shape_ceiling, shape_limits
from conformance.sanitize import markdown_cell, markdown_text

SHORT = 300


def _cut(text: str | None, limit: int = SHORT) -> str:
    text = (text or "").strip()
    return text if len(text) <= limit else text[: limit - 1] + "…"


def action_for(entry: Mapping[str, Any], shape_reason: str | None) -> str:
    """What to change so that this check passes (from its outcome and reason)."""
    outcome, reason = entry.get("outcome"), _cut(entry.get("reason"))
    logs = f"; Ray's logs: {entry['log_files'][0].rsplit('/', 1)[0]}/" if entry.get("log_files") else ""
    if outcome == "fail":
        return f"fix the plugin so that the check passes: {reason}{logs}"
    if outcome == "error" and str(entry.get("reason") or "").startswith("not judged: host: "):
        return f"the host, not the plugin: rerun on a less loaded host (nothing to fix in the plugin): {reason}{logs}"
    if outcome == "error":
        return f"the check could not run; remove the cause and rerun: {reason}{logs}"
    if outcome == "not_applicable" and shape_reason == PARTITION_WHY:
        return f"this run's environment: {shape_reason}; cannot pass in this run"
    if outcome == "not_applicable" and shape_reason:
        return f"hardware shape: {shape_reason}; cannot pass on this hardware"
    if outcome == "not_applicable":
        return f"make it applicable: {reason}"
    if outcome == "waived":
        return f"the waiver does not count here: {reason}"
    if outcome == "flaky":
        return (f"find and fix the intermittent failure (it failed, then passed on a re-run; a flaky check does not "
                f"count here; every attempt is in report.md): {reason}{logs}")
    return f"run it (it did not run: {reason or 'not selected'})"


def next_steps(report: Mapping[str, Any], checklist: Checklist, ladder: Ladder,
               docs: Mapping[str, str]) -> dict[str, Any]:
    """{"next_tier", "blocking": [{id, level, requirement, doc, action}], "shape_ceiling": {tier, reason}}."""
    by_id = checklist.by_id()
    entries = {c["id"]: c for c in report.get("checks", [])}
    ctx = context_from_report(report)
    limits = shape_limits(ladder.shape_policy, ctx.shape, ctx.environment)
    ceiling = shape_ceiling(checklist, ladder, ctx)
    tier = next((t for t in report.get("tiers", []) if not t["achieved"]), None)
    if tier is None:
        return {"next_tier": None, "blocking": [], "shape_ceiling": ceiling}
    ids = [b["id"] for b in tier.get("blocking", [])]
    for cond in tier.get("conditions", []):
        if cond["kind"] == "should_share" and not cond["met"]:
            ids += [c.id for c in checklist.counted() if c.level == "SHOULD" and c.id not in ids
                    and entries.get(c.id, {}).get("outcome") != "pass"]
    from conformance.catalog.manifest_gates import FIELDS_DOC, load_gates, missing

    closed = {c for g in missing(report.get("manifest") or {}, load_gates(checklist)) for c in g.checks}
    blocking = []
    for cid in ids:
        check = by_id.get(cid)
        if check is None:
            continue
        entry = entries.get(cid, {"id": cid, "outcome": "skip", "reason": "not run"})
        # a check not applicable for want of a manifest field: the text that names that field
        doc = FIELDS_DOC if cid in closed and entry.get("outcome") == "not_applicable" else docs.get(check.area, "")
        blocking.append({"id": cid, "level": check.level, "requirement": " ".join(check.requirement.split()),
                         "doc": doc, "action": action_for(entry, limits.get(cid))})
    return {"next_tier": tier["name"], "blocking": blocking, "shape_ceiling": ceiling,
            "conditions": [c["detail"] for c in tier.get("conditions", []) if not c["met"]]}


def next_steps_markdown(steps: Mapping[str, Any] | None, doc_prefix: str = "") -> list[str]:
    """The report.md section (outside strings sanitised)."""
    if not steps:
        return []
    ceiling = steps.get("shape_ceiling") or {}
    lines = []
    if steps.get("next_tier"):
        lines += [f"## To reach {markdown_cell(steps['next_tier'])}", ""]
        for cond in steps.get("conditions", []):
            lines.append(f"- condition not met: {markdown_text(cond)}")
        for b in steps.get("blocking", []):
            doc = b["doc"]
            link = f"[{doc.split('#')[0]}]({doc_prefix}{doc})" if doc else "-"
            lines.append(f"- **{b['id']}** ({b['level']}): {markdown_text(_cut(b['requirement'], 400))}  \n"
                         f"  explained in {link}; what to do: {markdown_text(b['action'])}")
        lines.append("")
    else:
        lines += ["## Next steps", "", "Every tier of the ladder is achieved.", ""]
    if ceiling:
        tier = markdown_cell(ceiling.get("tier") or "no tier")
        policy = f"[docs/tiers.md]({doc_prefix}docs/tiers.md#shape-policy)"
        lines += [f"**This hardware's shape and this run's environment can reach at most: {tier}** "
                  f"— {markdown_text(ceiling.get('reason', ''))}. (Shape policy: {policy}.)", ""]
    return lines


def next_steps_terminal(steps: Mapping[str, Any] | None, limit: int = 8) -> list[str]:
    """A few lines for the terminal: blocking checks grouped by what to do (one line per action)."""
    from conformance.sanitize import terminal

    if not steps or not steps.get("next_tier"):
        return []
    groups: dict[str, list[str]] = {}
    for b in steps.get("blocking", []):
        groups.setdefault(b["action"], []).append(f"{b['id']}")
    lines = [f"to reach {terminal(steps['next_tier'])}:"]
    for cond in steps.get("conditions", []):
        lines.append(terminal(f"  condition not met: {cond}", limit=300))
    for action, ids in list(groups.items())[:limit]:
        names = ", ".join(ids[:6]) + (f" and {len(ids) - 6} more" if len(ids) > 6 else "")
        lines.append(terminal(f"  {names}: {action}", limit=400))
    if len(groups) > limit:
        lines.append(f"  … and {len(groups) - limit} more (report.md, 'To reach {terminal(steps['next_tier'])}')")
    ceiling = steps.get("shape_ceiling") or {}
    if ceiling:
        lines.append(terminal("this hardware's shape and this run's environment can reach at most: "
                              f"{ceiling.get('tier') or 'no tier'} ({ceiling.get('reason', '')})", limit=400))
    return lines


def verified_shape(devices: Mapping[str, Any], nodes: int) -> dict[str, Any]:
    """The run's hardware shape from what Ray detected (`ConformanceRun.devices`): nodes, devices
    per node, and whether any node with devices carries a domain label (tiers/labels.yaml)."""
    from conformance.catalog.labels import load_vocabulary
    from conformance.catalog.ladder import shape_facts

    domain_keys = {k.key for k in load_vocabulary().domain_keys()}
    with_devices = [n for n in devices.get("nodes", []) if n.get("count")]
    has_domains = any(set(n.get("labels") or {}) & domain_keys for n in with_devices)
    return shape_facts(nodes, [n["count"] for n in with_devices], has_domains)
