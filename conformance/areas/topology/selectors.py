"""Ray's label-selector semantics, and the labels a node *should* carry.

`matches` mirrors Ray 2.60's documented selector operators: "v" (equals), "!v" (not equals),
"in(a,b)" and "!in(a,b)". Negative operators match nodes that lack the key (Ray's
test_label_scheduling relies on this). Several keys are ANDed.

`truth_labels` is the ground truth the placement checks judge against: the labels a node
would carry if the plugin's labels were exactly right, built from Ray's resources (does the
node have devices?), the manager's type on that node, and the plugin's own topology
description. Keys the suite cannot judge keep the node's actual label.
"""
from __future__ import annotations

from typing import Mapping, Sequence

from conformance.areas.topology.description import described_value
from conformance.areas.topology.facts import NodeFacts
from conformance.catalog.labels import Vocabulary

NODE_ID_KEY = "ray.io/node-id"
TYPE_KEY = "ray.io/accelerator-type"


def parse_value(selector_value: str) -> tuple[bool, list[str]]:
    """'!in(a, b)' -> (True, ['a', 'b']); 'v' -> (False, ['v'])."""
    negated = selector_value.startswith("!")
    rest = selector_value[1:] if negated else selector_value
    if rest.startswith("in(") and rest.endswith(")"):
        return negated, [v.strip() for v in rest[3:-1].split(",")]
    return negated, [rest]


def matches(selector: Mapping[str, str], labels: Mapping[str, str]) -> bool:
    for key, raw in selector.items():
        negated, values = parse_value(raw)
        present = key in labels and labels[key] in values
        if present == negated:
            return False
    return True


def first_matching(chain: Sequence[Mapping[str, str]], nodes: Mapping[str, Mapping[str, str]]) -> tuple[int | None, set[str]]:
    """Fallback semantics: the first selector in the chain that some node matches, and its nodes."""
    for i, sel in enumerate(chain):
        hit = {n for n, labels in nodes.items() if matches(sel, labels)}
        if hit:
            return i, hit
    return None, set()


def truth_labels(node: NodeFacts, vocabulary: Vocabulary, fallback_type: str | None) -> dict[str, str]:
    truth = dict(node.ray_labels)
    truth[NODE_ID_KEY] = node.node_id
    count = str(len(node.ray_ids)) if node.ray_ids is not None else str(int(node.device_count))
    for entry in vocabulary.keys:
        field = entry.describes
        if field == "accelerator_type":
            ours = node.manager_type or fallback_type
            if node.has_devices:
                value = ours
            elif node.ray_labels.get(entry.key) not in (None, ours):
                continue  # another accelerator family's node (e.g. GPUs): not ours to judge
            else:
                value = None
        elif field == "device_count":
            value = count if node.has_devices else None
        elif field and node.described:
            value = described_value(node.description, field)
        else:
            continue
        if value is None:
            truth.pop(entry.key, None)
        else:
            truth[entry.key] = value
    return truth


def selector_text(selector: Mapping[str, str]) -> str:
    return ", ".join(f"{k}={v}" for k, v in selector.items())
