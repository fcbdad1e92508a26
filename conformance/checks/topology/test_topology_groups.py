"""Topology area, placement groups: bundle_label_selector and topology-aware packing.

Bundles hold one device each. Where they land is read from placement_group_table and judged
against the nodes' truth labels (their devices and the plugin's description), so a plugin
whose domain labels lie fails here the way a gang-scheduled job would see it.

Packing uses Ray 2.60's placement_group(topology_strategy={<domain key>: "STRICT_PACK"}):
all bundles in one value of the domain label. A group larger than any domain (by the
description) must stay pending rather than be split across domains.
"""
from __future__ import annotations

import inspect
from typing import Any

import pytest

from conformance.areas.topology.placement import try_group
from conformance.areas.topology.pytest_support import TopologyCtx
from conformance.areas.topology.selectors import TYPE_KEY, matches, selector_text
from conformance.run.budget import HostNotReady
from conformance.run.fixtures import not_applicable

pytestmark = pytest.mark.cluster("shared")


def _fail(problems: list[str], what: str, metrics: dict[str, Any]) -> None:
    metrics["problems"] = problems
    if problems:
        more = f" (+{len(problems) - 2} more)" if len(problems) > 2 else ""
        raise AssertionError(f"{what}: " + " | ".join(problems[:2]) + more)



def _judged(problems: list[str], what: str, metrics: dict[str, Any], host_pending: list[str]) -> None:
    """Fail on the plugin's problems first; else, when a group the labels and the description
    agree Ray can place was not placed, the host's failure (HostNotReady), never the plugin's."""
    _fail(problems, what, metrics)
    if host_pending:
        metrics["host_pending"] = host_pending
        raise HostNotReady(host_pending[0])


def group_wait(ctx: TopologyCtx) -> float:
    """group_timeout_s, stretched by how slowly this host starts Ray's workers and places work
    (its budget's ray_bound): a group Ray may place gets that long on a loaded host."""
    return ctx.budget.ray_bound("a group Ray may place", param="group_timeout_s")

@pytest.mark.check("TL-013")
def test_bundle_label_selector_lands_on_matching_nodes(topology_ctx: TopologyCtx) -> None:
    group_timeout_s, pending_wait_s = group_wait(topology_ctx), float(topology_ctx.param("pending_wait_s"))
    labels, truth = topology_ctx.labels(), topology_ctx.truth()
    devices = {f.node_id: f for f in topology_ctx.device_nodes()}
    selectors = [{TYPE_KEY: topology_ctx.expected_type}] + [{k: v} for k, v in topology_ctx.published_domains()]
    problems: list[str] = []
    host_pending: list[str] = []
    placed: dict[str, list[str]] = {}
    for sel in selectors:
        by_labels = {n for n in devices if matches(sel, labels[n])}
        by_truth = {n for n in devices if matches(sel, truth[n])}
        k = max(len(by_labels), len(by_truth))
        if k == 0:
            continue  # a domain only nodes without devices carry: no device bundle can select it
        text = selector_text(sel)
        # labels and description agree the group can place: Ray's machinery alone decides when
        agree = by_labels == by_truth
        wait = group_timeout_s if len(by_labels) >= k else pending_wait_s  # labels say it cannot place
        try:
            ready, nodes = try_group([{topology_ctx.resource: 1}] * k,
                                     float(topology_ctx.param("group_timeout_s")) if agree else wait,
                                     host_wait=f"{k} one-device bundles selecting {text}" if agree else None,
                                     strategy="STRICT_SPREAD", bundle_label_selector=[sel] * k)
        except HostNotReady as exc:
            host_pending.append(str(exc))
            continue
        if not ready:
            problems.append(f"{k} one-device bundles selecting {text} (one per matching node) did not place within "
                            f"{wait:.0f}s; nodes matching by labels: {sorted(x[:8] for x in by_labels)}, "
                            f"by devices and description: {sorted(x[:8] for x in by_truth)}")
            continue
        placed[text] = [x[:8] for x in nodes]
        for node in nodes:
            if not matches(sel, labels[node]):
                problems.append(f"a bundle selecting {text} was placed on {node[:8]}, whose labels do not match")
            if not matches(sel, truth[node]):
                problems.append(f"a bundle selecting {text} landed on {node[:8]}, which by its description does not "
                                f"match (truth {', '.join(f'{key}={truth[node].get(key)!r}' for key in sel)})")
    topology_ctx.metrics["placed"] = placed
    _judged(problems, "bundle_label_selector placed bundles on the wrong node", topology_ctx.metrics, host_pending)


