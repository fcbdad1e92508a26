"""Markdown tables of the transport results, for report.md and `ray-conformance bench-transport`.

The checks put their raw results into the run's "Transport" section (`publish`); the markdown
is re-rendered from all parts each time, so the section is complete whichever checks ran.
"""
from __future__ import annotations

from typing import TYPE_CHECKING, Any

from tabulate import tabulate

from conformance.rdt.config import format_size

if TYPE_CHECKING:
    from conformance.run.check_context import RunView

SECTION = "Transport"  # the transport and performance areas' report section (their Area.section)


def _gb(x: float | None) -> str:
    return "—" if x is None else f"{x:.3g}"


def correctness_matrix(matrix: dict[str, dict[str, str]]) -> str:
    """dtype x shape -> "ok" / "FAIL" / "n/s" (not supported by the device)."""
    if not matrix:
        return ""
    shapes: list[str] = []
    for row in matrix.values():
        for s in row:
            if s not in shapes:
                shapes.append(s)
    rows = [[dtype] + [row.get(s, "") for s in shapes] for dtype, row in matrix.items()]
    return tabulate(rows, headers=["dtype"] + shapes, tablefmt="github")


def _cv(stats: dict[str, Any]) -> str:
    """Robust CV and whether it met the target ("4.1%", "7.9% (above target)"; "—" when the
    figures predate adaptive trials)."""
    cv = stats.get("cv")
    if cv is None:
        return "—"
    return f"{cv:.1%}" + ("" if stats.get("cv_met", True) else " (above target)")


def _trials(stats: dict[str, Any]) -> str:
    batch = stats.get("batch", 1)
    return f"{stats.get('trials')}" + (f" × {batch}" if batch and batch > 1 else "")


def sweep_table(sweep: dict[str, Any]) -> str:
    """One row per size: RDT median/min/max bandwidth, its CV and trials, latency, object store
    and clone baselines."""
    rows = []
    for r in sweep.get("rows", []):
        rows.append([format_size(r["bytes"]), _gb(r["rdt"]["median_gbps"]),
                     f"{_gb(r['rdt']['min_gbps'])}–{_gb(r['rdt']['max_gbps'])}", _cv(r["rdt"]), _trials(r["rdt"]),
                     f"{r['rdt']['median_s'] * 1e3:.3g}",
                     _gb(r.get("object_store", {}).get("median_gbps")), _gb(r.get("clone", {}).get("median_gbps")),
                     _gb(r.get("ratio_to_object_store")), _gb(r.get("ratio_to_clone")),
                     "ok" if r.get("verified") else "WRONG"])
    return tabulate(rows, headers=["size", "RDT GB/s (median)", "min–max", "CV of median", "trials", "ms", "object store GB/s",
                                   "clone GB/s", "× object store", "× clone", "data"], tablefmt="github")


def pair_matrix(matrix: dict[str, Any]) -> str:
    """src (rows) -> dst (columns) bandwidth in GB/s."""
    labels = matrix.get("labels", [])
    if not labels:
        return ""
    gbps = matrix["gbps"]
    rows = [[labels[i]] + [("—" if i == j else _gb(gbps[i][j])) for j in range(len(labels))]
            for i in range(len(labels))]
    return tabulate(rows, headers=["src \\ dst"] + labels, tablefmt="github")


def _method(sweep: dict[str, Any]) -> str:
    """How the sweep was measured, in words (older figures: a fixed trial count)."""
    m = sweep.get("method")
    if not m:
        return f"median of {sweep.get('trials')} trials after {sweep.get('warmup')} warm-up"
    return (f"median of {sweep.get('trials')} trials after {m['warmup']} warm-up; trials are added (up to "
            f"{m['max_trials']}) until the median's CV is ≤ {m['max_cv']:.0%}; trials × transfers batched per trial")


def render(data: dict[str, Any]) -> str:
    parts = []
    head = data.get("transport")
    if head:
        parts.append(f"Transport **{head['name']}** ({'one' if head['one_sided'] else 'two'}-sided, "
                     f"devices {', '.join(head['devices'])}; abort {'supported' if head['can_abort'] else 'not supported'}).")
    for device, matrix in (data.get("correctness") or {}).items():
        parts += [f"### Correctness by dtype × shape ({device}, TR-001)", "", correctness_matrix(matrix), ""]
    for device, sweep in (data.get("sweep") or {}).items():
        parts += [f"### Bandwidth by size ({device}, {sweep.get('pair', 'endpoint 0 → 1')}; {_method(sweep)})",
                  "", sweep_table(sweep), ""]
    for device, matrix in (data.get("pairs") or {}).items():
        parts += [f"### Pairwise bandwidth, GB/s ({device}, {format_size(matrix['bytes'])}, {matrix['rounds']} "
                  f"round(s) of concurrent disjoint pairs, median of {matrix.get('trials', '?')} timed waves)", "",
                  pair_matrix(matrix), ""]
    return "\n".join(parts).strip()


def publish(run: RunView, key: str, value: object, device: str | None = None) -> None:
    """Store a part of the Transport section (under data[key][device] when device is given)."""
    section = run.published(SECTION) or {"markdown": "", "data": {}}
    run.publish(SECTION, section)
    data = section["data"]
    if device is None:
        data[key] = value
    else:
        data.setdefault(key, {})[device] = value
    section["markdown"] = render(data)
