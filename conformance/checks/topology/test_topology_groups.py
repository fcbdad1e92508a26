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

from conformance.areas.topology import plans
from conformance.areas.topology.evidence import FIELDS, record_nodes
from conformance.areas.topology.placement import try_group
from conformance.areas.topology.pytest_support import TopologyCtx
from conformance.areas.topology.selectors import matches, selector_text
from conformance.run.budget import HostNotReady
from conformance.run.fixtures import not_applicable


def group_wait(ctx: TopologyCtx) -> float:
    """group_timeout_s, stretched by how slowly this host starts Ray's workers and places work
    (its budget's ray_bound): a group Ray may place gets that long on a loaded host."""
    return ctx.budget.ray_bound("a group Ray may place", param="group_timeout_s")


def _record(ctx: TopologyCtx, **evidence: Any) -> None:
    ctx.metrics.update(resource=ctx.resource, nodes=record_nodes(ctx.facts, FIELDS), **evidence)


def _host_pending(ctx: TopologyCtx, pending: list[str]) -> None:
    """A group the labels and the description agree Ray can place, not placed: the host's
    failure (HostNotReady), never the plugin's; the judge says the same of the record."""
    if pending and ctx.verdict().outcome != "fail":
        ctx.metrics["host_pending"] = pending
        raise HostNotReady(pending[0])


@pytest.mark.check("TL-013")
def test_bundle_label_selector_lands_on_matching_nodes(topology_ctx: TopologyCtx) -> None:
    group_timeout_s, pending_wait_s = group_wait(topology_ctx), float(topology_ctx.param("pending_wait_s"))
    labels, truth = topology_ctx.labels(), topology_ctx.truth()
    groups: list[dict[str, Any]] = []
    for sel, k, agree in plans.bundle_plan(topology_ctx.facts, topology_ctx.expected_type,
                                           topology_ctx.published_domains(), labels, truth):
        text = selector_text(sel)
        by_labels = sum(1 for f in topology_ctx.device_nodes() if matches(sel, labels[f.node_id]))
        wait = group_timeout_s if by_labels >= k else pending_wait_s  # labels say it cannot place
        # labels and description agree the group can place: Ray's machinery alone decides when
        # (the release's bound, stretched by the host's measured worker start: try_group's host_wait)
        wait = float(topology_ctx.param("group_timeout_s")) if agree else wait
        record: dict[str, Any] = {"selector": sel, "bundles": k, "wait_s": round(wait, 1)}
        try:
            ready, nodes = try_group(topology_ctx.budget, [{topology_ctx.resource: 1}] * k, wait,
                                     host_wait=f"{k} one-device bundles selecting {text}" if agree else None,
                                     strategy="STRICT_SPREAD", bundle_label_selector=[sel] * k)
            record.update(ready=ready, on=[x[:8] for x in nodes])
        except HostNotReady as exc:
            record["host_pending"] = str(exc)
        groups.append(record)
    _record(topology_ctx, groups=groups)
    _host_pending(topology_ctx, [g["host_pending"] for g in groups if "host_pending" in g])
    topology_ctx.decide()


@pytest.mark.check("TL-014")
def test_topology_packing_keeps_groups_in_one_domain(topology_ctx: TopologyCtx) -> None:
    from ray.util.placement_group import placement_group

    if "topology_strategy" not in inspect.signature(placement_group).parameters:
        not_applicable("this Ray has no placement_group(topology_strategy=...); see docs/topology.md")
    group_timeout_s, pending_wait_s = group_wait(topology_ctx), float(topology_ctx.param("pending_wait_s"))
    key = plans.packing_key(topology_ctx.facts, topology_ctx.vocabulary)
    if key is None:
        not_applicable("no node with devices carries an interconnect or slice domain label "
                       f"({', '.join(e.key for e in topology_ctx.vocabulary.packing_keys())})")
    labels, truth = topology_ctx.labels(), topology_ctx.truth()
    capacity = plans.capacity(topology_ctx.facts, truth, key)
    if not capacity:   # nothing to pack into: the judge fails the record
        _record(topology_ctx, key=key, capacity_by_domain=capacity, packed=None, oversize=None)
        topology_ctx.decide()
    strategy = {key: "STRICT_PACK"}
    k = min(2, max(capacity.values()))
    # labels and description agree on every device node's domain: Ray's machinery alone decides when
    agree = all(labels[f.node_id].get(key) == truth[f.node_id].get(key) for f in topology_ctx.device_nodes())
    packed: dict[str, Any] = {"devices": k}
    try:
        ready, nodes = try_group(topology_ctx.budget, [{topology_ctx.resource: 1}] * k,
                                 float(topology_ctx.param("group_timeout_s")) if agree else group_timeout_s,
                                 host_wait=f"a {k}-device group with topology_strategy={strategy}" if agree else None,
                                 topology_strategy=strategy)
        packed.update(ready=ready, on=[n[:8] for n in nodes])
    except HostNotReady as exc:
        packed["host_pending"] = str(exc)   # not judged: the host's (after the plugin's own problems)
    big, total = max(capacity.values()) + 1, sum(capacity.values())
    oversize: dict[str, Any] | None = None
    if big <= total:
        by_label = plans.capacity(topology_ctx.facts, labels, key)
        # If the labels make one domain big enough, Ray may place it: give it the full time to
        # show that; otherwise Ray cannot, and a short wait only guards against a Ray bug.
        wait = group_timeout_s if max(by_label.values(), default=0) >= big else pending_wait_s
        ready, nodes = try_group(topology_ctx.budget, [{topology_ctx.resource: 1}] * big, wait, topology_strategy=strategy)
        oversize = {"devices": big, "placed": ready, "on": [n[:8] for n in nodes], "capacity_by_label": by_label,
                    "wait_s": round(wait, 1)}
    _record(topology_ctx, key=key, capacity_by_domain=capacity, packed=packed, oversize=oversize)
    _host_pending(topology_ctx, [packed["host_pending"]] if "host_pending" in packed else [])
    topology_ctx.decide()


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
    selectors = plans.unplaced_selectors(topology_ctx.expected_type, topology_ctx.truth(), plans.absent_value)
    reports = unplaced_group_reports([{"CPU": 0.01}], [[sel] for sel in selectors],
                                     float(topology_ctx.param("pending_wait_s")))
    reported = [{"selector": sel, "ready": ready, "on": [n[:8] for n in nodes], "state": table.get("state"),
                 "scheduling_state": (table.get("stats") or {}).get("scheduling_state")}
                for sel, (ready, table, nodes) in zip(selectors, reports)]
    _record(topology_ctx, reported=reported)
    topology_ctx.decide()
