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
from conformance.report.judges import MissingEvidence

FULL, FIELDS, NONE = "full", "fields", "none"
# the parts of a description the label and placement checks read (described_value's fields)
DESCRIBED_FIELDS = ("schema_version", "accelerator_type", "domains", "slice_position")
_ERRORS = ("probe_error", "ray_ids_error", "manager_error", "plugin_labels_error", "description_error")
_TEXT_CAP = 300   # knob: an error string's recorded length (the report is read by people)


def exact_json(value: Any) -> bool:
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


def _described(desc: Any, mode: str) -> Any:
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
    """The recorded cluster is the manifest's: its resource, at least its node count, a node with
    devices, and every node with devices holding the declared devices_per_node and, where the
    manager answered, the declared type (the preflight's rules). A report that drops a node, or records another device count, is refused here."""
    kind, per_node, nodes, resource = expected(manifest)
    problems = []
    if m.get("resource") != resource:
        problems.append(f"records resource {m.get('resource')!r}; the manifest's accelerator.resource_name is "
                        f"{resource!r}")
    if len(facts) < nodes:
        problems.append(f"records {len(facts)} node(s); the manifest's cluster has {nodes}")
    with_devices = [f for f in facts if f.has_devices]
    if not with_devices:
        problems.append(f"no recorded node has any {resource} device")
    types = {f.short: f.manager_type for f in with_devices if f.manager_type not in (None, kind)}
    if types:
        problems.append(f"the manager reports type(s) {types}; the manifest's accelerator.expected.accelerator_type "
                        f"is {kind!r}")
    if per_node is not None:
        wrong = {f.short: f.device_count for f in with_devices if f.device_count != per_node}
        if wrong:
            problems.append(f"node(s) record {wrong} devices; the manifest's accelerator.expected.devices_per_node "
                            f"is {per_node}")
    return problems
