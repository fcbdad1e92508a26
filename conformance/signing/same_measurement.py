"""One measurement, or one observation of the cluster, recorded twice, says the same twice.

The performance checks share one sweep of the transport (PF-001's): PF-002 judges its largest
size against the link, PF-003 the largest size the object store held against Ray's object store
path. Each records the trials it judged, copied from the sweep, so each judge alone sees figures
that add up. A copy scaled in one check (PF-002's trials times ten, PF-003's store trials
lowered) or a comparison moved to a smaller size still adds up inside that check; only the
sweep the copy came from shows it (issue 43's held-out round: P01, P02, P03).

The device checks' node records (DP-006's device counts, DP-007's node types, DP-009's devices by
node) are the same cluster the run's preflight described (environment.devices: every alive node,
its id and its device count, which the report's cross-checks hold to the cluster and preflight
records): a node dropped from a check's record, or recorded with other devices, while the run's
own description of its cluster still names it, is the same edit however the run claims to have
been started (issue 43's held-out round: G39, G42, G43 added --conformance-ray-address to the
recorded command line, which relaxes the node counts the manifest fixes, and dropped the bad node).

Pure: the report's checks in, the contradictions out. A merged report (shards) is left alone:
its checks may come from different runs' sweeps and clusters.
"""
from __future__ import annotations

from typing import Any, Mapping, Sequence

from conformance.catalog.strict_input import as_map
from conformance.rdt.config import size_key
from conformance.sanitize import terminal

SWEEP, LINK, STORE = "PF-001", "PF-002", "PF-003"


def _metrics(checks: Sequence[Any], check_id: str) -> Mapping[str, Any] | None:
    """The metrics of a passed check (a check that did not pass is its own finding)."""
    for entry in checks:
        c = as_map(entry)
        if c.get("id") == check_id and c.get("outcome") == "pass":
            return as_map(c.get("metrics"))
    return None


def _row(sweep: Mapping[str, Any], nbytes: object) -> Mapping[str, Any] | None:
    if isinstance(nbytes, bool) or not isinstance(nbytes, int):
        return None
    row = as_map(sweep.get("bandwidth")).get(size_key(nbytes))
    return row if isinstance(row, Mapping) else None


def _sizes(sweep: Mapping[str, Any]) -> list[int]:
    sizes = sweep.get("sizes_bytes")
    return sorted(s for s in sizes if isinstance(s, int) and not isinstance(s, bool)) if isinstance(sizes, list) else []


def _same(what: str, recorded: object, swept: object) -> str | None:
    if recorded != swept:
        return (f"{what} {terminal(repr(recorded), limit=80)} are not the sweep's "
                f"{terminal(repr(swept), limit=80)} ({SWEEP}): one measurement recorded twice must agree")
    return None


def same_measurement_problems(checks: Sequence[Any], merged: bool) -> list[str]:
    """PF-002's largest size and trials, PF-003's size and both its series of trials, held to the
    PF-001 sweep of the same run (when all of them passed)."""
    sweep = _metrics(checks, SWEEP)
    if merged or sweep is None:
        return []
    sizes = _sizes(sweep)
    problems: list[str] = []
    link = _metrics(checks, LINK)
    if link is not None and sizes:
        if link.get("largest_bytes") != sizes[-1]:
            problems.append(f"{LINK} largest_bytes {terminal(repr(link.get('largest_bytes')), limit=20)} is not the "
                            f"sweep's largest size {sizes[-1]} ({SWEEP})")
        else:
            row = _row(sweep, sizes[-1]) or {}
            problems.append(_same(f"{LINK} largest_size_trials_gbps", link.get("largest_size_trials_gbps"),
                                  row.get("trials_gbps")) or "")
    store = _metrics(checks, STORE)
    if store is not None and sizes:
        held = [s for s in sizes if "object_store_trials_gbps" in (_row(sweep, s) or {})]
        if not held or store.get("bytes") != held[-1]:
            problems.append(f"{STORE} bytes {terminal(repr(store.get('bytes')), limit=20)} is not the largest size the "
                            f"sweep measured the object store at ({held[-1] if held else 'none'}, {SWEEP})")
        else:
            row = _row(sweep, held[-1]) or {}
            problems.append(_same(f"{STORE} rdt_trials_gbps", store.get("rdt_trials_gbps"), row.get("trials_gbps")) or "")
            problems.append(_same(f"{STORE} object_store_trials_gbps", store.get("object_store_trials_gbps"),
                                  row.get("object_store_trials_gbps")) or "")
    return [p for p in problems if p]


# check id -> (its record of the cluster's nodes, whether it names every node or those with devices)
NODE_RECORDS = {"DP-006": ("device_counts", False), "DP-007": ("node_types", True), "DP-009": ("devices_by_node", True)}
SHORT_ID = 8   # the node id characters a check's record keys a node by


def _cluster_nodes(environment: Mapping[str, Any]) -> dict[str, float] | None:
    """environment.devices.nodes as short node id -> devices (None: not recorded, nothing to hold to)."""
    nodes = as_map(environment.get("devices")).get("nodes")
    if not isinstance(nodes, list) or not nodes:
        return None
    out: dict[str, float] = {}
    for n in nodes:
        node, count = as_map(n).get("node_id"), as_map(n).get("count")
        if not isinstance(node, str) or isinstance(count, bool) or not isinstance(count, (int, float)):
            return None
        out[node[:SHORT_ID]] = float(count)
    return out


def same_nodes_problems(checks: Sequence[Any], environment: Mapping[str, Any], merged: bool) -> list[str]:
    """DP-006's, DP-007's and DP-009's node records name the nodes of the run's own description of
    its cluster, with its device counts (when they passed)."""
    cluster = None if merged else _cluster_nodes(environment)
    if cluster is None:
        return []
    problems: list[str] = []
    for check_id, (name, with_devices_only) in NODE_RECORDS.items():
        metrics = _metrics(checks, check_id)
        record = as_map(metrics.get(name)) if metrics is not None else None
        if not record:
            continue
        want = {k: v for k, v in cluster.items() if v > 0 or not with_devices_only}
        if sorted(map(str, record)) != sorted(want):
            problems.append(f"{check_id} {name} names nodes {terminal(sorted(map(str, record)), limit=80)}; the run's "
                            f"description of its cluster (environment.devices) has {sorted(want)}")
        elif check_id != "DP-007" and any(record[k] != want[k] for k in want):
            problems.append(f"{check_id} {name} records {terminal(dict(record), limit=80)}; environment.devices gives "
                            f"{want}")
    return problems