def _packing_key(ctx: TopologyCtx) -> str | None:
    for entry in ctx.vocabulary.packing_keys():
        if any(entry.key in f.ray_labels for f in ctx.device_nodes()):
            return entry.key
    return None


@pytest.mark.check("TL-014")
def test_topology_packing_keeps_groups_in_one_domain(topology_ctx: TopologyCtx) -> None:
    from ray.util.placement_group import placement_group

    if "topology_strategy" not in inspect.signature(placement_group).parameters:
        not_applicable("this Ray has no placement_group(topology_strategy=...); see docs/topology.md")
    group_timeout_s, pending_wait_s = group_wait(topology_ctx), float(topology_ctx.param("pending_wait_s"))
    key = _packing_key(topology_ctx)
    if key is None:
        not_applicable("no node with devices carries an interconnect or slice domain label "
                       f"({', '.join(e.key for e in topology_ctx.vocabulary.packing_keys())})")
    labels, truth = topology_ctx.labels(), topology_ctx.truth()
    capacity: dict[str, int] = {}
    for f in topology_ctx.device_nodes():
        value = truth[f.node_id].get(key)
        if value is not None:
            capacity[value] = capacity.get(value, 0) + int(f.device_count)
    topology_ctx.metrics.update({"key": key, "capacity_by_domain": capacity})
    if not capacity:
        _fail([f"no node with devices describes the domain its {key} label names"], "no domain to pack into",
              topology_ctx.metrics)
    problems: list[str] = []
    host_pending: list[str] = []
    strategy = {key: "STRICT_PACK"}
    k = min(2, max(capacity.values()))
    # labels and description agree on every device node's domain: Ray's machinery alone decides when
    agree = all(labels[f.node_id].get(key) == truth[f.node_id].get(key) for f in topology_ctx.device_nodes())
    try:
        ready, nodes = try_group([{topology_ctx.resource: 1}] * k,
                                 float(topology_ctx.param("group_timeout_s")) if agree else group_timeout_s,
                                 host_wait=f"a {k}-device group with topology_strategy={strategy}" if agree else None,
                                 topology_strategy=strategy)
    except HostNotReady as exc:
        host_pending.append(str(exc))
        ready, nodes = True, []     # not judged: the host's (below, after the plugin's own problems)
    if not ready:
        problems.append(f"a {k}-device group with topology_strategy={strategy} did not place within "
                        f"{group_timeout_s:.0f}s (domain capacity by description: {capacity})")
    elif nodes:
        seen_labels = {labels[n].get(key) for n in nodes}
        seen_truth = {truth[n].get(key) for n in nodes}
        topology_ctx.metrics["packed"] = {"nodes": [n[:8] for n in nodes], "labels": sorted(map(str, seen_labels)),
                                   "described": sorted(map(str, seen_truth))}
        if len(seen_labels) != 1 or len(seen_truth) != 1:
            problems.append(f"a {k}-device group with topology_strategy={strategy} spans {key} labels "
                            f"{sorted(map(str, seen_labels))} and described domains {sorted(map(str, seen_truth))}")
    big = max(capacity.values()) + 1
    total = sum(capacity.values())
    if big > total:
        topology_ctx.metrics["oversize"] = f"not run: one domain holds all {total} devices"
    else:
        by_label: dict[str, int] = {}
        for f in topology_ctx.device_nodes():
            if key in labels[f.node_id]:
                by_label[labels[f.node_id][key]] = by_label.get(labels[f.node_id][key], 0) + int(f.device_count)
        # If the labels make one domain big enough, Ray may place it: give it the full time to
        # show that; otherwise Ray cannot, and a short wait only guards against a Ray bug.
        wait = group_timeout_s if max(by_label.values(), default=0) >= big else pending_wait_s
        ready, nodes = try_group([{topology_ctx.resource: 1}] * big, wait, topology_strategy=strategy)
        topology_ctx.metrics["oversize"] = {"devices": big, "placed": ready, "capacity_by_label": by_label}
        if ready:
            problems.append(f"a {big}-device group (more than any domain holds by description: {capacity}) was "
                            f"placed with topology_strategy={strategy} across described domains "
                            f"{sorted({str(truth[n].get(key)) for n in nodes})}; it must stay pending")
    _judged(problems, "topology-aware packing split a group across domains", topology_ctx.metrics, host_pending)


