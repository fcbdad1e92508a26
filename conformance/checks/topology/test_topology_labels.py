"""Topology area, labels: the plugin's node labels, against Ray, the manager and its description.

The facts come from one probe per node (conformance.areas.topology.collect), so these checks hold
the same way on nodes the suite started and on a --ray-address cluster.
"""
from __future__ import annotations

from typing import Any

import pytest

from conformance.areas.topology import consistency
from conformance.areas.topology.pytest_support import TopologyContext, assert_no_problems, probe_gaps, require_provider
from conformance.run.fixtures import not_applicable

pytestmark = pytest.mark.cluster("shared")


@pytest.mark.check("TL-001")
def test_type_label_on_exactly_the_device_nodes(topology: TopologyContext, check_metrics: dict[str, Any]) -> None:
    assert topology.device_nodes(), f"no node advertises the {topology.resource} resource"
    problems, notes = probe_gaps(topology)
    for f in topology.facts:
        if not f.probe_error:
            problems.setdefault(f.short, []).extend(consistency.type_label_problems(f, topology.expected_type))
    check_metrics["type_labels"] = {f.short: f.ray_labels.get("ray.io/accelerator-type") for f in topology.facts}
    check_metrics["notes"] = notes
    assert_no_problems(problems, "ray.io/accelerator-type is wrong", check_metrics)


@pytest.mark.check("TL-002")
def test_plugin_labels_are_valid(topology: TopologyContext, check_metrics: dict[str, Any]) -> None:
    problems, notes = probe_gaps(topology)
    for f in topology.facts:
        if not f.probe_error:
            bad, advice = consistency.validity_problems(f, topology.vocabulary)
            problems.setdefault(f.short, []).extend(bad)
            notes += [f"{f.short}: {a}" for a in advice]
    check_metrics["plugin_labels"] = {f.short: f.plugin_labels for f in topology.facts}
    check_metrics["notes"] = notes
    assert_no_problems(problems, "invalid plugin labels", check_metrics)


@pytest.mark.check("TL-003")
def test_plugin_labels_are_on_the_nodes(topology: TopologyContext, check_metrics: dict[str, Any]) -> None:
    problems, notes = probe_gaps(topology)
    for f in topology.facts:
        if not f.probe_error:
            problems.setdefault(f.short, []).extend(consistency.applied_problems(f))
    check_metrics["notes"] = notes
    where = ("the cluster's nodes (apply them with `ray start --labels`)" if topology.remote
             else "the nodes the suite started")
    assert_no_problems(problems, f"the plugin's labels are missing from {where}", check_metrics)


@pytest.mark.check("TL-007")
def test_labels_agree_with_description(topology: TopologyContext, check_metrics: dict[str, Any]) -> None:
    require_provider(topology)
    problems, notes = probe_gaps(topology)
    for f in topology.facts:
        if not f.probe_error:
            problems.setdefault(f.short, []).extend(consistency.agreement_problems(f, topology.vocabulary))
    check_metrics["notes"] = notes
    assert_no_problems(problems, "labels disagree with the topology description", check_metrics)


@pytest.mark.check("TL-008")
def test_described_domains_are_published(topology: TopologyContext, check_metrics: dict[str, Any]) -> None:
    require_provider(topology)
    described = {f.short: f.description.get("domains") for f in topology.facts if f.described and f.description.get("domains")}
    if not described:
        not_applicable("no node's description names an interconnect, slice or rack domain")
    check_metrics["described_domains"] = described
    problems = {f.short: consistency.publication_problems(f, topology.vocabulary) for f in topology.facts}
    assert_no_problems(problems, "described domains are not published as labels", check_metrics)
