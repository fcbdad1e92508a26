"""PF-004's matrix against the cluster it ran on: how many endpoints, on which nodes, at what size.

On a cluster the suite started the cluster is the manifest's (its node count, each node with its
declared devices), so the matrix's shape is recomputed from it. On the vendor's own cluster
(`--conformance-ray-address`, conformance.report.judges.ran_remote) the manifest's node count is
no source (docs/signing.md, the `nodes` fact): the matrix is held to how the check builds it
(conformance.rdt.pool.device_endpoint_nodes) whatever the count. Pure: no Ray, no I/O.
"""
from __future__ import annotations

from typing import Any, Mapping

from conformance.rdt.config import MATRIX_MAX_BYTES, recorded_max_bytes
from conformance.report.judges import MissingEvidence, number, param_value, path_of, ran_remote


def run_top(m: Mapping[str, Any]) -> int:
    """The sweep's top size in this run: the release's largest payload, unless the check records
    the run's size knob (conformance.rdt.config.recorded_max_bytes; a record that does not add up
    is missing evidence of the size)."""
    try:
        return recorded_max_bytes(m)
    except ValueError as exc:
        raise MissingEvidence(str(exc)) from None


def _endpoints_per_node(manifest: Mapping[str, Any]) -> int:
    """Endpoints the matrix takes on a node: one per accelerator unit the manifest declares per node
    (a per-node fact verify cross-checks against every node Ray listed), one without units."""
    units = path_of(manifest, "accelerator.expected.devices_per_node")
    return units if isinstance(units, int) and not isinstance(units, bool) and units > 0 else 1


def matrix_endpoints(p: Mapping[str, Any], manifest: Mapping[str, Any]) -> tuple[int, int] | None:
    """(endpoints, nodes) of the matrix on the cluster the manifest declares
    (conformance.rdt.pool.device_endpoint_nodes: one endpoint per accelerator unit, round-robin
    over the nodes, at most max_endpoints; one per node without units), None when it declares no
    node count, or when the run was on the vendor's own cluster, whose node count is not the
    manifest's (`cluster.nodes` is no source there: docs/signing.md; remote_matrix_problem)."""
    nodes = path_of(manifest, "cluster.nodes")
    if ran_remote(manifest) or not isinstance(nodes, int) or isinstance(nodes, bool) or nodes < 1:
        return None
    n = min(int(param_value(p, "max_endpoints")), nodes * _endpoints_per_node(manifest))
    return n, min(nodes, n)


def remote_matrix_problem(labels: list[str], p: Mapping[str, Any], manifest: Mapping[str, Any]) -> str | None:
    """The matrix on the vendor's own cluster, held to how the check builds it whatever the node
    count: at most max_endpoints endpoints, spread round-robin over nodes n0..n(k-1) (no node two
    endpoints ahead of another), and below the cap every unit of each of those nodes an endpoint
    (a node's units are not left out to keep a slow link off the matrix)."""
    cap = int(param_value(p, "max_endpoints"))
    per_node: dict[str, int] = {}
    for label in labels:
        per_node[label.split(":")[0]] = per_node.get(label.split(":")[0], 0) + 1
    k, per = len(per_node), _endpoints_per_node(manifest)
    if set(per_node) != {f"n{i}" for i in range(k)}:
        return f"the matrix's endpoints name the nodes {sorted(per_node)}, not n0..n{k - 1}"
    if len(labels) > cap:
        return f"the matrix has {len(labels)} endpoint(s), more than max_endpoints = {cap}"
    if max(per_node.values()) - min(per_node.values()) > 1:
        return f"the matrix's endpoints per node {dict(sorted(per_node.items()))} are not spread round-robin"
    if len(labels) < cap and len(labels) != k * per:
        return f"the matrix has {len(labels)} endpoint(s) on {k} node(s), under max_endpoints = {cap}: every " \
               f"unit of each node is an endpoint ({per} per node, accelerator.expected.devices_per_node)"
    return None


def matrix_shape_problem(m: Mapping[str, Any], p: Mapping[str, Any], manifest: Mapping[str, Any]) -> str | None:
    """The matrix's endpoints and nodes against the declared cluster, its message size against the run's."""
    size, want_size = number(m, "bytes"), min(run_top(m), MATRIX_MAX_BYTES)
    if size != want_size:
        return f"the matrix moved {size:.0f} bytes per transfer; this run's matrix size is {want_size} bytes"
    labels = m.get("endpoints")
    if not isinstance(labels, list) or not all(isinstance(x, str) for x in labels):
        raise MissingEvidence("metric endpoints is missing or not a list of endpoint labels")
    if len(set(labels)) != len(labels):
        return f"endpoints {labels} names an endpoint twice"
    if ran_remote(manifest):
        return remote_matrix_problem(labels, p, manifest)
    want = matrix_endpoints(p, manifest)
    if want is None:
        return None
    n, nodes = want
    seen = {x.split(":")[0] for x in labels}
    if len(labels) != n or len(seen) != nodes or seen != {f"n{k}" for k in range(nodes)}:   # counts first: `nodes` is the report's
        return f"the matrix has {len(labels)} endpoint(s) on {sorted(seen)}; the manifest's cluster gives {n} on " \
               f"{nodes} node(s) (one per device, at most max_endpoints = {p.get('max_endpoints')})"
    return None