def unplaced_group_reports(bundles: list[dict[str, float]], selector_sets: list[list[dict[str, str]]],
                           wait_s: float) -> list[tuple[bool, dict[str, Any], list[str]]]:
    """Create one group per selector set, all at once, whose bundles no node should take; give
    every group wait_s (they wait side by side, not one after the other), read what Ray's state
    API says about each, remove them: [(ready, the group's state entry, the bundles' nodes)]."""
    import math
    import time

    from ray.util.placement_group import placement_group, placement_group_table, remove_placement_group

    from conformance.areas.topology.placement import group_nodes

    groups = []
    try:
        for selectors in selector_sets:
            groups.append(placement_group(bundles, strategy="SPREAD", bundle_label_selector=selectors))
        deadline = time.monotonic() + wait_s    # every group exists from here on: each waits >= wait_s
        out = []
        for pg in groups:
            # whole seconds: Ray's wait_placement_group_ready truncates its timeout to an int, and a
            # 0 s wait would not even ask the GCS
            ready = pg.wait(max(math.ceil(deadline - time.monotonic()), 1))
            out.append((ready, placement_group_table(pg), group_nodes(pg) if ready else []))
        return out
    finally:
        for pg in groups:
            remove_placement_group(pg)


@pytest.mark.check("TL-017")
def test_unschedulable_bundle_selector_is_reported_pending(topology_ctx: TopologyCtx) -> None:
    from conformance.areas.topology.selectors import NODE_ID_KEY

    truth = topology_ctx.truth()
    wait_s = float(topology_ctx.param("pending_wait_s"))
    accepted = set(topology_ctx.param("unplaced_states"))
    t = topology_ctx.expected_type
    owners = sorted(n for n, lab in truth.items() if matches({TYPE_KEY: t}, lab))
    selectors = [{TYPE_KEY: f"conformance-absent-{t}"}]
    if owners:   # the type, restricted to the nodes that by their devices and description lack it
        selectors.append({TYPE_KEY: t, NODE_ID_KEY: f"!in({','.join(owners)})"})
    problems: list[str] = []
    seen: dict[str, Any] = {}
    reports = unplaced_group_reports([{"CPU": 0.01}], [[sel] for sel in selectors], wait_s)
    for sel, (ready, table, nodes) in zip(selectors, reports):
        text = selector_text(sel)
        state = table.get("state")
        sched = (table.get("stats") or {}).get("scheduling_state")
        seen[text] = {"state": state, "scheduling_state": sched}
        if ready:
            problems.append(f"a bundle selecting {text} was placed on {[n[:8] for n in nodes]}, although by their "
                            "devices and description no node matches it")
        elif state != "PENDING" or (sched is not None and sched not in accepted):
            problems.append(f"a group whose bundle selects {text} (no node matches) is reported by "
                            f"placement_group_table as state={state!r}, scheduling_state={sched!r}; expected "
                            f"PENDING and one of {sorted(accepted)}")
    topology_ctx.metrics["reported"] = seen
    _fail(problems, "an unschedulable bundle_label_selector", topology_ctx.metrics)
