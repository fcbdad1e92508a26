"""Labels against Ray's node labels, the manager's type and the topology description.

Pure functions over NodeFacts, one per check; each returns one-line problems (empty: pass).
They compare what the plugin *says* on a node (probe) with what Ray *shows* for it
(ray.nodes()), so they hold on suite-started nodes and on a --ray-address cluster alike.
"""
from __future__ import annotations

from typing import Any

from conformance.areas.topology.description import described_value
from conformance.areas.topology.facts import NodeFacts
from conformance.areas.topology.selectors import TYPE_KEY
from conformance.catalog.labels import Vocabulary, plugin_label_problems

DOMAIN_KINDS = ("interconnect", "slice", "rack")   # zone is the platform's (RAY_NODE_ZONE), not the plugin's


def _plugin_labels(node: NodeFacts) -> dict[str, Any]:
    return dict(node.plugin_labels) if isinstance(node.plugin_labels, dict) else {}


def type_label_problems(node: NodeFacts, expected_type: str) -> list[str]:
    """TL-001: the type label is on exactly the nodes with devices, and is the manager's type."""
    label = node.ray_labels.get(TYPE_KEY)
    if node.has_devices:
        want = node.manager_type or expected_type
        problems = []
        if label != want:
            problems.append(f"carries {TYPE_KEY}={label!r}; the manager reports type {want!r} on this node")
        if node.manager_type is not None and node.manager_type != expected_type:
            problems.append(f"the manager reports type {node.manager_type!r}; the manifest expects {expected_type!r}")
        return problems
    problems = []
    if label is not None and label == (node.manager_type or expected_type):
        problems.append(f"has no devices of the accelerator but carries {TYPE_KEY}={label!r}")
    if TYPE_KEY in _plugin_labels(node):
        problems.append(f"the plugin returns {TYPE_KEY}={_plugin_labels(node)[TYPE_KEY]!r} on a node without devices")
    return problems


def validity_problems(node: NodeFacts, vocabulary: Vocabulary) -> tuple[list[str], list[str]]:
    """TL-002: every label the plugin returns is valid (Ray's rules plus the vocabulary)."""
    if node.plugin_labels_error:
        return [f"get_current_node_accelerator_labels() failed: {node.plugin_labels_error}"], []
    return plugin_label_problems(node.plugin_labels, vocabulary)


def applied_problems(node: NodeFacts) -> list[str]:
    """TL-003: every label the plugin returns on the node is one of the node's Ray labels."""
    problems = []
    for key, value in _plugin_labels(node).items():
        have = node.ray_labels.get(key)
        if have != value:
            problems.append(f"the plugin returns {key}={value!r} here but the node's Ray label is "
                            f"{'absent' if have is None else repr(have)}")
    return problems


def agreement_problems(node: NodeFacts, vocabulary: Vocabulary) -> list[str]:
    """TL-007: every vocabulary label (Ray's or the plugin's) equals what the description says."""
    problems: list[str] = []
    sources = (("label", node.ray_labels), ("plugin label", _plugin_labels(node)))
    seen: set[tuple[str, str]] = set()
    for what, labels in sources:
        for key, value in labels.items():
            entry = vocabulary.lookup(key)
            if entry is None or entry.describes is None or (key, str(value)) in seen:
                continue
            seen.add((key, str(value)))
            if node.described:
                want = described_value(node.description, entry.describes)
                if want is None:
                    problems.append(f"{what} {key}={value!r} but the description has no {entry.describes}")
                elif str(value) != want:
                    problems.append(f"{what} {key}={value!r} but the description says {entry.describes}={want!r}")
            elif not node.has_devices and entry.describes == "device_count" and str(value) != "0":
                problems.append(f"{what} {key}={value!r} on a node without devices")
    return problems


def publication_problems(node: NodeFacts, vocabulary: Vocabulary) -> list[str]:
    """TL-008: every domain the description names is published as a label users can select."""
    if not node.described:
        return []
    problems = []
    for kind in DOMAIN_KINDS:
        value = described_value(node.description, f"domains.{kind}")
        if value is None:
            continue
        keys = vocabulary.keys_describing(f"domains.{kind}")
        if not any(node.ray_labels.get(k) == value for k in keys):
            problems.append(f"describes {kind} domain {value!r} but carries none of {keys} with that value")
    return problems
