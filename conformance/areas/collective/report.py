"""The report's Collective section: one renderer from the section's data to markdown (pure).

The data (report.json `sections.Collective.data`) holds the backend, per-check notes and the
bandwidth rows {op, bytes, world_size, algbw_gbps, busbw_gbps, host_copy_gbps}; report.html
draws the rows as a curve (conformance.html_report).
"""
from __future__ import annotations

from typing import Any

from conformance.report.sanitize import markdown_cell as clean_text

SECTION = "Collective"


def publish(run: Any, data: dict[str, Any]) -> None:
    """Store the section (markdown + data) on the run; the report writer takes it from there."""
    run.publish(SECTION, {"markdown": render(data), "data": data})


def _gb(v: Any) -> str:
    return f"{v:.3g}" if isinstance(v, (int, float)) else "-"


def render(data: dict[str, Any]) -> str:
    lines = [f"Backend **{clean_text(str(data.get('backend')))}** "
             f"({clean_text(str(data.get('group_class')))})."]
    for cid, note in sorted((data.get("checks") or {}).items()):
        lines.append(f"- {cid}: {clean_text(str(note))}")
    rows = data.get("bandwidth") or []
    if rows:
        lines += ["", "| op | world size | bytes | algbw GB/s | busbw GB/s | host copy GB/s |",
                  "|---|---|---|---|---|---|"]
        for r in rows:
            lines.append(f"| {clean_text(str(r.get('op')))} | {r.get('world_size')} | {r.get('bytes')} | "
                         f"{_gb(r.get('algbw_gbps'))} | {_gb(r.get('busbw_gbps'))} | {_gb(r.get('host_copy_gbps'))} |")
        if data.get("nominal_link_gbps"):
            lines.append(f"\nNominal link (manifest): {_gb(data['nominal_link_gbps'])} GB/s.")
    return "\n".join(lines)


def html_block(report: dict[str, Any]) -> dict[str, Any]:
    """report.html's Collective block (the generic section template: tables and notes; the page
    escapes every cell). Empty when the report has no Collective section."""
    section = (report.get("sections") or {}).get(SECTION) or {}
    data = section.get("data") if isinstance(section, dict) else None
    if not isinstance(data, dict):
        return {}
    capability = next((c for c in report.get("capabilities") or [] if isinstance(c, dict)
                       and c.get("name") == "collective"), {})
    checks = [[cid, str(c.get("outcome")), str(c.get("reason") or "")[:300]] for cid, c in
              ((c.get("id"), c) for c in report.get("checks") or [] if isinstance(c, dict))
              if str(cid).startswith("CC-")]
    tables = [{"caption": f"backend {data.get('backend')} ({data.get('group_class')})",
               "columns": ["check", "outcome", "reason"], "rows": checks}]
    rows = data.get("bandwidth") or []
    if rows:
        tables.append({"caption": "bus bandwidth (nccl-tests definitions)",
                       "columns": ["op", "world size", "bytes", "algbw GB/s", "busbw GB/s", "host copy GB/s"],
                       "rows": [[r.get("op"), r.get("world_size"), r.get("bytes"), _gb(r.get("algbw_gbps")),
                                 _gb(r.get("busbw_gbps")), _gb(r.get("host_copy_gbps"))] for r in rows]})
    notes = [f"{cid}: {note}" for cid, note in sorted((data.get("checks") or {}).items())]
    if capability:
        notes.insert(0, f"collective capability: {capability.get('state')}")
    return {"tables": tables, "notes": notes}
