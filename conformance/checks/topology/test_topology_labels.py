"""Topology area, labels: the plugin's node labels, against Ray, the manager and its description.

The facts come from one probe per node (conformance.areas.topology.collect), so these checks hold
the same way on nodes the suite started and on a --ray-address cluster.
"""
from __future__ import annotations

import pytest

from conformance.areas.topology import consistency
from conformance.areas.topology.pytest_support import TopologyCtx, assert_no_problems, probe_gaps, require_provider
from conformance.run.fixtures import not_applicable

pytestmark = pytest.mark.cluster("shared")


@pytest.mark.check("TL-001")
def test_type_label_on_exactly_the_device_nodes(topology_ctx: TopologyCtx) -> None:
    assert topology_ctx.device_nodes(), f"no node advertises the {topology_ctx.resource} resource"
    problems, notes = probe_gaps(topology_ctx)
    for f in topology_ctx.facts:
        if not f.probe_error:
            problems.setdefault(f.short, []).extend(consistency.type_label_problems(f, topology_ctx.expected_type))
    topology_ctx.metrics["type_labels"] = {f.short: f.ray_labels.get("ray.io/accelerator-type") for f in topology_ctx.facts}
    topology_ctx.metrics["notes"] = notes
    assert_no_problems(problems, "ray.io/accelerator-type is wrong", topology_ctx.metrics)


@pytest.mark.check("TL-002")
def test_plugin_labels_are_valid(topology_ctx: TopologyCtx) -> None:
    problems, notes = probe_gaps(topology_ctx)
    for f in topology_ctx.facts:
        if not f.probe_error:
            bad, advice = consistency.validity_problems(f, topology_ctx.vocabulary)
            problems.setdefault(f.short, []).extend(bad)
            notes += [f"{f.short}: {a}" for a in advice]
    topology_ctx.metrics["plugin_labels"] = {f.short: f.plugin_labels for f in topology_ctx.facts}
    topology_ctx.metrics["notes"] = notes
    assert_no_problems(problems, "invalid plugin labels", topology_ctx.metrics)


@pytest.mark.check("TL-003")
def test_plugin_labels_are_on_the_nodes(topology_ctx: TopologyCtx) -> None:
    problems, notes = probe_gaps(topology_ctx)
    for f in topology_ctx.facts:
        if not f.probe_error:
            problems.setdefault(f.short, []).extend(consistency.applied_problems(f))
    topology_ctx.metrics["notes"] = notes
    where = ("the cluster's nodes (apply them with `ray start --labels`)" if topology_ctx.remote
             else "the nodes the suite started")
    assert_no_problems(problems, f"the plugin's labels are missing from {where}", topology_ctx.metrics)


@pytest.mark.check("TL-007")
def test_labels_agree_with_description(topology_ctx: TopologyCtx) -> None:
    require_provider(topology_ctx)
    problems, notes = probe_gaps(topology_ctx)
    for f in topology_ctx.facts:
        if not f.probe_error:
            problems.setdefault(f.short, []).extend(consistency.agreement_problems(f, topology_ctx.vocabulary))
    topology_ctx.metrics["notes"] = notes
    assert_no_problems(problems, "labels disagree with the topology description", topology_ctx.metrics)


@pytest.mark.check("TL-008")
def test_described_domains_are_published(topology_ctx: TopologyCtx) -> None:
    require_provider(topology_ctx)
    described = {f.short: f.description.get("domains") for f in topology_ctx.facts if f.described and f.description.get("domains")}
    if not described:
        not_applicable("no node's description names an interconnect, slice or rack domain")
    topology_ctx.metrics["described_domains"] = described
    problems = {f.short: consistency.publication_problems(f, topology_ctx.vocabulary) for f in topology_ctx.facts}
    assert_no_problems(problems, "described domains are not published as labels", topology_ctx.metrics)
