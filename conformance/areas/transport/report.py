"""report.html's Transport bandwidth block (Area.html): one curve chart per device (RDT, the object
store and an in-process clone by size, the host copy line) and the dtype x shape correctness grid.
Pure: report.json in, the block's view out."""
from __future__ import annotations

from typing import Any, Mapping

from conformance.report.html import charts
from conformance.report.html.model import as_dict, as_list, as_number, no_transport_text, section_data


def _stat(row: Mapping[str, Any], key: str) -> tuple[float | None, float | None, float | None]:
    s = as_dict(row.get(key))
    iqr = as_list(s.get("iqr_gbps"))
    lo, hi = (as_number(iqr[0]), as_number(iqr[1])) if len(iqr) == 2 else (None, None)
    return as_number(s.get("median_gbps")), lo, hi


def bandwidth(report: Mapping[str, Any]) -> dict[str, Any]:
    """One curve chart per device: RDT, object store and in-process clone by size, host copy line."""
    data = section_data(report, "Transport")
    name = str(as_dict(data.get("transport")).get("name") or "transport")
    charts_out = []
    for device, sweep in as_dict(data.get("sweep")).items():
        sweep = as_dict(sweep)
        rows = [r for r in as_list(sweep.get("rows")) if isinstance(r, dict) and as_number(r.get("bytes"))]
        if not rows:
            continue
        series = []
        for key, label, colour, style in (("rdt", f"{name} (RDT)", "#1565c0", "-"),
                                          ("object_store", "Ray object store", "#ef6c00", "-"),
                                          ("clone", "torch clone on the source host", "#757575", "--")):
            stats = [_stat(r, key) for r in rows]
            series.append(charts.Series(label, [float(r["bytes"]) for r in rows], [s[0] or 0.0 for s in stats],
                                        [s[1] or 0.0 for s in stats], [s[2] or 0.0 for s in stats], colour, style))
        if not any(y > 0 for s in series for y in s.gbps):
            continue
        host = as_dict(sweep.get("host_copy"))
        ref = None
        if as_number(host.get("median_gbps")):
            ref = (f"host copy, {charts.human_bytes(as_number(host.get('bytes')) or 0)}: "
                   f"{as_number(host.get('median_gbps')):.2f} GB/s", float(host["median_gbps"]))
        title = f"{device}: {sweep.get('pair') or ''}".rstrip(": ")
        unverified = [charts.human_bytes(float(r["bytes"])) for r in rows if r.get("verified") is False]
        charts_out.append({"device": device, "svg": charts.bandwidth_svg(title, series, ref),
                           "trials": sweep.get("trials"), "warmup": sweep.get("warmup"),
                           "unverified": unverified})
    return {"charts": charts_out} if charts_out else {}


def bandwidth_section(report: Mapping[str, Any]) -> dict[str, Any]:
    """The transport's bandwidth charts with its dtype x shape correctness grid (either may be absent)."""
    charts, grid = bandwidth(report), correctness(report)
    if not charts and not grid:
        return {"missing": f"{no_transport_text(report)} this report has no bandwidth sweep."}
    return {**(charts or {"missing": f"{no_transport_text(report)} this report has no bandwidth sweep."}),
            "correctness": grid}


def correctness(report: Mapping[str, Any]) -> list[dict[str, Any]]:
    """Per device, the dtype × shape grid of transfer results ('ok' or what went wrong)."""
    grids = []
    for device, by_dtype in as_dict(section_data(report, "Transport").get("correctness")).items():
        by_dtype = as_dict(by_dtype)
        shapes: list[str] = []
        for cells in by_dtype.values():
            shapes += [s for s in as_dict(cells) if s not in shapes]
        rows = [(dtype, [str(as_dict(cells).get(s, "")) for s in shapes]) for dtype, cells in by_dtype.items()]
        if rows:
            grids.append({"device": device, "shapes": shapes, "rows": rows})
    return grids
