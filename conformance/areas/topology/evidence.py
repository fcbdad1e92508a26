"""What a topology check records as its evidence, and the node facts its judge rebuilds from it.

Every TL check records the facts it decided on, per node: the node's devices (Ray's count), its
Ray labels, what the plugin returned there (labels, the manager's type, the description) and the
ids Ray handed the probe. The judge (conformance.areas.topology.judges) rebuilds NodeFacts from
that record and runs the same pure problem functions the live check used, so the live check and
`verify` decide on the same record. The record is JSON-exact: a value the plugin returned that
JSON cannot carry faithfully (a non-str key, a NaN, an object) is recorded as an error string, so
the report's JSON decides exactly what the live record decided. Pure: no Ray, no I/O.
"""
from __future__ import annotations

import math
from typing import Any, Iterable, Mapping

from conformance.areas.topology.facts import NodeFacts
from conformance.areas.topology.selectors import NODE_ID_KEY
from conformance.catalog.manifest import declared_device_nodes
from conformance.report.judges import MissingEvidence, ran_remote

FULL, FIELDS, NONE = "full", "fields", "none"
# the parts of a description the label and placement checks read (described_value's fields)
DESCRIBED_FIELDS = ("schema_version", "accelerator_type", "domains", "slice_position")
_ERRORS = ("probe_error", "ray_ids_error", "manager_error", "plugin_labels_error", "description_error")
_TEXT_CAP = 300   # knob: an error string's recorded length (the report is read by people)


def exact_json(value: object) -> bool:
    """The value survives a JSON round trip unchanged (str keys, finite numbers, lists)."""
    if value is None or isinstance(value, (str, bool, int)):
        return True
    if isinstance(value, float):
        return math.isfinite(value)
    if isinstance(value, list):
        return all(exact_json(v) for v in value)
    if isinstance(value, dict):
        return all(isinstance(k, str) and exact_json(v) for k, v in value.items())
    return False


def _described(desc: object, mode: str) -> Any:
    if mode == FULL or not isinstance(desc, dict):
        return desc
    out = {k: desc[k] for k in DESCRIBED_FIELDS if k in desc}
    devices = desc.get("devices")
    if isinstance(devices, list):   # ids only: the label checks count them, the placement checks too
        out["devices"] = [{"id": d.get("id")} if isinstance(d, dict) else d for d in devices]
    return out


def node_record(f: NodeFacts, mode: str = NONE) -> dict[str, Any]:
    """One node's facts as evidence (`mode`: the description in full, its described fields, or none)."""
    count = float(f.device_count)
    rec: dict[str, Any] = {"devices": int(count) if count.is_integer() else count,
                           "labels": {k: v for k, v in f.ray_labels.items() if k != NODE_ID_KEY}}
    for key in _ERRORS:
        if getattr(f, key):
            rec[key] = str(getattr(f, key))[:_TEXT_CAP]
    if f.probe_error:
        return rec
    rec["manager_type"] = f.manager_type if exact_json(f.manager_type) else repr(f.manager_type)[:_TEXT_CAP]
    rec["ray_ids"] = f.ray_ids
    if f.plugin_labels is not None:
        if exact_json(f.plugin_labels):
            rec["plugin_labels"] = f.plugin_labels
        else:   # not a dict of str to str JSON can carry: what it was, as the failure TL-002 reports
            rec.setdefault("plugin_labels_error", f"get_current_node_accelerator_labels() returned "
                                                  f"{type(f.plugin_labels).__name__} {f.plugin_labels!r}"[:_TEXT_CAP])
    if mode != NONE and f.description is not None:
        if exact_json(f.description):
            rec["description"] = _described(f.description, mode)
        else:
            rec.setdefault("description_error", f"topology.provider returned a value JSON cannot carry: "
                                                f"{f.description!r}"[:_TEXT_CAP])
    return rec


def record_nodes(facts: Iterable[NodeFacts], mode: str = NONE) -> dict[str, dict[str, Any]]:
    """node id -> its record: the `nodes` evidence of a check."""
    return {f.node_id: node_record(f, mode) for f in facts}


