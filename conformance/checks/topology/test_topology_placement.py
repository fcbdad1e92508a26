"""Topology area, placement: label selectors on the plugin's labels, judged against the truth.

Ray's scheduler decides from the labels; these checks ask whether the result is right for the
hardware: every task and actor must land on a node whose *truth labels* (its devices, the
manager's type there, the plugin's own description) match its selector. So they catch a
plugin whose labels claim a type or domain the node does not have, as its users would meet it.
Tasks hold no devices (num_cpus=0, no resources), so only the labels steer them.

Each check records the nodes' facts, the selectors it submitted (its plan:
conformance.areas.topology.plans) and where every submission ran; its judge decides from that
record, live and in `verify` alike.
"""
from __future__ import annotations

import pytest

from conformance.areas.topology.evidence import FIELDS, record_nodes
from conformance.areas.topology.placement import run_selector_probes
from conformance.areas.topology.plans import PLANS, absent_value, probe_record
from conformance.areas.topology.pytest_support import TopologyCtx
from conformance.run.fixtures import not_applicable


def _run(ctx: TopologyCtx) -> None:
    """Run the check's probes with its waits (its run_timeout_s, stretched by how slowly this host
    starts Ray's workers: the check's budget; and pending_wait_s), record them and where each ran,
    and decide by the check's judge."""
    truth = ctx.truth()
    probes = PLANS[ctx.check_id](ctx.facts, ctx.expected_type, ctx.published_domains(), truth, absent_value)
    metrics = ctx.metrics
    with ctx.budget.ray_window("the probes' tasks and actors to start", param="run_timeout_s") as run_timeout:
        metrics["run_timeout_s"] = round(run_timeout, 1)
        result = run_selector_probes(probes, ctx.labels(), truth, run_timeout=run_timeout,
                                     pending_wait=float(ctx.param("pending_wait_s")))
        metrics.update(resource=ctx.resource, nodes=record_nodes(ctx.facts, FIELDS), submitted=result.submitted,
                       probes=[probe_record(p, runs) for p, runs in zip(probes, result.runs)])
        if result.host_pending and not result.violations:   # the labels were right; Ray did not place in time
            metrics["host_pending"] = result.host_pending
            ctx.budget.host_failed(f"{result.host_pending[0]}; Ray's machinery was too slow on this host")
    ctx.decide()


@pytest.mark.check("TL-009")
def test_selectors_place_only_on_matching_nodes(topology_ctx: TopologyCtx) -> None:
    _run(topology_ctx)


@pytest.mark.check("TL-010")
def test_negative_selectors_avoid_matching_nodes(topology_ctx: TopologyCtx) -> None:
    if len(topology_ctx.facts) < 2:
        not_applicable("needs at least 2 nodes (a node to avoid and one to land on); this cluster has 1")
    _run(topology_ctx)


@pytest.mark.check("TL-011")
def test_unmatched_selector_stays_pending(topology_ctx: TopologyCtx) -> None:
    _run(topology_ctx)


@pytest.mark.check("TL-012")
def test_fallback_strategy_is_honoured(topology_ctx: TopologyCtx) -> None:
    _run(topology_ctx)


@pytest.mark.check("TL-015")
def test_in_and_multi_key_selectors(topology_ctx: TopologyCtx) -> None:
    _run(topology_ctx)


@pytest.mark.check("TL-016")
def test_feasible_primary_selector_wins_over_fallback(topology_ctx: TopologyCtx) -> None:
    _run(topology_ctx)
