"""Unit tests of the topology area's pure parts: schemas, label rules, selectors, comparisons.

No Ray cluster: these run in milliseconds and pin down the rules the live checks apply.
"""
from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import jsonschema
import pytest
import yaml

from conformance.areas.topology import consistency
from conformance.areas.topology.description import (
    described_value,
    description_problems,
    expected_problems,
    ray_view_problems,
    schema_problems,
)
from conformance.areas.topology.facts import NodeFacts
from conformance.areas.topology.selectors import first_matching, matches, parse_value, truth_labels
from conformance.areas.topology.view import build_view, description_checks
from conformance.catalog.labels import load_vocabulary, plugin_label_problems
from conformance.catalog.manifest_view import TopologyExpected

ROOT = Path(__file__).resolve().parents[2]
CATALOG = ROOT  # the data folders tiers/ and schemas/ are at the repository's top level
VOCAB = load_vocabulary()
ISLAND_ENV = {"SIMACC_NUM_DEVICES": "4", "SIMACC_TYPE": "SIMACC-X1", "SIMACC_ISLANDS": "0,1;2,3",
              "SIMACC_DOMAIN": "simlink-a", "SIMACC_RACK": "rack-1"}
EXPECTED = TopologyExpected.from_json(
    yaml.safe_load((ROOT / "conformance/simulated/manifest-2node.yaml").read_text())["topology"]["expected"])


