"""Which selectors each placement check submits on a given cluster (its plan), pure.

The live check builds its probes here from the nodes' facts; its judge builds them again from
the facts the check recorded and holds the recorded probes to them, so a report cannot drop a
selector the check's contract asks for (a published domain, the type) or a node's pinned task.
Values no node carries are random in a run (`absent`); the judge compares them in their
canonical form (`canonical`).
"""
from __future__ import annotations

import re
from typing import Any, Callable, Mapping, Sequence

from conformance.areas.topology.facts import NodeFacts
from conformance.areas.topology.placement import SelectorProbe
from conformance.areas.topology.selectors import NODE_ID_KEY, TYPE_KEY, matches
from conformance.catalog.labels import Vocabulary, ray_label_problem

MAX_ACTORS = 3  # knob: sample size of the placement probes
MAX_SPREAD = 16  # knob: SPREAD tasks per selector; the pinned ones already cover every node
ABSENT_PREFIX = "conformance-absent-"
_ABSENT = re.compile(r"conformance-absent-([a-z])-[0-9a-f]{8}")

Absent = Callable[[str], str]
Truth = Mapping[str, Mapping[str, str]]


def absent_value(tag: str) -> str:
    """A label value no node carries (random, so no real cluster can match it by accident)."""
    import uuid

    return f"{ABSENT_PREFIX}{tag}-{uuid.uuid4().hex[:8]}"


def canonical(value: str) -> str:
    """A selector value with its random absent values in their canonical form."""
    return _ABSENT.sub(lambda mo: f"{ABSENT_PREFIX}{mo.group(1)}", value)


def published_domains(facts: Sequence[NodeFacts], vocabulary: Vocabulary) -> list[tuple[str, str]]:
    """(key, value) of every domain label on a node, vocabulary order. Values Ray's label rules
    refuse are left out: TL-002 reports them, and no selector can name them."""
    out = []
    for entry in vocabulary.domain_keys():
        for value in sorted({f.ray_labels[entry.key] for f in facts if entry.key in f.ray_labels}):
            if ray_label_problem(entry.key, value) is None:
                out.append((entry.key, value))
    return out


def spread(facts: Sequence[NodeFacts]) -> int:
    return min(2 * len(facts), MAX_SPREAD)


def _with_actors(probes: list[SelectorProbe], n: int = MAX_ACTORS) -> list[SelectorProbe]:
    for p in probes[:n]:
        p.actor = True
    return probes


def tl009(facts: Sequence[NodeFacts], t: str, domains: list[tuple[str, str]], truth: Truth,
          absent: Absent) -> list[SelectorProbe]:
    n = spread(facts)
    probes = [SelectorProbe([{TYPE_KEY: t}], spread_tasks=n)]
    probes += [SelectorProbe([{key: value}], spread_tasks=n) for key, value in domains]
    return _with_actors(probes)


def tl010(facts: Sequence[NodeFacts], t: str, domains: list[tuple[str, str]], truth: Truth,
          absent: Absent) -> list[SelectorProbe]:
    probes = [SelectorProbe([{TYPE_KEY: f"!{t}"}]), SelectorProbe([{TYPE_KEY: f"!in({t},{absent('t')})"}])]
    by_key: dict[str, list[str]] = {}
    for key, value in domains:
        by_key.setdefault(key, []).append(value)
        probes.append(SelectorProbe([{key: f"!{value}"}]))
    probes += [SelectorProbe([{key: f"!in({','.join(values)})"}]) for key, values in by_key.items()]
    return _with_actors(probes, 2)


def tl011(facts: Sequence[NodeFacts], t: str, domains: list[tuple[str, str]], truth: Truth,
          absent: Absent) -> list[SelectorProbe]:
    def elsewhere(sel: dict[str, str]) -> dict[str, str]:
        """sel, restricted to the nodes that do *not* match it by their truth labels."""
        owners = sorted(nid for nid, lab in truth.items() if matches(sel, lab))
        return {**sel, NODE_ID_KEY: f"!in({','.join(owners)})"} if owners else dict(sel)

    probes = [SelectorProbe([{TYPE_KEY: absent("t")}], pinned=False),
              SelectorProbe([elsewhere({TYPE_KEY: t})], pinned=False)]
    for key in sorted({k for k, _ in domains}):
        probes.append(SelectorProbe([{key: absent("d")}], pinned=False))
    probes += [SelectorProbe([elsewhere({key: value})], pinned=False) for key, value in domains]
    return _with_actors(probes, 2)


def tl012(facts: Sequence[NodeFacts], t: str, domains: list[tuple[str, str]], truth: Truth,
          absent: Absent) -> list[SelectorProbe]:
    n = spread(facts)
    probes = [SelectorProbe([{TYPE_KEY: absent("t")}, {TYPE_KEY: absent("u")}, {TYPE_KEY: t}], spread_tasks=n)]
    seen = set()
    for key, value in domains:
        if key not in seen:
            seen.add(key)
            probes.append(SelectorProbe([{key: absent("d")}, {key: value}], spread_tasks=n))
    return _with_actors(probes, 2)


