"""The report's Collective block in report.html (pure): from the section's data, which the
collective harness publishes with its markdown (conformance.collective.report), tables, notes and
the rows drawn as a curve (bus_bandwidth_chart, CC-010).
"""
from __future__ import annotations

import math
from typing import Any

from conformance.collective.report import SECTION, gbps


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
                       "columns": ["op", "world size", "bytes", "algbw GB/s", "busbw GB/s", "host copy GB/s",
                                   "star busbw GB/s"],
                       "rows": [[r.get("op"), r.get("world_size"), r.get("bytes"), gbps(r.get("algbw_gbps")),
                                 gbps(r.get("busbw_gbps")), gbps(r.get("host_copy_gbps")), gbps(r.get("star_busbw_gbps"))]
                                for r in rows]})
    notes = [f"{cid}: {note}" for cid, note in sorted((data.get("checks") or {}).items())]
    if capability:
        outside = ", ".join(str(o.get("id")) for o in capability.get("out_of_scope") or [] if isinstance(o, dict))
        scope = f" (out of its declared scope: {outside}; no collective.rdt_transport)" if outside else ""
        notes.insert(0, f"collective capability: {capability.get('state')}{scope}")
    charts = [c for c in [bus_bandwidth_chart(rows, data)] if c]
    return {"charts": charts, "tables": tables, "notes": notes}


def _finite(v: object) -> float | None:
    return float(v) if isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v) and v > 0 else None


def bus_bandwidth_chart(rows: list[Any], data: dict[str, Any]) -> dict[str, Any] | None:
    """CC-010's curve: busbw by message size per op (median, IQR band), the host copy and the
    nominal link as reference lines when known. None when there is nothing to draw."""
    from conformance.report.html import charts

    rows = [r for r in rows if isinstance(r, dict) and _finite(r.get("bytes")) and _finite(r.get("busbw_gbps"))]
    if not rows:
        return None
    colours = {"allreduce": "#1565c0", "broadcast": "#2e7d32"}
    series = []
    for op in sorted({str(r.get("op")) for r in rows}):
        mine = sorted((r for r in rows if str(r.get("op")) == op), key=lambda r: float(r["bytes"]))
        iqr = [r.get("busbw_iqr_gbps") if isinstance(r.get("busbw_iqr_gbps"), list) and len(r["busbw_iqr_gbps"]) == 2
               else [r["busbw_gbps"]] * 2 for r in mine]
        series.append(charts.Series(f"{op} busbw", [float(r["bytes"]) for r in mine], [float(r["busbw_gbps"]) for r in mine],
                                    [_finite(q[0]) or 0.0 for q in iqr], [_finite(q[1]) or 0.0 for q in iqr],
                                    colours.get(op, "#6a1b9a"), "-"))
    host = _finite(rows[0].get("host_copy_gbps"))
    reference = (f"host copy: {host:.2f} GB/s", host) if host else None
    link = _finite(data.get("nominal_link_gbps"))
    title = f"{data.get('backend')}: bus bandwidth, world size {rows[0].get('world_size')}"
    caption = "nccl-tests busbw (allreduce algbw x 2(n-1)/n, broadcast algbw) by message size" + (
        f"; nominal link (manifest) {link:g} GB/s" if link else "")
    return {"svg": charts.bandwidth_svg(title, series, reference), "caption": caption}
