"""report.html's Pairwise bandwidth block (Area.html): one heatmap per device of the all-pairs
bandwidth matrix (the Transport section's `pairs`, PF-003), and any pair that moved wrong data.
Pure: report.json in, the block's view out."""
from __future__ import annotations

import re
from typing import Any, Mapping

from conformance.report.html import charts
from conformance.report.html.model import as_dict, as_list, as_number, no_transport_text, section_data


def pairwise_section(report: Mapping[str, Any]) -> dict[str, Any]:
    return pairwise(report) or {"missing": f"{no_transport_text(report)} this report has no pairwise matrix (it "
                                           "also needs at least two devices)."}


def pairwise(report: Mapping[str, Any]) -> dict[str, Any]:
    """One heatmap per device of the all-pairs bandwidth matrix, and any pair that moved wrong data."""
    out = []
    for device, pairs in as_dict(section_data(report, "Transport").get("pairs")).items():
        pairs = as_dict(pairs)
        labels = [str(x) for x in as_list(pairs.get("labels"))]
        grid = [[as_number(v) for v in as_list(row)] for row in as_list(pairs.get("gbps"))]
        if not labels or len(grid) != len(labels) or any(len(r) != len(labels) for r in grid):
            continue
        order = sorted(range(len(labels)), key=lambda i: _natural(labels[i]))
        labels = [labels[i] for i in order]
        grid = [[grid[i][j] for j in order] for i in order]
        nodes = [label.split(":", 1)[0] for label in labels]
        blocks = [k for k in range(1, len(nodes)) if nodes[k] != nodes[k - 1]] if all(":" in x for x in labels) else []
        size = charts.human_bytes(as_number(pairs.get("bytes")) or 0)
        title = f"{device}: GB/s at {size}, median of {pairs.get('trials', '?')} trials"
        out.append({"device": device, "svg": charts.pairwise_svg(title, labels, grid, blocks),
                    "wrong": sorted(as_dict(pairs.get("wrong")).items())})
    return {"charts": out} if out else {}


def _natural(text: str) -> list[Any]:
    """Sort key that orders n2 before n10."""
    return [(0, int(part), "") if part.isdigit() else (1, 0, part) for part in re.split(r"(\d+)", text)]