def tl015(facts: Sequence[NodeFacts], t: str, domains: list[tuple[str, str]], truth: Truth,
          absent: Absent) -> list[SelectorProbe]:
    probes = [SelectorProbe([{TYPE_KEY: f"in({t},{absent('t')})"}], spread_tasks=spread(facts))]
    by_key: dict[str, list[str]] = {}
    for key, value in domains:
        by_key.setdefault(key, []).append(value)
        probes.append(SelectorProbe([{TYPE_KEY: t, key: value}]))                       # both keys hold
        probes.append(SelectorProbe([{TYPE_KEY: t, key: absent("d")}], pinned=False))  # one does not
    probes += [SelectorProbe([{key: f"in({','.join(values)})"}]) for key, values in by_key.items()]
    if not by_key:   # no domain labels: AND the type with the node id of every node that has devices
        owners = sorted(f.node_id for f in facts if f.has_devices)
        probes.append(SelectorProbe([{TYPE_KEY: t, NODE_ID_KEY: f"in({','.join(owners)})"}], pinned=False))
        probes.append(SelectorProbe([{TYPE_KEY: t, NODE_ID_KEY: absent("n")}], pinned=False))
    return _with_actors(probes, 2)


def tl016(facts: Sequence[NodeFacts], t: str, domains: list[tuple[str, str]], truth: Truth,
          absent: Absent) -> list[SelectorProbe]:
    n = spread(facts)
    probes = [SelectorProbe([{TYPE_KEY: t}, {TYPE_KEY: f"!{t}"}], spread_tasks=n)]
    seen = set()
    for key, value in domains:
        if key not in seen:
            seen.add(key)
            probes.append(SelectorProbe([{key: value}, {key: f"!{value}"}], spread_tasks=n))
    return _with_actors(probes, 2)


PLANS: dict[str, Callable[..., list[SelectorProbe]]] = {
    "TL-009": tl009, "TL-010": tl010, "TL-011": tl011, "TL-012": tl012, "TL-015": tl015, "TL-016": tl016}


def probe_record(p: SelectorProbe, runs: list[dict[str, Any]]) -> dict[str, Any]:
    """One probe as evidence: its selector chain, how it was submitted, what became of each run."""
    return {"chain": [dict(s) for s in p.chain], "spread": p.spread_tasks, "actor": p.actor, "pinned": p.pinned,
            "runs": runs}


def shape(p: SelectorProbe) -> tuple[Any, ...]:
    """What a probe is, with its absent values canonical (the judge compares plans by it)."""
    return (tuple(tuple(sorted((k, canonical(v)) for k, v in s.items())) for s in p.chain),
            p.spread_tasks, p.actor, p.pinned)


def bundle_plan(facts: Sequence[NodeFacts], t: str, domains: list[tuple[str, str]],
                labels: Truth, truth: Truth) -> list[tuple[dict[str, str], int, bool]]:
    """TL-013's groups: (selector, one-device bundles, whether labels and description agree on the
    nodes it matches) for the type and every published domain that some node with devices matches
    by its labels or its description; one bundle per such node."""
    devices = [f.node_id for f in facts if f.has_devices]
    out = []
    for sel in [{TYPE_KEY: t}] + [{k: v} for k, v in domains]:
        by_labels = {n for n in devices if matches(sel, labels[n])}
        by_truth = {n for n in devices if matches(sel, truth[n])}
        k = max(len(by_labels), len(by_truth))
        if k:   # a domain only nodes without devices carry: no device bundle can select it
            out.append((sel, k, by_labels == by_truth))
    return out


def packing_key(facts: Sequence[NodeFacts], vocabulary: Vocabulary) -> str | None:
    """TL-014's domain key: the first packing key of the vocabulary a node with devices carries."""
    for entry in vocabulary.packing_keys():
        if any(entry.key in f.ray_labels for f in facts if f.has_devices):
            return entry.key
    return None


def capacity(facts: Sequence[NodeFacts], by: Truth, key: str) -> dict[str, int]:
    """Devices per value of `key` among the nodes with devices, by their labels or their truth."""
    out: dict[str, int] = {}
    for f in facts:
        value = by[f.node_id].get(key) if f.has_devices else None
        if value is not None:
            out[value] = out.get(value, 0) + int(f.device_count)
    return out


def unplaced_selectors(t: str, truth: Truth, absent: Absent) -> list[dict[str, str]]:
    """TL-017's bundle selectors no node should match: an absent type, and the type restricted to
    the nodes that by their devices and description lack it."""
    owners = sorted(n for n, lab in truth.items() if matches({TYPE_KEY: t}, lab))
    selectors = [{TYPE_KEY: absent("t")}]
    if owners:
        selectors.append({TYPE_KEY: t, NODE_ID_KEY: f"!in({','.join(owners)})"})
    return selectors


def selector_shape(sel: Mapping[str, str]) -> tuple[tuple[str, str], ...]:
    return tuple(sorted((str(k), canonical(str(v))) for k, v in sel.items()))