@pytest.fixture
def sim_env(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("SIMACC_VISIBLE_DEVICES", raising=False)
    for k, v in ISLAND_ENV.items():
        monkeypatch.setenv(k, v)


@pytest.fixture
def desc(sim_env: None) -> dict[str, Any]:
    from conformance.simulated.topology import describe_node
    d = describe_node()
    assert d is not None
    return d


# ------------------------------------------------------------------ schemas and data files
def test_schemas_are_valid_2020_12() -> None:
    for name in ("topology", "labels", "manifest"):
        jsonschema.Draft202012Validator.check_schema(json.loads((CATALOG / f"schemas/{name}.schema.json").read_text()))


def test_vocabulary_keys_pass_rays_key_rules_and_match_ray_constants() -> None:
    from ray import _raylet
    from ray._private import label_utils

    for entry in VOCAB.keys:
        assert label_utils.validate_label_key(entry.key) is None, entry.key
    known = {e.key for e in VOCAB.keys}
    for const in ("RAY_NODE_ACCELERATOR_TYPE_KEY", "RAY_NODE_TPU_SLICE_NAME_KEY", "RAY_NODE_TPU_WORKER_ID_KEY",
                  "RAY_NODE_TPU_TOPOLOGY_KEY", "RAY_NODE_TPU_POD_TYPE_KEY", "RAY_NODE_ID_KEY", "RAY_NODE_ZONE_KEY"):
        assert getattr(_raylet, const) in known, const


def test_demo_manifests_validate() -> None:
    from conformance.catalog.manifest import load_manifest
    for path in ("conformance/simulated/manifest-2node.yaml", "tests/manifests/topology-3node.yaml"):
        m = load_manifest(ROOT / path)
        assert m.data["topology"]["provider"]


def test_manifest_schema_refuses_unknown_expectation(tmp_path: Path) -> None:
    from conformance.catalog.manifest import load_manifest
    from conformance.errors import UserError
    data = yaml.safe_load((ROOT / "conformance/simulated/manifest-2node.yaml").read_text())
    data["topology"]["expected"]["links"][0]["min_bandwidth_gbps"] = 0
    (tmp_path / "m.yaml").write_text(yaml.safe_dump(data))
    with pytest.raises(UserError, match="min_bandwidth_gbps"):
        load_manifest(tmp_path / "m.yaml")


# ------------------------------------------------------------------ descriptions
def test_simulated_description_is_valid_and_matches_expectation(desc: dict[str, Any]) -> None:
    assert description_problems(desc) == []
    assert expected_problems(desc, EXPECTED) == []
    assert ray_view_problems(desc, ["0", "1", "2", "3"], "SIMACC-X1") == []
    kinds = {(lk["a"], lk["b"]): lk["kind"] for lk in desc["links"]}
    assert kinds[("0", "1")] == kinds[("2", "3")] == "simlink" and kinds[("1", "2")] == "host"


def test_simulated_description_follows_visible_devices(sim_env: None, monkeypatch: pytest.MonkeyPatch) -> None:
    from conformance.simulated.manager import SimAccManager
    from conformance.simulated.topology import describe_node
    monkeypatch.setenv("SIMACC_VISIBLE_DEVICES", "1,2")
    d = describe_node()
    assert d is not None and [x["id"] for x in d["devices"]] == ["1", "2"]
    assert SimAccManager.get_current_node_accelerator_labels()["ray.io/accelerator-count"] == "2"
    monkeypatch.setenv("SIMACC_NUM_DEVICES", "0")
    monkeypatch.delenv("SIMACC_VISIBLE_DEVICES")
    assert describe_node() is None and SimAccManager.get_current_node_accelerator_labels() == {}


@pytest.mark.parametrize("mutate, phrase", [
    (lambda d: d["links"][0].update(bandwidth_gbps=0), "bandwidth_gbps"),
    (lambda d: d["links"][0].update(bandwidth_gbps=-5), "bandwidth_gbps"),
    (lambda d: d["devices"][0].pop("id"), "'id' is a required property"),
    (lambda d: d["devices"][0].update(pci_bus_id="3b:00.0"), "pci_bus_id"),
    (lambda d: d["devices"][0].update(id="0,1"), "devices[0].id"),
    (lambda d: d.setdefault("domains", {}).update(rack="rack 7"), "domains.rack"),
    (lambda d: d["links"][0].update(kind="NVLink"), "kind"),
    (lambda d: d.update(extra=1), "extra"),
])
def test_schema_catches_shape_errors(desc: dict[str, Any], mutate: Any, phrase: str) -> None:
    mutate(desc)
    problems = schema_problems(desc)
    assert problems and any(phrase in p for p in problems), problems


@pytest.mark.parametrize("mutate, phrase", [
    (lambda d: d["links"].append({"a": "0", "b": "9", "kind": "simlink", "bandwidth_gbps": 1.0}), "device '9'"),
    (lambda d: d["links"].append({"a": "2", "b": "2", "kind": "host", "bandwidth_gbps": 1.0}), "itself"),
    (lambda d: d["links"].append(dict(d["links"][0], a=d["links"][0]["b"], b=d["links"][0]["a"])), "duplicate"),
    (lambda d: d["devices"].append(dict(d["devices"][0])), "duplicate ids"),
    (lambda d: d["nics"][0]["devices"].append("7"), "affinity to device '7'"),
    (lambda d: d["devices"][0].update(numa_node=3), "numa_node 3"),
])
def test_semantic_pass_catches_dangling_references(desc: dict[str, Any], mutate: Any, phrase: str) -> None:
    mutate(desc)
    problems = description_problems(desc)
    assert any(phrase in p for p in problems), problems


def test_directed_links_in_both_directions_are_not_duplicates(desc: dict[str, Any]) -> None:
    desc["links"] += [{"a": "0", "b": "1", "kind": "simlink", "bandwidth_gbps": 1.0, "directed": True},
                      {"a": "1", "b": "0", "kind": "simlink", "bandwidth_gbps": 1.0, "directed": True}]
    assert description_problems(desc) == []


def test_ray_view_comparison(desc: dict[str, Any]) -> None:
    assert "Ray's ids missing from it: ['4']" in ray_view_problems(desc, ["0", "1", "2", "3", "4"], None)[0]
    assert any("manager's type" in p for p in ray_view_problems(desc, ["0", "1", "2", "3"], "OTHER"))


def test_expectation_comparison(desc: dict[str, Any]) -> None:
    slow = copy.deepcopy(desc)
    for lk in slow["links"]:
        lk["bandwidth_gbps"] = 50.0
    assert any("at least 200" in p for p in expected_problems(slow, EXPECTED))
    sparse = copy.deepcopy(desc)
    sparse["links"] = [lk for lk in sparse["links"] if lk["kind"] == "simlink"]
    assert any("no link for" in p for p in expected_problems(sparse, EXPECTED))
    no_rack = copy.deepcopy(desc)
    del no_rack["domains"]["rack"]
    assert expected_problems(no_rack, EXPECTED) == ["describes no rack domain; topology.expected.domains requires it"]
    assert "devices_per_node is 2" in expected_problems(desc, TopologyExpected.from_json({"devices_per_node": 2}))[0]


def test_described_value(desc: dict[str, Any]) -> None:
    assert described_value(desc, "device_count") == "4"
    assert described_value(desc, "domains.interconnect") == "simlink-a"
    assert described_value(desc, "domains.slice") is None
    assert described_value(None, "accelerator_type") is None


# ------------------------------------------------------------------ label rules
def test_simulated_labels_are_valid(sim_env: None) -> None:
    from conformance.simulated.manager import SimAccManager
    labels = SimAccManager.get_current_node_accelerator_labels()
    assert labels == {"ray.io/accelerator-count": "4", "ray.io/accelerator-domain": "simlink-a", "ray.io/rack": "rack-1"}
    assert plugin_label_problems(labels, VOCAB) == ([], [])


def test_tpu_style_labels_are_valid() -> None:
    labels = {"ray.io/tpu-slice-name": "my-slice", "ray.io/tpu-worker-id": "0", "ray.io/tpu-topology": "4x4",
              "ray.io/tpu-pod-type": "v4-32", "ray.io/tpu-subslice-2x2": "1"}
    assert plugin_label_problems(labels, VOCAB) == ([], [])


@pytest.mark.parametrize("labels, phrase", [
    ({"acme.com/fw": "1.2 3"}, "Invalid label key value"),
    ({"acme.com/fw": "x" * 64}, "Invalid label key value"),
    ({"-bad": "x"}, "Invalid label key name"),
    ({"acme.com/n": 4}, "not a str"),
    ({"ray.io/made-up": "x"}, "reserved for Ray-defined labels"),
    ({"ray.io/node-id": "abc"}, "must not return it"),
    ({"ray.io/availability-zone": "z1"}, "must not return it"),
    ({"ray.io/accelerator-count": "four"}, "decimal integer"),
    ({"ray.io/accelerator-count": "04"}, "decimal integer"),
    ({"ray.io/tpu-topology": "4by4"}, "shape"),
    ({"ray.io/tpu-subslice-2x2": "a"}, "decimal integer"),
])
def test_invalid_plugin_labels(labels: dict[str, Any], phrase: str) -> None:
    problems, _ = plugin_label_problems(labels, VOCAB)
    assert problems and phrase in problems[0], problems


def test_label_rules_agree_with_ray() -> None:
    """Whatever Ray refuses, the suite refuses (it calls Ray's own functions)."""
    from ray._private import label_utils
    for value in ("ok", "a-b_c.d", "bad value", "-x", "x-", "a" * 63, "a" * 64, "a/b"):
        try:
            label_utils.validate_label_value(value)
            ray_ok = True
        except ValueError:
            ray_ok = False
        assert (plugin_label_problems({"acme.com/k": value}, VOCAB)[0] == []) == ray_ok, value


def test_non_dict_labels_and_unprefixed_note() -> None:
    assert "expected a dict" in plugin_label_problems(["a"], VOCAB)[0][0]
    problems, notes = plugin_label_problems({"zone": "a"}, VOCAB)
    assert problems == [] and "unprefixed" in notes[0]
    assert plugin_label_problems(None, VOCAB) == ([], [])


# ------------------------------------------------------------------ selectors
@pytest.mark.parametrize("selector, labels, want", [
    ({"z": "a"}, {"z": "a"}, True), ({"z": "a"}, {"z": "b"}, False), ({"z": "a"}, {}, False),
    ({"z": "!a"}, {"z": "b"}, True), ({"z": "!a"}, {"z": "a"}, False), ({"z": "!a"}, {}, True),
    ({"z": "in(a, b)"}, {"z": "b"}, True), ({"z": "in(a,b)"}, {}, False),
    ({"z": "!in(a,b)"}, {"z": "c"}, True), ({"z": "!in(a,b)"}, {"z": "a"}, False), ({"z": "!in(a,b)"}, {}, True),
    ({"z": "a", "t": "x"}, {"z": "a", "t": "y"}, False), ({"z": "a", "t": "x"}, {"z": "a", "t": "x"}, True),
])
def test_selector_semantics(selector: dict[str, str], labels: dict[str, str], want: bool) -> None:
    assert matches(selector, labels) is want


def test_parse_and_fallback() -> None:
    assert parse_value("!in(a, b)") == (True, ["a", "b"])
    nodes = {"n1": {"z": "a"}, "n2": {"z": "b"}}
    assert first_matching([{"z": "q"}, {"z": "b"}], nodes) == (1, {"n2"})
    assert first_matching([{"z": "q"}], nodes) == (None, set())


def _node(**kw: Any) -> NodeFacts:
    base = dict(node_id="n" * 56, device_count=4.0, ray_ids=["0", "1", "2", "3"], manager_type="SIMACC-X1",
                ray_labels={"ray.io/accelerator-type": "SIMACC-X1"}, provider_declared=True)
    base.update(kw)
    return NodeFacts(**base)


def test_truth_labels_come_from_devices_and_description(desc: dict[str, Any]) -> None:
    lying = _node(ray_labels={"ray.io/accelerator-type": "SIMACC-X1", "ray.io/accelerator-domain": "simlink-z"},
                  description=desc)
    truth = truth_labels(lying, VOCAB, "SIMACC-X1")
    assert truth["ray.io/accelerator-domain"] == "simlink-a" and truth["ray.io/accelerator-count"] == "4"
    empty = _node(device_count=0.0, ray_ids=[], manager_type=None,
                  ray_labels={"ray.io/accelerator-type": "SIMACC-X1", "ray.io/rack": "r9"}, description=None)
    truth = truth_labels(empty, VOCAB, "SIMACC-X1")
    assert "ray.io/accelerator-type" not in truth and truth["ray.io/rack"] == "r9"  # no description: no opinion


# ------------------------------------------------------------------ consistency
def test_type_label_rules() -> None:
    assert consistency.type_label_problems(_node(), "SIMACC-X1") == []
    wrong = _node(ray_labels={"ray.io/accelerator-type": "SIMACC-X2"})
    assert "SIMACC-X2" in consistency.type_label_problems(wrong, "SIMACC-X1")[0]
    empty = _node(device_count=0.0, manager_type=None, plugin_labels={"ray.io/accelerator-type": "SIMACC-X1"})
    assert len(consistency.type_label_problems(empty, "SIMACC-X1")) == 2
    gpu_node = _node(device_count=0.0, manager_type=None, ray_labels={"ray.io/accelerator-type": "A100"})
    assert consistency.type_label_problems(gpu_node, "SIMACC-X1") == []  # another family's node is not ours


def test_applied_agreement_and_publication(desc: dict[str, Any]) -> None:
    labels = {"ray.io/accelerator-count": "4", "ray.io/accelerator-domain": "simlink-a", "ray.io/rack": "rack-1"}
    good = _node(ray_labels={"ray.io/accelerator-type": "SIMACC-X1", **labels}, plugin_labels=labels, description=desc)
    assert consistency.applied_problems(good) == []
    assert consistency.agreement_problems(good, VOCAB) == []
    assert consistency.publication_problems(good, VOCAB) == []
    missing = _node(plugin_labels=labels, description=desc)
    assert len(consistency.applied_problems(missing)) == 3
    assert len(consistency.publication_problems(missing, VOCAB)) == 2
    lie = {**labels, "ray.io/accelerator-domain": "simlink-b", "ray.io/accelerator-count": "8"}
    lying = _node(ray_labels=lie, plugin_labels=lie, description=desc)
    problems = consistency.agreement_problems(lying, VOCAB)
    assert any("simlink-b" in p for p in problems) and any("'8'" in p for p in problems)


def test_view_and_description_checks(desc: dict[str, Any]) -> None:
    node = _node(description=desc, plugin_labels={})
    assert description_checks(node, EXPECTED) == {"TL-004": [], "TL-005": [], "TL-006": [], "uncomparable": []}
    bad = copy.deepcopy(desc)
    bad["links"][2]["bandwidth_gbps"] = 0
    found = description_checks(_node(description=bad), EXPECTED)
    assert found["TL-004"] and found["uncomparable"] and not found["TL-005"]
    view = build_view([node, _node(node_id="m" * 56, description=bad)], resource="SIMACC", vocabulary=VOCAB,
                      expected_type="SIMACC-X1", expected_topology=EXPECTED)
    assert view["data"]["differences"] >= 1 and "✗ TL-004" in view["markdown"]
    assert "simlink 200 GB/s: 0-1, 2-3" in view["markdown"]


def test_truth_leaves_other_families_alone() -> None:
    gpu = _node(device_count=0.0, ray_ids=[], manager_type=None, ray_labels={"ray.io/accelerator-type": "A100"})
    assert truth_labels(gpu, VOCAB, "SIMACC-X1")["ray.io/accelerator-type"] == "A100"
