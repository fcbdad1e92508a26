"""FR-019's plan (conformance/areas/recovery/domains.py): pure, from the roles' labels."""
from __future__ import annotations

from typing import Any

from conformance.areas.recovery import domains
from conformance.areas.recovery.domains import Plan

KEY, SLICE = "ray.io/accelerator-domain", "ray.io/tpu-slice-name"
KEYS = [KEY, SLICE]


def node(devices: float, **labels: str) -> dict[str, Any]:
    return {"Resources": {"SIMACC": devices}, "Labels": labels}


def layout(**domains_by_role: str | None) -> dict[str, Any]:
    """Roles with 4 devices each and `KEY` = the value given (None: no label)."""
    nodes = {r: {"Resources": {"SIMACC": 4}, "Labels": {KEY: v} if v else {}} for r, v in domains_by_role.items()}
    return domains.layout_of(nodes, "SIMACC", KEYS)


def test_the_layout_records_devices_and_packing_labels_only_in_role_order() -> None:
    got = domains.layout_of({"c": node(4, **{KEY: "a", "other": "x"}), "head": node(0)}, "SIMACC", KEYS)
    assert list(got) == ["head", "c"]
    assert got == {"head": {"devices": 0.0, "domains": {}}, "c": {"devices": 4.0, "domains": {KEY: "a"}}}


def test_the_key_is_the_first_packing_key_a_node_with_devices_carries() -> None:
    lay = {"head": {"devices": 0.0, "domains": {KEY: "a"}}, "b": {"devices": 4.0, "domains": {SLICE: "s"}}}
    assert domains.packing_key(lay, KEYS) == SLICE      # the head has no devices
    assert domains.packing_key({"b": {"devices": 4.0, "domains": {}}}, KEYS) is None


def test_not_applicable_without_a_label_or_without_two_nodes_of_one_value() -> None:
    assert "no node" in str(domains.why_not_applicable(layout(head=None, b=None, c=None), KEYS))
    assert "share" in str(domains.why_not_applicable(layout(head="a", b="b", c="c"), KEYS))
    assert domains.why_not_applicable(layout(head="a", b="b", c="a"), KEYS) is None
    assert domains.why_not_applicable(layout(head="a", b="a", c="a"), KEYS) is None


def test_the_demo_layout_kills_c_and_leaves_b_free_outside_the_domain() -> None:
    plan = domains.plan_after_placement(layout(head="a", b="b", c="a"), KEY, {0: "head", 1: "c"})
    assert plan == Plan(domain="a", victim="c", survivor="head", lost=1, filled=(), outside=("b",))


def test_one_domain_kills_the_first_killable_bundle_node_and_fills_the_third() -> None:
    plan = domains.plan_after_placement(layout(head="a", b="a", c="a"), KEY, {0: "c", 1: "b"})
    assert plan == Plan(domain="a", victim="b", survivor="c", lost=1, filled=("head",), outside=())


def test_a_placement_across_values_or_on_one_node_is_the_finding() -> None:
    lay = layout(head="a", b="b", c="a")
    assert "spans" in str(domains.plan_after_placement(lay, KEY, {0: "head", 1: "b"}))
    assert "distinct" in str(domains.plan_after_placement(lay, KEY, {0: "c", 1: "c"}))
    assert "distinct" in str(domains.plan_after_placement(lay, KEY, {0: "c"}))


def test_the_strategy_packs_one_value_and_spreads_the_nodes() -> None:
    assert domains.strategy(KEY) == {KEY: "STRICT_PACK", "ray.io/node-id": "STRICT_SPREAD"}
