"""The per-node hardware view: what Ray sees beside what the plugin describes.

Shared by the report section ("Topology" in report.md/report.json) and
`ray-conformance topology`. Differences are the same problems the checks report, tagged with
the check id that judges them, so the view and the verdicts never disagree.
"""
from __future__ import annotations

from typing import Any, Mapping, Sequence

from tabulate import tabulate

from conformance.areas.topology import consistency
from conformance.areas.topology.description import expected_problems, ray_view_problems, schema_problems, semantic_problems
from conformance.areas.topology.facts import NodeFacts
from conformance.catalog.labels import Vocabulary
from conformance.catalog.manifest_view import TopologyExpected

TYPE_PREFIX = "accelerator_type:"


def description_checks(node: NodeFacts, expected_topology: TopologyExpected | None) -> dict[str, list[str]]:
    """TL-004/005/006 problems for one node. "uncomparable" holds why TL-005/006 could not
    compare on a node with devices (no schema-valid description); those checks then report
    not_applicable rather than pass, and TL-004 carries the failure."""
    out: dict[str, list[str]] = {"TL-004": [], "TL-005": [], "TL-006": [], "uncomparable": []}
    if not node.provider_declared or node.probe_error:
        return out
    if node.description_error:
        out["TL-004"].append(f"the provider failed: {node.description_error}")
    elif node.description is None:
        if node.has_devices:
            out["TL-004"].append("the provider returned no description on a node with devices")
    else:
        out["TL-004"] = schema_problems(node.description)
        if not out["TL-004"]:
            out["TL-004"] = semantic_problems(node.description)
            _compare(node, expected_topology, out)
            return out
    if node.has_devices:
        out["uncomparable"].append("no schema-valid description on this node (see TL-004)")
    return out


def _compare(node: NodeFacts, expected_topology: TopologyExpected | None, out: dict[str, list[str]]) -> None:
    desc = node.description
    if node.has_devices:
        if node.ray_ids is None:
            out["TL-005"].append(node.ray_ids_error or "the ids Ray assigns on this node are unknown")
        else:
            out["TL-005"] = ray_view_problems(desc, node.ray_ids, node.manager_type)
        if expected_topology is not None:
            out["TL-006"] = expected_problems(desc, expected_topology)
    elif desc.get("devices"):
        out["TL-005"].append(f"describes {len(desc['devices'])} devices on a node where Ray schedules none")


def node_differences(node: NodeFacts, vocabulary: Vocabulary, expected_type: str,
                     expected_topology: TopologyExpected | None) -> list[tuple[str, str]]:
    """(check id, problem) for everything the topology checks find on this node."""
    if node.probe_error:
        return [("probe", f"the probe did not run: {node.probe_error}")]
    found: list[tuple[str, str]] = []
    found += [("TL-001", p) for p in consistency.type_label_problems(node, expected_type)]
    found += [("TL-002", p) for p in consistency.validity_problems(node, vocabulary)[0]]
    found += [("TL-003", p) for p in consistency.applied_problems(node)]
    for cid, problems in description_checks(node, expected_topology).items():
        if cid.startswith("TL-"):
            found += [(cid, p) for p in problems]
    found += [("TL-007", p) for p in consistency.agreement_problems(node, vocabulary)]
    found += [("TL-008", p) for p in consistency.publication_problems(node, vocabulary)]
    return found


def _links_summary(desc: Mapping[str, Any]) -> str:
    groups: dict[tuple[str, float], list[str]] = {}
    for link in desc.get("links", []) or []:
        if isinstance(link, Mapping):
            arrow = "->" if link.get("directed") else "-"
            groups.setdefault((str(link.get("kind")), link.get("bandwidth_gbps") or 0), []).append(
                f"{link.get('a')}{arrow}{link.get('b')}")
    return "; ".join(f"{kind} {bw:g} GB/s: {', '.join(pairs)}" for (kind, bw), pairs in sorted(groups.items())) or "none"


def _kv(d: Mapping[str, Any] | None, skip: Sequence[str] = ()) -> str:
    if not d:
        return "none"
    return ", ".join(f"{k}={v}" for k, v in sorted(d.items()) if k not in skip) or "none"


