"""Topology area, labels: the plugin's node labels, against Ray, the manager and its description.

The facts come from one probe per node (conformance.areas.topology.collect), so these checks hold
the same way on nodes the suite started and on a --ray-address cluster. Each records every node's
facts (conformance.areas.topology.evidence) and decides by its judge, which `verify` runs again.
"""
from __future__ import annotations

import pytest

from conformance.areas.topology.evidence import FIELDS, NONE, record_nodes
from conformance.areas.topology.pytest_support import TopologyCtx, probe_gaps, require_provider
from conformance.run.fixtures import not_applicable


def _decide(ctx: TopologyCtx, mode: str, detail: str = "") -> None:
    """Record the nodes' facts (and the probe's notes) and decide by the check's judge."""
    ctx.decide(detail, resource=ctx.resource, nodes=record_nodes(ctx.facts, mode), notes=probe_gaps(ctx)[1])


@pytest.mark.check("TL-001")
def test_type_label_on_exactly_the_device_nodes(topology_ctx: TopologyCtx) -> None:
    _decide(topology_ctx, NONE)


@pytest.mark.check("TL-002")
def test_plugin_labels_are_valid(topology_ctx: TopologyCtx) -> None:
    from conformance.areas.topology import consistency

    advice = [f"{f.short}: {a}" for f in topology_ctx.facts if not f.probe_error
              for a in consistency.validity_problems(f, topology_ctx.vocabulary)[1]]
    topology_ctx.metrics["advice"] = advice
    _decide(topology_ctx, NONE)


@pytest.mark.check("TL-003")
def test_plugin_labels_are_on_the_nodes(topology_ctx: TopologyCtx) -> None:
    where = ("the cluster's nodes (apply them with `ray start --labels`)" if topology_ctx.remote
             else "the nodes the suite started")
    _decide(topology_ctx, NONE, f" (labels are applied by whoever starts {where})")


@pytest.mark.check("TL-007")
def test_labels_agree_with_description(topology_ctx: TopologyCtx) -> None:
    require_provider(topology_ctx)
    _decide(topology_ctx, FIELDS)


@pytest.mark.check("TL-008")
def test_described_domains_are_published(topology_ctx: TopologyCtx) -> None:
    require_provider(topology_ctx)
    if not any(f.described and f.description.get("domains") for f in topology_ctx.facts):
        not_applicable("no node's description names an interconnect, slice or rack domain")
    _decide(topology_ctx, FIELDS)
