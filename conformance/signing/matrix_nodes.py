"""PF-004's matrix against the run's own description of its cluster (verify's `evidence` line).

PF-004's judge recomputes the matrix's shape from the manifest on a cluster the suite started; on
the vendor's own cluster (`--conformance-ray-address`) the manifest's node count is no source, so
the judge holds the matrix only to how the check builds it (areas/performance/matrix_shape.py):
round-robin, every unit below the cap. That alone lets a report drop whole nodes (a matrix kept to
n0's four endpoints, the cross-node links never measured, still round-robin). What a report cannot
shrink without contradicting itself is `environment.devices.nodes`, the device nodes Ray listed,
which verify cross-checks against the shape, the preflight and the cluster record (the `nodes`
fact, signing/trust.py). The check places one endpoint per unit, round-robin over those nodes, at
most max_endpoints (conformance.rdt.pool.device_endpoint_nodes), so the matrix of a passed PF-004
has exactly min(max_endpoints, units) endpoints on min(device nodes, endpoints) nodes.
"""
from __future__ import annotations

from typing import Any, Mapping, Sequence

from conformance.catalog.strict_input import as_map

CHECK = "PF-004"


def _device_units(environment: Mapping[str, Any]) -> list[int] | None:
    """Each device node's unit count from environment.devices.nodes (None: not recorded or not
    counts, nothing to hold the matrix to; nodes without units are left out)."""
    nodes = as_map(environment.get("devices")).get("nodes")
    if not isinstance(nodes, list) or not nodes:
        return None
    units: list[int] = []
    for node in nodes:
        count = as_map(node).get("count")
        if isinstance(count, bool) or not isinstance(count, (int, float)):
            return None
        if count >= 1:
            units.append(int(count))
    return units


def matrix_nodes_problems(checks: Sequence[Any], environment: Mapping[str, Any], merged: bool) -> list[str]:
    """A passed PF-004 whose matrix has fewer endpoints or spans fewer nodes than the run's device
    nodes give (a merged report's shards each describe their own cluster: not judged here)."""
    entry = next((as_map(c) for c in checks if as_map(c).get("id") == CHECK and as_map(c).get("outcome") == "pass"), None)
    units = None if merged or entry is None else _device_units(environment)
    if entry is None or not units:
        return []
    labels = as_map(entry.get("metrics")).get("endpoints")
    cap = as_map(entry.get("params")).get("max_endpoints")
    if not isinstance(labels, list) or isinstance(cap, bool) or not isinstance(cap, int):
        return []   # the judge's MissingEvidence / the params rule say so
    want = min(cap, sum(units))
    spans = len({str(x).split(":")[0] for x in labels})
    if len(labels) != want or spans != min(len(units), want):
        return [f"{CHECK} passed with a matrix of {len(labels)} endpoint(s) on {spans} node(s); the run's device "
                f"nodes (environment.devices: {len(units)} with {sum(units)} unit(s)) give {want} endpoint(s) on "
                f"{min(len(units), want)} node(s) (one per unit, round-robin, at most max_endpoints = {cap})"]
    return []