def node_data(node: NodeFacts, resource: str, diffs: list[tuple[str, str]]) -> dict[str, Any]:
    desc = node.description if isinstance(node.description, dict) else None
    res = {k: v for k, v in node.resources.items() if k in (resource, "CPU") or k.startswith(TYPE_PREFIX)}
    return {
        "node_id": node.node_id, "address": node.address,
        "ray": {"resources": res, "labels": dict(node.ray_labels), "device_ids": node.ray_ids,
                "device_ids_error": node.ray_ids_error},
        "plugin": {"labels": node.plugin_labels if isinstance(node.plugin_labels, dict) else None,
                   "labels_error": node.plugin_labels_error, "manager_type": node.manager_type,
                   "description": desc, "description_error": node.description_error,
                   "provider_declared": node.provider_declared},
        "probe_error": node.probe_error,
        "differences": [{"check": c, "problem": p} for c, p in diffs],
    }


def node_markdown(node: NodeFacts, resource: str, diffs: list[tuple[str, str]], domain_keys: Sequence[str] = ()) -> str:
    desc = node.description if isinstance(node.description, dict) else None
    ids = ",".join(node.ray_ids) if node.ray_ids is not None else f"unknown ({node.ray_ids_error})"
    ray_dev = f"{resource} x {node.device_count:g}, ids {ids}" if node.has_devices else f"no {resource}"
    if not node.provider_declared:
        plugin_dev = "(no topology.provider)"
    elif node.description_error:
        plugin_dev = f"provider failed: {node.description_error}"
    elif desc is None:
        plugin_dev = "no description"
    else:
        devs = desc.get("devices") or []
        plugin_dev = (f"{len(devs)}: " + ",".join(str(d.get("id")) for d in devs if isinstance(d, Mapping))) if devs else "none"
    plugin_labels = (f"error: {node.plugin_labels_error}" if node.plugin_labels_error
                     else _kv(node.plugin_labels if isinstance(node.plugin_labels, dict) else None))
    rows = [
        ["devices", ray_dev, plugin_dev],
        ["type", node.ray_labels.get("ray.io/accelerator-type", "none"),
         f"{desc.get('accelerator_type')} (manager: {node.manager_type})" if desc else f"manager: {node.manager_type}"],
        ["labels", _kv(node.ray_labels, skip=("ray.io/node-id",)), plugin_labels],
        ["domains", _kv({k: v for k, v in node.ray_labels.items() if k in domain_keys}),
         _kv(desc.get("domains")) if desc else ""],
        ["links", "", _links_summary(desc) if desc else ""],
        ["NUMA / NICs", "", (f"{len(desc.get('numa_nodes') or [])} NUMA node(s); NICs: "
                             + (", ".join(f"{n.get('name')}->{','.join(n.get('devices') or []) or '-'}"
                                          for n in desc.get("nics") or [] if isinstance(n, Mapping)) or "none")) if desc else ""],
    ]
    table = tabulate([[a, str(b).replace("|", "/"), str(c).replace("|", "/")] for a, b, c in rows],
                     headers=["", "Ray sees", "the plugin says"], tablefmt="github")
    lines = [f"### Node {node.short} ({node.address or 'unknown address'})", "", table, ""]
    if node.probe_error:
        lines.append(f"**probe failed:** {node.probe_error}")
    lines += ([f"- ✗ {cid}: {p}" for cid, p in diffs] if diffs else ["No differences."])
    return "\n".join(lines)


def build_view(facts: Sequence[NodeFacts], *, resource: str, vocabulary: Vocabulary, expected_type: str,
               expected_topology: TopologyExpected | None, notes: Sequence[str] = ()) -> dict[str, Any]:
    """{"markdown": ..., "data": ...}: the report section (and what the CLI prints)."""
    per_node = [(f, node_differences(f, vocabulary, expected_type, expected_topology)) for f in facts]
    total = sum(len(d) for _, d in per_node)
    head = [f"{len(facts)} node(s); {total} difference(s) between Ray's view and the plugin's."]
    head += [f"Note: {n}" for n in notes]
    domain_keys = [k.key for k in vocabulary.keys if (k.describes or "").startswith("domains.")]
    md = "\n\n".join(["\n".join(head)] + [node_markdown(f, resource, d, domain_keys) for f, d in per_node])
    return {"markdown": md,
            "data": {"resource": resource, "nodes": [node_data(f, resource, d) for f, d in per_node],
                     "differences": total, "notes": list(notes)}}