def facts_of(m: Mapping[str, Any], manifest: Mapping[str, Any]) -> list[NodeFacts]:
    """The NodeFacts a check's `nodes` evidence records (MissingEvidence when there is none).
    Whether a provider was declared is the manifest's word, not the record's."""
    nodes = m.get("nodes")
    if not isinstance(nodes, Mapping) or not nodes:
        raise MissingEvidence("metric nodes is missing or empty (no node's facts recorded)")
    provider = bool((manifest.get("topology") or {}).get("provider")) if isinstance(manifest, Mapping) else False
    out = []
    for node_id, rec in nodes.items():
        if not isinstance(rec, Mapping):
            raise MissingEvidence(f"metric nodes.{str(node_id)[:8]} is not a record")
        devices = rec.get("devices")
        if isinstance(devices, bool) or not isinstance(devices, (int, float)) or not math.isfinite(devices):
            raise MissingEvidence(f"metric nodes.{str(node_id)[:8]}.devices is missing or not a number")
        labels = rec.get("labels")
        if not isinstance(labels, Mapping):
            raise MissingEvidence(f"metric nodes.{str(node_id)[:8]}.labels is missing")
        ray_ids = rec.get("ray_ids")
        f = NodeFacts(node_id=str(node_id), ray_labels={str(k): v for k, v in labels.items()},
                      device_count=float(devices), provider_declared=provider,
                      ray_ids=[str(i) for i in ray_ids] if isinstance(ray_ids, list) else None,
                      manager_type=rec.get("manager_type"), plugin_labels=rec.get("plugin_labels"),
                      description=rec.get("description"))
        for key in _ERRORS:
            if rec.get(key):
                setattr(f, key, str(rec[key]))
        if not f.probe_error and f.has_devices and f.ray_ids is None and not f.ray_ids_error:
            f.ray_ids_error = "the ids Ray assigns on this node are not recorded"
        out.append(f)
    return out


def expected(manifest: Mapping[str, Any]) -> tuple[str, int | None, int, str]:
    """(accelerator type, devices per node, nodes, resource name) the manifest declares."""
    acc = manifest.get("accelerator") or {} if isinstance(manifest, Mapping) else {}
    want = acc.get("expected") or {}
    kind = want.get("accelerator_type")
    if not isinstance(kind, str) or not kind:
        raise MissingEvidence("the manifest declares no accelerator.expected.accelerator_type")
    per_node = want.get("devices_per_node")
    nodes = (manifest.get("cluster") or {}).get("nodes", 1)
    return kind, per_node if isinstance(per_node, int) else None, nodes if isinstance(nodes, int) else 1, \
        str(acc.get("resource_name") or "")


def cluster_problems(m: Mapping[str, Any], facts: list[NodeFacts], manifest: Mapping[str, Any]) -> list[str]:
    """The recorded cluster is the manifest's: its resource, a node with devices, every node with
    devices holding the declared devices_per_node and, where the manager answered, the declared
    type (the preflight's rules). On a cluster the suite started from the manifest the node set is
    exactly the manifest's (cluster.nodes nodes, each with devices_per_node devices: a node
    dropped, or recorded with no device, is refused); on the vendor's own cluster at least its
    node count, nodes without devices allowed. The labels the manifest's claims fix are there
    too (domain_label_problems)."""
    kind, per_node, nodes, resource = expected(manifest)
    problems = []
    if m.get("resource") != resource:
        problems.append(f"records resource {m.get('resource')!r}; the manifest's accelerator.resource_name is "
                        f"{resource!r}")
    remote = ran_remote(manifest)
    if len(facts) < nodes or (not remote and len(facts) != nodes):
        problems.append(f"records {len(facts)} node(s); the manifest's cluster has {nodes}")
    with_devices = [f for f in facts if f.has_devices]
    if not with_devices:
        problems.append(f"no recorded node has any {resource} device")
    if not remote and len(with_devices) < declared_device_nodes(manifest):
        problems.append(f"records {len(with_devices)} node(s) with {resource} devices; the cluster the suite started "
                        f"from the manifest has {declared_device_nodes(manifest)} under its declared accelerator.env")
    types = {f.short: f.manager_type for f in with_devices if f.manager_type not in (None, kind)}
    if types:
        problems.append(f"the manager reports type(s) {types}; the manifest's accelerator.expected.accelerator_type "
                        f"is {kind!r}")
    if per_node is not None:
        wrong = {f.short: f.device_count for f in with_devices if f.device_count != per_node}
        if wrong:
            problems.append(f"node(s) record {wrong} devices; the manifest's accelerator.expected.devices_per_node "
                            f"is {per_node}")
    return problems + count_label_problems(facts) + domain_label_problems(with_devices, manifest, remote)


