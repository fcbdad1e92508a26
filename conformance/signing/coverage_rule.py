"""Which nodes a check says it exercised is the run's own record of its clusters (held-out round
25: N25_06, N25_07).

Every per-node check records the nodes it used (metrics.node_coverage, conformance.report.coverage:
short ids, the alive count, the node mode), and report.md and report.html show it as "nodes: k of
N". A coverage that names a node the run never had ("deadbeef"), or that says one node was alive
and lists one while the check's own judged record names two, tells the reader a coverage the run
did not have. The coverage is recomputable from what else the report records:

* the cluster a check ran on is the one of its shape (its `cluster:` in the checklist of the
  release the report names: `release_shapes`); the run records each cluster it started
  (cluster.history: a shape and the shapes that shared its cluster in `also`). A check of the
  run's own cluster ("shared", or a shape the shared cluster's history entry lists) names only
  nodes of environment.devices.nodes, the run's description of that cluster; on a cluster the suite started, its alive count is that cluster's node count;
* a check of a cluster the suite started for it alone (the recovery node lab, the preset-visible
  node) names nodes that appear nowhere else in the report: its shape must be one the run
  recorded starting, and its alive count at most what that start recorded;
* under any cluster, the nodes a check's judged record names (DP-006's device counts, DP-007's
  node types, DP-009's devices by node, the topology checks' nodes, a per_node record) are among
  the nodes its coverage lists, and a coverage lists no more nodes than were alive.

Pure except `release_shapes` of a release from before the `cluster:` field, which reads the
verifier's own checklist. A merged report's checks ran on several runs' clusters: each shard's own
verification holds its coverage to its own cluster (the `shards` line; conformance.signing.merged_evidence).
"""
from __future__ import annotations

from typing import Any, Mapping, Sequence

from conformance.catalog.clusters import names_clusters
from conformance.catalog.data import Checklist, load_checklist
from conformance.catalog.strict_input import as_list, as_map
from conformance.report.coverage import COVERAGE, coverage_of, short_id
from conformance.sanitize import terminal

SHARED = "shared"
# the metrics keys whose keys are node ids a check's judged record names (full or short ids)
NODE_KEYED = ("device_counts", "node_types", "ids_by_node", "devices_by_node", "per_node", "nodes")


def release_shapes(checklist: Checklist) -> dict[str, str]:
    """{check id: cluster shape} of the checklist of the release a report names (each check's
    `cluster:`), the shapes the run started its checks' clusters by.

    Fallback: a release from before the field names no shapes. Its reports are held to the shapes
    of the verifier's own checklist, as they were before the field to the marks of the verifier's
    installed check modules (the values of the field are those marks): a known defect for those
    releases, taken here alone. A check of no cluster of the run (`none`) is left out, so it reads
    as "shared", as it did when the marks were read (such a check records no node coverage)."""
    named = checklist if names_clusters(checklist.checks) else load_checklist()
    return {c.id: shape for c in named.checks if (shape := c.shape()) is not None}


def _run_nodes(environment: Mapping[str, Any]) -> set[str] | None:
    """environment.devices.nodes as short ids (None: not recorded)."""
    nodes = as_map(environment.get("devices")).get("nodes")
    if not isinstance(nodes, list) or not nodes:
        return None
    ids = {short_id(as_map(n).get("node_id")) for n in nodes if isinstance(as_map(n).get("node_id"), str)}
    return ids or None


def _started(cluster: Mapping[str, Any]) -> dict[str, tuple[bool, int | None]]:
    """{shape: (whether it is the run's own cluster, the node count its start recorded)} from
    cluster.history: a shape listed in an entry's `also` shared that entry's cluster."""
    out: dict[str, tuple[bool, int | None]] = {}
    for raw in as_list(cluster.get("history")):
        entry = as_map(raw)
        nodes = entry.get("nodes")
        count = nodes if isinstance(nodes, int) and not isinstance(nodes, bool) else None
        shapes = [entry.get("shape"), *as_list(entry.get("also"))]
        own = entry.get("shape") == SHARED
        for shape in shapes:
            if isinstance(shape, str):
                was_own, was_count = out.get(shape, (False, None))
                out[shape] = (own or was_own, max(c for c in (count, was_count, 0) if c is not None))
    return out


def _named_nodes(metrics: Mapping[str, Any]) -> set[str]:
    """The short ids of the nodes a check's judged records key by."""
    named: set[str] = set()
    for key in NODE_KEYED:
        record = metrics.get(key)
        if isinstance(record, Mapping):
            named |= {short_id(k) for k in record if isinstance(k, str) and k}
    return named


def coverage_problems(checks: Sequence[Any], environment: Mapping[str, Any], cluster: Mapping[str, Any], *,
                      remote: bool, merged: bool, shapes: Mapping[str, str]) -> list[str]:
    """Why a passed check's recorded node coverage is not the run's record of its clusters ([] when
    each is). A check that did not pass is left alone: a node lost mid-run is its failure to show,
    not a coverage verify refuses an honest report for.

    `remote`: the run was pointed at the vendor's cluster (its recorded command line): the suite
    started no cluster, so no history is required, the alive count is the vendor's cluster's, and
    only the checks of shape "shared" are held to environment.devices (a fault driver's restarted
    nodes are new ones). `shapes`: release_shapes of the report's release."""
    if merged:
        return []
    run_nodes = _run_nodes(environment)
    started = _started(cluster)
    problems: list[str] = []
    for raw in checks:
        entry = as_map(raw)
        metrics = as_map(entry.get("metrics"))
        if COVERAGE not in metrics or entry.get("outcome") != "pass":
            continue
        cid = terminal(str(entry.get("id")), limit=12)
        found = coverage_of(metrics)
        if found is None:
            problems.append(f"{cid} records a node coverage that is no list of node ids with an alive count")
            continue
        nodes, alive = found
        if len(set(nodes)) > alive:
            problems.append(f"{cid} node_coverage lists {len(set(nodes))} node(s) of {alive} alive")
        missing = sorted(_named_nodes(metrics) - set(nodes))
        if missing:
            problems.append(f"{cid} node_coverage lists {terminal(nodes, limit=60)} but its own record names node(s) "
                            f"{terminal(missing, limit=60)}")
        shape = shapes.get(str(entry.get("id")), SHARED)
        own, count = (shape == SHARED, None) if remote else started.get(shape, (shape == SHARED, None))
        if not remote and shape not in started and started:
            problems.append(f"{cid} ran on a cluster of shape {shape!r} (its checklist entry), which cluster.history "
                            "does not record starting")
            continue
        if own and run_nodes is not None:
            foreign = sorted(set(nodes) - run_nodes)
            if foreign:
                problems.append(f"{cid} node_coverage names node(s) {terminal(foreign, limit=60)} that are not the run's "
                                f"(environment.devices.nodes: {sorted(run_nodes)})")
            if not remote and alive != len(run_nodes):
                problems.append(f"{cid} node_coverage says {alive} node(s) alive; the run's cluster, which the suite "
                                f"started, has {len(run_nodes)} (environment.devices.nodes)")
        elif not own and count is not None and alive > count:
            problems.append(f"{cid} node_coverage says {alive} node(s) alive on its {shape!r} cluster; cluster.history "
                            f"records it started with {count}")
    return problems
