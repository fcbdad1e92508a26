"""The run's node mode as its evidence records it (held-out round 25: N25_01, N25_02).

`verify`'s `nodes` line recomputes the per-node checks' nodes from selection.nodes (mode, seed,
size); a report without that record (or without a seed) was read as one of a release before
`run --nodes`, with nothing to recompute. But the run that chose nodes also wrote its mode into
every check it covered (metrics.node_coverage.mode, conformance.report.coverage): a report whose
checks record a node mode was run with one, and must record it, the same mode, and, for a
sample, the seed that chose the nodes. So dropping selection.nodes (or its seed) to run the
per-node checks on nodes the vendor liked is refused by the evidence itself.

Pure: a parsed report in, problem lines out.
"""
from __future__ import annotations

from typing import Any, Mapping

from conformance.catalog.strict_input import as_list, as_map
from conformance.sanitize import terminal


def evidence_modes(report: Mapping[str, Any]) -> dict[str, str]:
    """Each check's recorded node mode (metrics.node_coverage.mode), by check id."""
    out: dict[str, str] = {}
    for check in as_list(report.get("checks")):
        coverage = as_map(as_map(as_map(check).get("metrics")).get("node_coverage"))
        if "mode" in coverage:
            out[str(as_map(check).get("id"))] = str(coverage.get("mode"))
    return out


def recorded_mode_problems(report: Mapping[str, Any]) -> list[str]:
    """Why selection.nodes is not the node mode the checks' evidence records ([] when it is, or
    when no check records one: a release before run --nodes)."""
    modes = evidence_modes(report)
    if not modes:
        return []
    raw = as_map(report.get("selection")).get("nodes")
    record = as_map(raw)
    mode = record.get("mode")
    seen = sorted(set(modes.values()))
    shown = ", ".join(terminal(m, limit=20) for m in seen[:3])
    if mode is None:
        return [f"{len(modes)} check(s) record node mode {shown} (metrics.node_coverage) but selection.nodes records "
                "no mode: the run had one, and its mode and seed are what the per-node choice is recomputed from"]
    problems = []
    other = sorted(cid for cid, m in modes.items() if m != mode)
    if other:
        problems.append(f"{', '.join(terminal(c, limit=12) for c in other[:4])} record(s) node mode "
                        f"{terminal(modes[other[0]], limit=20)!r} (metrics.node_coverage); selection.nodes says "
                        f"{terminal(str(mode), limit=20)!r}")
    if mode == "sample" and record.get("seed") is None:
        problems.append("selection.nodes records a sample without its seed, while the checks record the sample they "
                        "ran on: the seed is what verify recomputes the sample from")
    return problems
