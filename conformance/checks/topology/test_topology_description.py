"""Topology area, description: what topology.provider returns on each node.

The description must be well-formed, describe exactly the devices Ray schedules on the node
(ids as Ray assigns them) and match the manifest's topology.expected when the manifest gives one.
Each check records every node's facts with its description in full and decides by its judge.
"""
from __future__ import annotations

import pytest

from conformance.areas.topology.evidence import FULL, record_nodes
from conformance.areas.topology.pytest_support import TopologyCtx, probe_gaps, require_provider
from conformance.areas.topology.view import description_checks
from conformance.report.judges import FAIL
from conformance.run.fixtures import not_applicable


def _decide(ctx: TopologyCtx) -> None:
    """Record the nodes' facts; a check that could not compare a node with devices (no
    schema-valid description there, TL-004's failure) is not applicable unless it failed."""
    ctx.metrics.update(resource=ctx.resource, nodes=record_nodes(ctx.facts, FULL), notes=probe_gaps(ctx)[1])
    uncomparable = sorted(f.short for f in ctx.facts if description_checks(f, ctx.expected_topology)["uncomparable"])
    if ctx.check_id != "TL-004" and uncomparable and ctx.verdict().outcome != FAIL:
        not_applicable(f"no schema-valid description to compare on node(s) {', '.join(uncomparable)} "
                       "(TL-004 reports why)")
    ctx.decide()


@pytest.mark.check("TL-004")
def test_description_is_well_formed(topology_ctx: TopologyCtx) -> None:
    require_provider(topology_ctx)
    topology_ctx.metrics["described_nodes"] = sum(1 for f in topology_ctx.facts if f.described)
    _decide(topology_ctx)


@pytest.mark.check("TL-005")
def test_described_devices_are_rays_devices(topology_ctx: TopologyCtx) -> None:
    require_provider(topology_ctx)
    _decide(topology_ctx)


@pytest.mark.check("TL-006")
def test_description_matches_manifest_expectation(topology_ctx: TopologyCtx) -> None:
    require_provider(topology_ctx)
    if not topology_ctx.expected_topology:
        not_applicable("the manifest declares no topology.expected")
    _decide(topology_ctx)

