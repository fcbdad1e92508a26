"""Which nodes a per-node check exercised: the one record every such check keeps, and how the
report shows it ("nodes: 2 of 4").

A check whose evidence is per node (device detection and visibility, labels and topology, a
transport endpoint pair, a recovery scenario) ran on the nodes its scenario picked; on a cluster
of many nodes that is not every node, and a reader of the report must see which (issue 48: "61 of
64 nodes never run a transport check"). So each such check records, under one metrics key
(COVERAGE), the short ids of the nodes it used (as the house prints them: the node id's first
SHORT_ID characters) and the count of alive nodes when it looked (`alive`), and the run's node
mode (`mode`: conformance.run.nodes; "sample" is today's behaviour, "all" every alive node in
waves). Pure functions: the check side (conformance.run.nodes) merges into this record, the
report and the page read it.

The record is evidence a reader weighs, not a verdict: no judge reads it (a release's judge that
holds a check to every node would name it), and a report without it (older releases) reads as
before, with no line for the check.
"""
from __future__ import annotations

from typing import Any, Iterable, Mapping

COVERAGE = "node_coverage"   # the metrics key
SHORT_ID = 8                 # how many characters of a node id the house prints (evidence, pages)


def short_id(node_id: object) -> str:
    """A node id as the house prints it: its first SHORT_ID characters."""
    return str(node_id)[:SHORT_ID]


def merged(previous: object, node_ids: Iterable[object], alive: int, mode: str) -> dict[str, Any]:
    """The coverage record after a check used `node_ids` (full or short ids) on a cluster of `alive`
    alive nodes: the union with what it recorded before (a check may call in several phases), the
    largest alive count it saw, and the run's node mode."""
    before = previous if isinstance(previous, Mapping) else {}
    old = [str(n) for n in before.get("nodes") or [] if isinstance(n, str)]
    nodes = sorted({*old, *(short_id(n) for n in node_ids if n)})
    seen = before.get("alive")
    most = max(int(alive), int(seen)) if isinstance(seen, int) and not isinstance(seen, bool) else int(alive)
    return {"nodes": nodes, "alive": most, "mode": str(mode)}


def coverage_of(metrics: object) -> tuple[list[str], int] | None:
    """(node short ids, alive count) a check's metrics record; None when it records none, or a
    malformed record (a hostile report is a missing line, never an exception)."""
    record = metrics.get(COVERAGE) if isinstance(metrics, Mapping) else None
    if not isinstance(record, Mapping):
        return None
    nodes, alive = record.get("nodes"), record.get("alive")
    if not isinstance(nodes, list) or not all(isinstance(n, str) for n in nodes):
        return None
    if not isinstance(alive, int) or isinstance(alive, bool) or alive < 0:
        return None
    return nodes, alive


def coverage_text(metrics: object) -> str:
    """'nodes: 2 of 4' for a check's metrics ('' when it records no coverage)."""
    found = coverage_of(metrics)
    if found is None:
        return ""
    nodes, alive = found
    return f"nodes: {len(nodes)} of {alive}"


def coverage_rows(report: Mapping[str, Any]) -> list[tuple[str, str, list[str]]]:
    """(check id, 'nodes: k of N', node short ids) of every check of a report that records coverage."""
    rows = []
    for check in report.get("checks") or []:
        if not isinstance(check, Mapping):
            continue
        found = coverage_of(check.get("metrics"))
        if found is not None:
            rows.append((str(check.get("id")), coverage_text(check.get("metrics")), found[0]))
    return rows


def node_mode(report: Mapping[str, Any]) -> str | None:
    """The run's node mode as its selection records it (None: a report of a release before it)."""
    selection = report.get("selection")
    record = selection.get("nodes") if isinstance(selection, Mapping) else None
    mode = record.get("mode") if isinstance(record, Mapping) else None
    return str(mode) if isinstance(mode, str) else None


def coverage_markdown(report: Mapping[str, Any], width: int = 12) -> list[str]:
    """report.md's 'Nodes exercised' section ([] when no check records coverage: the page of an
    older report is unchanged). `width`: ids shown per row before '…'."""
    from tabulate import tabulate

    from conformance.sanitize import markdown_cell

    rows = coverage_rows(report)
    if not rows:
        return []
    mode = node_mode(report)
    lines = ["## Nodes exercised", "",
             f"Each per-node check's nodes (short ids) out of the cluster's alive nodes"
             f"{f'; node mode: {markdown_cell(mode, limit=20)}' if mode else ''}.", ""]
    table = [[cid, text, markdown_cell(", ".join(ids[:width]) + (" …" if len(ids) > width else ""), limit=200)]
             for cid, text, ids in rows]
    return [*lines, tabulate(table, headers=["check", "nodes", "ids"], tablefmt="github"), ""]
