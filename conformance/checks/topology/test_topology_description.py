"""Topology area, description: what topology.provider returns on each node.

The description must be well-formed, describe exactly the devices Ray schedules on the node
(ids as Ray assigns them) and match the manifest's topology.expected when the manifest gives one.
"""
from __future__ import annotations

from typing import Any

import pytest

from conformance.areas.topology.pytest_support import TopologyCtx, assert_no_problems, probe_gaps, require_provider
from conformance.areas.topology.view import description_checks
from conformance.run.fixtures import not_applicable

pytestmark = pytest.mark.cluster("shared")


def _per_node(ctx: TopologyCtx, check_id: str) -> tuple[dict[str, list[str]], dict[str, list[str]]]:
    """(problems, uncomparable) per node for one check."""
    problems, _ = probe_gaps(ctx)
    uncomparable: dict[str, list[str]] = {}
    for f in ctx.facts:
        found = description_checks(f, ctx.expected_topology)
        problems.setdefault(f.short, []).extend(found[check_id])
        if found["uncomparable"]:
            uncomparable[f.short] = found["uncomparable"]
    return problems, uncomparable


def _judge(problems: dict[str, list[str]], uncomparable: dict[str, list[str]], what: str,
           metrics: dict[str, Any]) -> None:
    """Fail on any problem; never pass while a node with devices could not be compared."""
    metrics["uncomparable"] = uncomparable
    assert_no_problems(problems, what, metrics)
    if uncomparable:
        not_applicable(f"no schema-valid description to compare on node(s) {', '.join(sorted(uncomparable))} "
                       "(TL-004 reports why)")


@pytest.mark.check("TL-004")
def test_description_is_well_formed(topology_ctx: TopologyCtx) -> None:
    require_provider(topology_ctx)
    topology_ctx.metrics["described_nodes"] = sum(1 for f in topology_ctx.facts if f.described)
    problems, _ = _per_node(topology_ctx, "TL-004")
    assert_no_problems(problems, "invalid topology description", topology_ctx.metrics)


@pytest.mark.check("TL-005")
def test_described_devices_are_rays_devices(topology_ctx: TopologyCtx) -> None:
    require_provider(topology_ctx)
    topology_ctx.metrics["ray_ids"] = {f.short: f.ray_ids for f in topology_ctx.facts}
    _judge(*_per_node(topology_ctx, "TL-005"), "the description's devices are not the ones Ray schedules", topology_ctx.metrics)


@pytest.mark.check("TL-006")
def test_description_matches_manifest_expectation(topology_ctx: TopologyCtx) -> None:
    require_provider(topology_ctx)
    if not topology_ctx.expected_topology:
        not_applicable("the manifest declares no topology.expected")
    _judge(*_per_node(topology_ctx, "TL-006"), "the description differs from topology.expected", topology_ctx.metrics)
