"""report.html's Topology block (Area.html): nodes, devices, links by kind and bandwidth, and
domains, drawn as plain SVG (conformance.report.html.topology_svg). Pure: report.json in, the
block's view out; every string was made safe by the page (conformance.report.html.model.clean_tree)."""
from __future__ import annotations

from collections import Counter
from typing import Any, Mapping

from conformance.report.html.limits import page_budget
from conformance.report.html.model import as_dict, as_list, as_number, section_data
from conformance.report.html.topology_svg import NodeTopology, topology_svg


def _node_name(index: int, node: Mapping[str, Any]) -> str:
    node_id = str(node.get("node_id") or "")
    return f"node {index}" + (f" · {node_id[:8]}" if node_id else "")


def topology(report: Mapping[str, Any]) -> dict[str, Any]:
    """Nodes, devices, links by kind and bandwidth, and domains; from the topology section, else
    from the environment's device census (devices only)."""
    data = section_data(report, "Topology")
    nodes: list[NodeTopology] = []
    link_rows: Counter[tuple[str, str]] = Counter()
    link_pairs: dict[tuple[str, str], list[str]] = {}
    notes = [str(n) for n in as_list(data.get("notes"))]
    source = "the plugin's topology provider"
    for i, node in enumerate(n for n in as_list(data.get("nodes")) if isinstance(n, dict)):
        plugin = as_dict(node.get("plugin"))
        desc = as_dict(plugin.get("description"))
        ray_view = as_dict(node.get("ray"))
        devices = [str(d.get("id")) for d in as_list(desc.get("devices")) if isinstance(d, dict)]
        if not devices:
            devices = [str(d) for d in as_list(ray_view.get("device_ids"))]
            source = "Ray's view (no topology description from the plugin)"
        links = []
        for link in page_budget().points(as_list(desc.get("links")), f"topology: links of node {i}"):
            if isinstance(link, dict):
                kind = str(link.get("kind") or "?")
                bw = as_number(link.get("bandwidth_gbps"))
                links.append((str(link.get("a")), str(link.get("b")), kind, bw))
                key = (kind, f"{bw:g} GB/s" if bw is not None else "bandwidth not stated")
                link_rows[key] += 1
                link_pairs.setdefault(key, []).append(f"n{i}:{link.get('a')}–{link.get('b')}")
        domains = [(str(k), str(v)) for k, v in as_dict(desc.get("domains")).items()]
        if not domains:
            domains = [(k.split("/")[-1], str(v)) for k, v in as_dict(plugin.get("labels") or ray_view.get("labels")).items()
                       if "domain" in k or "rack" in k]
        islands = tuple((str(d.get("name")), tuple(str(x) for x in as_list(d.get("devices"))))
                        for d in as_list(desc.get("device_domains")) if isinstance(d, dict))
        nodes.append(NodeTopology(_node_name(i, node), devices, links, domains, islands))
        if node.get("probe_error"):
            notes.append(f"node {i}: probe error: {node.get('probe_error')}")
        for diff in as_list(node.get("differences")):
            notes.append(f"node {i}: Ray and the plugin differ: {diff}")
    if not nodes:
        census = as_dict(as_dict(report.get("environment")).get("devices"))
        for i, node in enumerate(n for n in as_list(census.get("nodes")) if isinstance(n, dict)):
            count = int(as_number(node.get("count")) or 0)
            domains = [(k.split("/")[-1], str(v)) for k, v in as_dict(node.get("labels")).items()
                       if "domain" in k or "rack" in k]
            nodes.append(NodeTopology(_node_name(i, node), [str(d) for d in range(count)], [], domains))
        source = "the run's device census (the topology checks did not run: no links known)"
    if not nodes:
        return {}
    return {"svg": topology_svg(nodes), "source": source, "notes": notes,
            "shown": min(len(nodes), 4), "total": len(nodes),
            "links": [{"kind": k, "bandwidth": b, "count": n, "pairs": ", ".join(link_pairs[(k, b)][:12])
                       + (" …" if len(link_pairs[(k, b)]) > 12 else "")}
                      for (k, b), n in sorted(link_rows.items())]}
