"""A node with several interconnect domains: an 8-device node of two 4-device islands is
described (device_domains), validated by the topology schema and the description rules, checked
against topology.expected, and drawn in report.html; a misdrawn island map is caught."""
from __future__ import annotations

import copy

import pytest

from conformance.areas.topology.description import description_problems, expected_problems, schema_problems
from conformance.catalog.manifest_view import TopologyExpected

EIGHT = {"SIMACC_NUM_DEVICES": "8", "SIMACC_ISLANDS": "0,1,2,3;4,5,6,7", "SIMACC_TYPE": "SIMACC-X1"}


@pytest.fixture
def eight(monkeypatch: pytest.MonkeyPatch) -> dict:
    from conformance.simulated.topology import describe_node

    for k, v in EIGHT.items():
        monkeypatch.setenv(k, v)
    monkeypatch.delenv("SIMACC_VISIBLE_DEVICES", raising=False)
    return describe_node()


def test_the_good_provider_describes_two_islands_and_passes(eight: dict) -> None:
    assert [d["devices"] for d in eight["device_domains"]] == [["0", "1", "2", "3"], ["4", "5", "6", "7"]]
    assert description_problems(eight) == []
    assert expected_problems(eight, TopologyExpected.from_json({"device_domains": [["4", "5", "6", "7"], ["0", "1", "2", "3"]]})) == []


def test_the_schema_refuses_malformed_domains(eight: dict) -> None:
    bad = copy.deepcopy(eight)
    bad["device_domains"][0]["devices"] = []
    assert schema_problems(bad)
    bad = copy.deepcopy(eight)
    bad["device_domains"][0]["name"] = "not a label!"
    assert schema_problems(bad)
    bad = copy.deepcopy(eight)
    bad["device_domains"][0]["color"] = "blue"
    assert schema_problems(bad)


def test_domains_that_contradict_the_devices_or_links_are_caught(eight: dict) -> None:
    twice = copy.deepcopy(eight)
    twice["device_domains"][1]["devices"].append("0")
    assert any("already in" in p for p in description_problems(twice))
    ghost = copy.deepcopy(eight)
    ghost["device_domains"][1]["devices"].append("9")
    assert any("'9'" in p for p in description_problems(ghost))
    dup = copy.deepcopy(eight)
    dup["device_domains"][1]["name"] = dup["device_domains"][0]["name"]
    assert any("duplicate name" in p for p in description_problems(dup))


def test_the_broken_provider_variant_is_caught(monkeypatch: pytest.MonkeyPatch, eight: dict) -> None:
    """tests/broken_plugins/broken_topology.py describe_misdrawn_islands, on the same node."""
    import broken_topology

    desc = broken_topology.describe_misdrawn_islands()
    problems = description_problems(desc)
    assert any("device_domains say simlink stays inside" in p for p in problems)
    assert any("no simlink link joins" in p for p in problems)
    assert expected_problems(desc, TopologyExpected.from_json({"device_domains": [["0", "1", "2", "3"], ["4", "5", "6", "7"]]}))


def test_report_html_draws_each_island(eight: dict) -> None:
    from conformance.areas.topology.report import topology

    report = {"sections": {"Topology": {"data": {"nodes": [{"node_id": "ab" * 8, "plugin": {"description": eight},
                                                            "ray": {}}]}}}}
    svg = topology(report)["svg"]
    assert "island0" in svg and "island1" in svg
