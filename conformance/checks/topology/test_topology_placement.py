"""Topology area, placement: label selectors on the plugin's labels, judged against the truth.

Ray's scheduler decides from the labels; these checks ask whether the result is right for the
hardware: every task and actor must land on a node whose *truth labels* (its devices, the
manager's type there, the plugin's own description) match its selector. So they catch a
plugin whose labels claim a type or domain the node does not have, as its users would meet it.
Tasks hold no devices (num_cpus=0, no resources), so only the labels steer them.
"""
from __future__ import annotations

import uuid
from typing import Any

import pytest

from conformance.areas.topology.placement import SelectorProbe, run_selector_probes
from conformance.areas.topology.pytest_support import TopologyCtx
from conformance.areas.topology.selectors import NODE_ID_KEY, TYPE_KEY, matches
from conformance.run.fixtures import not_applicable

pytestmark = pytest.mark.cluster("shared")
MAX_ACTORS = 3  # knob: sample size of the placement probes
MAX_SPREAD = 16  # knob: SPREAD tasks per selector; the pinned ones already cover every node


def spread(ctx: TopologyCtx) -> int:
    return min(2 * len(ctx.facts), MAX_SPREAD)


def absent_value(tag: str) -> str:
    """A label value no node carries (random, so no real cluster can match it by accident)."""
    return f"conformance-absent-{tag}-{uuid.uuid4().hex[:8]}"


def _with_actors(probes: list[SelectorProbe], n: int = MAX_ACTORS) -> list[SelectorProbe]:
    for p in probes[:n]:
        p.actor = True
    return probes


def _run(ctx: TopologyCtx, probes: list[SelectorProbe], metrics: dict[str, Any], what: str) -> None:
    """Run the probes with the check's waits (its run_timeout_s, stretched by how slowly this host
    starts Ray's workers: the check's budget; and pending_wait_s); fail on any violation."""
    with ctx.budget.ray_window("the probes' tasks and actors to start", param="run_timeout_s") as run_timeout:
        metrics["run_timeout_s"] = round(run_timeout, 1)
        result = run_selector_probes(probes, ctx.labels(), ctx.truth(), run_timeout=run_timeout,
                                     pending_wait=float(ctx.param("pending_wait_s")))
        if result.host_pending and not result.violations:   # the labels were right; Ray did not place in time
            metrics["host_pending"] = result.host_pending
            ctx.budget.host_failed(f"{result.host_pending[0]}; Ray's machinery was too slow on this host")
    metrics["selectors"] = [p.text for p in probes]
    metrics["submitted"] = result.submitted
    metrics["placements"] = result.placements
    if result.violations:
        more = f" (+{len(result.violations) - 2} more)" if len(result.violations) > 2 else ""
        metrics["violations"] = result.violations
        raise AssertionError(f"{what}: " + " | ".join(result.violations[:2]) + more)


@pytest.mark.check("TL-009")
def test_selectors_place_only_on_matching_nodes(topology_ctx: TopologyCtx) -> None:
    n = spread(topology_ctx)
    probes = [SelectorProbe([{TYPE_KEY: topology_ctx.expected_type}], spread_tasks=n)]
    probes += [SelectorProbe([{key: value}], spread_tasks=n) for key, value in topology_ctx.published_domains()]
    topology_ctx.metrics["domains_covered"] = [f"{k}={v}" for k, v in topology_ctx.published_domains()]
    _run(topology_ctx, _with_actors(probes), topology_ctx.metrics, "a label selector placed work on the wrong node")


@pytest.mark.check("TL-010")
def test_negative_selectors_avoid_matching_nodes(topology_ctx: TopologyCtx) -> None:
    if len(topology_ctx.facts) < 2:
        not_applicable("needs at least 2 nodes (a node to avoid and one to land on); this cluster has 1")
    t = topology_ctx.expected_type
    probes = [SelectorProbe([{TYPE_KEY: f"!{t}"}]), SelectorProbe([{TYPE_KEY: f"!in({t},{absent_value('t')})"}])]
    by_key: dict[str, list[str]] = {}
    for key, value in topology_ctx.published_domains():
        by_key.setdefault(key, []).append(value)
        probes.append(SelectorProbe([{key: f"!{value}"}]))
    probes += [SelectorProbe([{key: f"!in({','.join(values)})"}]) for key, values in by_key.items()]
    _run(topology_ctx, _with_actors(probes, 2), topology_ctx.metrics, "a negative selector placed work wrongly")