def count_label_problems(facts: list[NodeFacts]) -> list[str]:
    """A node's record agrees with itself: a label stating its device count (a vocabulary key
    describing device_count) is the count recorded, and a node recorded without devices carries
    no ids Ray assigns there (a node zeroed in the record keeps what shows its devices)."""
    from conformance.catalog.labels import load_vocabulary

    keys = load_vocabulary().keys_describing("device_count")
    problems = []
    for f in facts:
        stated = {k: f.ray_labels[k] for k in keys if k in f.ray_labels}
        count = f.device_count
        if any(str(v) != (str(int(count)) if float(count).is_integer() else str(count)) for v in stated.values()):
            problems.append(f"node {f.short} records {count:g} devices but its label(s) {stated} say otherwise")
        if not f.has_devices and f.ray_ids:
            problems.append(f"node {f.short} records no device but Ray assigned it ids {f.ray_ids}")
    return problems


# who sets a vocabulary key (tiers/labels.yaml `status`): Ray 2.60 never sets these itself, so on
# a node the suite started they are there only because the suite applied the plugin's labels
_PLUGIN_STATUSES = ("proposed", "ray-tpu", "ray-doc")


def domain_label_problems(with_devices: list[NodeFacts], manifest: Mapping[str, Any], remote: bool) -> list[str]:
    """What the manifest's claims fix about the labels of the nodes with devices, on nodes the suite
    started (on the vendor's own nodes, started without the plugin's labels, their absence is
    TL-003's and TL-008's finding, not every check's): a manifest that expects domains
    (topology.expected.domains) says every such node carries a label of each (a vocabulary key
    describing domains.<name>); and, as the suite started them, they carry only
    the plugin's labels beside Ray's own (conformance.cluster.manager.shape_node_labels), every
    label Ray does not set itself is one the plugin returned there: a plugin label missing from
    the record (dropped, or the whole set recorded empty) is refused, never read as "the plugin
    returned none"."""
    from conformance.catalog.labels import load_vocabulary

    if remote:
        return []
    vocabulary = load_vocabulary()
    topology = manifest.get("topology") if isinstance(manifest, Mapping) else None
    domains = ((topology or {}).get("expected") or {}).get("domains") if isinstance(topology, Mapping) else None
    domains = [str(d) for d in domains] if isinstance(domains, list) else []
    problems = []
    for f in with_devices:
        for name in domains:
            keys = vocabulary.keys_describing(f"domains.{name}")
            if not any(k in f.ray_labels for k in keys):
                shown = " or ".join(keys) or "no vocabulary key describes it"
                problems.append(f"node {f.short} carries no {name} domain label ({shown}); the manifest's "
                                f"topology.expected.domains names {name!r}")
        if f.probe_error or f.plugin_labels_error:
            continue
        plugin = f.plugin_labels if isinstance(f.plugin_labels, Mapping) else {}
        ours = sorted(k for k in f.ray_labels if (entry := vocabulary.lookup(k)) is not None
                      and entry.status in _PLUGIN_STATUSES and k not in plugin)
        if ours:
            problems.append(f"node {f.short} carries {', '.join(ours)}, which on a node the suite started only the "
                            "plugin's labels put there, but the plugin's recorded labels lack them")
    return problems
