"""The report's Collective section as the harness publishes it: its data and one renderer to
markdown (pure). The run's CollectiveContext publishes it at once on every note and at the end of
the session (conformance.collective.harness); the collective area draws its report.html block
from the same data (conformance.areas.collective.report.html_block).

The data (report.json `sections.Collective.data`) holds the backend, per-check notes and the
bandwidth rows {op, bytes, world_size, algbw_gbps, busbw_gbps, host_copy_gbps, and star_busbw_gbps on
each op's row at the largest size: CC-010's reference, conformance/areas/collective/star.py}.
"""
from __future__ import annotations

from typing import TYPE_CHECKING, Any

from conformance.sanitize import markdown_cell as clean_text

if TYPE_CHECKING:
    from conformance.run.check_context import RunView

SECTION = "Collective"   # the collective area's Area.section


def publish(run: RunView, data: dict[str, Any]) -> None:
    """Store the section (markdown + data) on the run; the report writer takes it from there."""
    run.publish(SECTION, {"markdown": render(data), "data": data})


def gbps(v: object) -> str:
    """A GB/s figure as a table cell ("-" when there is none)."""
    return f"{v:.3g}" if isinstance(v, (int, float)) else "-"


def render(data: dict[str, Any]) -> str:
    lines = [f"Backend **{clean_text(str(data.get('backend')))}** "
             f"({clean_text(str(data.get('group_class')))})."]
    for cid, note in sorted((data.get("checks") or {}).items()):
        lines.append(f"- {cid}: {clean_text(str(note))}")
    rows = data.get("bandwidth") or []
    if rows:
        lines += ["", "| op | world size | bytes | algbw GB/s | busbw GB/s | host copy GB/s | star busbw GB/s |",
                  "|---|---|---|---|---|---|---|"]
        for r in rows:
            lines.append(f"| {clean_text(str(r.get('op')))} | {r.get('world_size')} | {r.get('bytes')} | "
                         f"{gbps(r.get('algbw_gbps'))} | {gbps(r.get('busbw_gbps'))} | {gbps(r.get('host_copy_gbps'))} | "
                         f"{gbps(r.get('star_busbw_gbps'))} |")
        if data.get("nominal_link_gbps"):
            lines.append(f"\nNominal link (manifest): {gbps(data['nominal_link_gbps'])} GB/s.")
    return "\n".join(lines)
