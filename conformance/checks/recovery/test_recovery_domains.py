"""Recovery area, domains: a node of the topology domain a packed placement group was placed in
dies; the lost bundle waits for its domain (never lands outside it) and is placed again there once
the node rejoins (FR-019).

Runs on the cluster of shape "recovery-nodes", as test_recovery_nodes does: it
kills a node of the domain its group was packed into, and brings it back itself.

Which nodes (issue 48): the domain is the one Ray packed the group into on the node shape, the
victim a node of it the fault driver may kill (never the head); it is not one scenario per
failure domain (metrics.node_scope, as the node scenarios of test_recovery_nodes).
"""
from __future__ import annotations

import inspect
import time
from typing import TYPE_CHECKING, Any

import pytest

if TYPE_CHECKING:
    from ray.util.placement_group import PlacementGroup

from conformance.areas.recovery import domains, groups
from conformance.areas.recovery.context import NodeRecoveryCtx
from conformance.areas.recovery.devices import kill_quietly, remove_group_quietly
from conformance.areas.recovery.losses import lose_node, node_labels_of
from conformance.areas.recovery.nodes import fill, rejoined
from conformance.catalog.labels import load_vocabulary
from conformance.run.budget import Scenario
from conformance.run.fixtures import not_applicable


@pytest.mark.check("FR-019")
def test_packed_group_waits_for_its_domain_when_a_node_dies(recovery_ctx: NodeRecoveryCtx) -> None:
    nc = recovery_ctx
    lab = nc.lab
    from ray.util.placement_group import placement_group

    if "topology_strategy" not in inspect.signature(placement_group).parameters:
        not_applicable("this Ray has no placement_group(topology_strategy=...) (Ray 2.57+): no topology-aware packing")
    keys = [k.key for k in load_vocabulary().packing_keys()]
    layout = domains.layout_of(lab.alive(), lab.resource, keys)
    why = domains.why_not_applicable(layout, keys)
    if why:
        not_applicable(why)
    key = str(domains.packing_key(layout, keys))
    nc.metrics.update(key=key, layout=layout)
    blockers: list[Any] = []
    pg = None
    with nc.timed("pack-in-one-domain-lose-a-node-rejoin", nc.bound()) as clock:
        try:
            roles = {n["NodeID"]: role for role, n in lab.alive().items()}
            pg = placement_group([{lab.resource: 1}] * domains.BUNDLES, topology_strategy=domains.strategy(key))
            # by the labels two nodes with free devices share a value: the placement is Ray's machinery
            nc.budget.started(clock, pg.ready(), "the packed group to be created", param="actor_ready_s")
            where = groups.bundle_nodes(groups.table(pg), set(roles))
            placed = {i: roles[n] for i, n in where.items()}
            nc.metrics["placed"] = {str(i): r for i, r in sorted(placed.items())}
            plan = domains.plan_after_placement(layout, key, placed)
            if isinstance(plan, str):
                nc.judge_now(clock)
                raise clock.fail(plan)
            nc.metrics.update(victim=plan.victim, lost=plan.lost, domain=plan.domain, filled=list(plan.filled),
                              outside=list(plan.outside))
            # the domain keeps no room: the lost bundle can only wait for it
            blockers += fill(clock, [lab.dev(role) for role in plan.filled], f"nodes {', '.join(plan.filled)}",
                             nc.param("actor_ready_s"), nc.budget.machinery)
            victim = lose_node(nc, clock, plan.victim, devices_key="victim_devices")
            nc.metrics["window"] = domain_window(nc, clock, pg, plan.lost, key)
            nc.judge_now(clock, final=False)
            node, _ = rejoined(nc.budget, clock, lab, plan.victim)   # Ray's, left out of the scenario's bound
            labels = node.get("Labels") or {}
            nc.metrics["rejoined"] = {"new_node": node["NodeID"] != victim.node_id,
                                      "devices": float((node.get("Resources") or {}).get(lab.resource, 0.0)),
                                      "domains": {k: str(labels[k]) for k in keys if k in labels}}
            nc.judge_now(clock, final=False)
            # the rejoined node carries the group's value and has room: Ray's machinery places the bundle
            tab = groups.await_ray(nc.budget, clock, lambda: placed_whole(pg), "the lost bundle to be placed again "
                                   f"in {key}={plan.domain}", "pg_reschedule_s")
            where = groups.bundle_nodes(tab, groups.alive_ids())
            nc.metrics["after"] = {"state": tab.get("state"),
                                   "placed": {str(i): lab.role_of(n) for i, n in sorted(where.items())},
                                   "domains": {str(i): node_labels_of(n).get(key) for i, n in sorted(where.items())}}
            nc.judge_now(clock)
        finally:
            kill_quietly(blockers)
            remove_group_quietly(pg)
    nc.decide()


def domain_window(nc: NodeRecoveryCtx, clock: Scenario, pg: PlacementGroup, lost: int, key: str) -> dict[str, Any]:
    """Watch the group for pending_window_s after its node died: its domain has no room, nodes of
    other values (or none) have; where the lost bundle went, if anywhere, and the states seen."""
    states: set[str] = set()
    window: dict[str, Any] = {"lost_on": None, "lost_on_domain": None}
    start = clock.elapsed()
    while clock.elapsed() - start < nc.param("pending_window_s"):
        tab = groups.table(pg)
        states.add(str(tab.get("state")))
        where = groups.bundle_nodes(tab, groups.alive_ids())
        if lost in where:
            window.update(lost_on=nc.lab.role_of(where[lost]), lost_on_domain=node_labels_of(where[lost]).get(key))
            break
        time.sleep(0.2)  # knob: polling slice of the window
    window.update(watched_s=round(clock.elapsed() - start, 3), states=sorted(states))
    return window


def placed_whole(pg: PlacementGroup) -> dict[str, Any] | None:
    """The group's table once it is CREATED with every bundle on a live node."""
    tab = groups.table(pg)
    where = groups.bundle_nodes(tab, groups.alive_ids())
    return tab if tab.get("state") == "CREATED" and len(where) == len(tab.get("bundles") or where) else None