@pytest.mark.check("TL-011")
def test_unmatched_selector_stays_pending(topology_ctx: TopologyCtx) -> None:
    truth = topology_ctx.truth()
    t = topology_ctx.expected_type

    def elsewhere(sel: dict[str, str]) -> dict[str, str]:
        """sel, restricted to the nodes that do *not* match it by their truth labels."""
        owners = sorted(nid for nid, lab in truth.items() if matches(sel, lab))
        return {**sel, NODE_ID_KEY: f"!in({','.join(owners)})"} if owners else dict(sel)

    probes = [SelectorProbe([{TYPE_KEY: absent_value("t")}], pinned=False),
              SelectorProbe([elsewhere({TYPE_KEY: t})], pinned=False)]
    for key in sorted({k for k, _ in topology_ctx.published_domains()}):
        probes.append(SelectorProbe([{key: absent_value("d")}], pinned=False))
    probes += [SelectorProbe([elsewhere({key: value})], pinned=False) for key, value in topology_ctx.published_domains()]
    _run(topology_ctx, _with_actors(probes, 2), topology_ctx.metrics, "a selector no node should match was placed")


@pytest.mark.check("TL-012")
def test_fallback_strategy_is_honoured(topology_ctx: TopologyCtx) -> None:
    n = spread(topology_ctx)
    probes = [SelectorProbe([{TYPE_KEY: absent_value("t")}, {TYPE_KEY: absent_value("u")},
                             {TYPE_KEY: topology_ctx.expected_type}], spread_tasks=n)]
    seen = set()
    for key, value in topology_ctx.published_domains():
        if key not in seen:
            seen.add(key)
            probes.append(SelectorProbe([{key: absent_value("d")}, {key: value}], spread_tasks=n))
    _run(topology_ctx, _with_actors(probes, 2), topology_ctx.metrics, "fallback_strategy placed work on the wrong node")


@pytest.mark.check("TL-015")
def test_in_and_multi_key_selectors(topology_ctx: TopologyCtx) -> None:
    t = topology_ctx.expected_type
    probes = [SelectorProbe([{TYPE_KEY: f"in({t},{absent_value('t')})"}], spread_tasks=spread(topology_ctx))]
    by_key: dict[str, list[str]] = {}
    for key, value in topology_ctx.published_domains():
        by_key.setdefault(key, []).append(value)
        probes.append(SelectorProbe([{TYPE_KEY: t, key: value}]))                       # both keys hold
        probes.append(SelectorProbe([{TYPE_KEY: t, key: absent_value("d")}], pinned=False))  # one does not
    probes += [SelectorProbe([{key: f"in({','.join(values)})"}]) for key, values in by_key.items()]
    if not by_key:   # no domain labels: AND the type with the node id of every node that has devices
        owners = sorted(f.node_id for f in topology_ctx.device_nodes())
        probes.append(SelectorProbe([{TYPE_KEY: t, NODE_ID_KEY: f"in({','.join(owners)})"}], pinned=False))
        probes.append(SelectorProbe([{TYPE_KEY: t, NODE_ID_KEY: absent_value("n")}], pinned=False))
    _run(topology_ctx, _with_actors(probes, 2), topology_ctx.metrics, "an in() or multi-key selector placed work wrongly")


@pytest.mark.check("TL-016")
def test_feasible_primary_selector_wins_over_fallback(topology_ctx: TopologyCtx) -> None:
    t = topology_ctx.expected_type
    n = spread(topology_ctx)
    probes = [SelectorProbe([{TYPE_KEY: t}, {TYPE_KEY: f"!{t}"}], spread_tasks=n)]
    seen = set()
    for key, value in topology_ctx.published_domains():
        if key not in seen:
            seen.add(key)
            probes.append(SelectorProbe([{key: value}, {key: f"!{value}"}], spread_tasks=n))
    _run(topology_ctx, _with_actors(probes, 2), topology_ctx.metrics, "a feasible primary selector lost to its fallback")
