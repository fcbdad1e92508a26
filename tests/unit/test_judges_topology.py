"""The topology judges' subtler rules: the record held to the manifest, JSON-exact evidence, the
placement plans compared with their random absent values canonical, the host's pending work
never a pass. Pure: no Ray (the judges read Ray's label rules, a pure module, as the checks do)."""
from __future__ import annotations

import copy
import functools
import json
from typing import Any

from judged import MANIFEST, manifest
from judged import topology as t

from conformance.areas.topology import plans
from conformance.areas.topology.evidence import FULL, exact_json, facts_of, node_record
from conformance.areas.topology.facts import NodeFacts
from conformance.catalog.data import Check, load_checklist
from conformance.report import judges


@functools.cache
def checks() -> dict[str, Check]:
    return load_checklist().by_id()


def verdict(cid: str, metrics: dict[str, Any], man: dict[str, Any] | None = None) -> judges.Verdict:
    return judges.judge(checks()[cid], metrics, MANIFEST if man is None else man)


def test_the_report_json_decides_what_the_live_record_decided() -> None:
    for cid, record in t.PASSING.items():
        assert verdict(cid, json.loads(json.dumps(record))).outcome == "pass", cid
    for cid, records in t.FAILING.items():
        for record in records:
            assert verdict(cid, json.loads(json.dumps(record))) == verdict(cid, record), cid


def test_the_order_the_report_keeps_the_nodes_in_does_not_matter() -> None:
    for cid, record in t.PASSING.items():
        turned = {**record, "nodes": dict(reversed(list(record["nodes"].items())))}
        assert verdict(cid, turned).outcome == "pass", cid


def test_values_json_cannot_carry_are_recorded_as_errors() -> None:
    f = NodeFacts(node_id="n" * 56, device_count=4, ray_labels={}, ray_ids=["0"], manager_type="NPU-X1",
                  plugin_labels={1: "x"}, description={"devices": [{"id": "0"}], "bandwidth": float("nan")})
    rec = node_record(f, FULL)
    assert "plugin_labels" not in rec and "returned dict" in rec["plugin_labels_error"]
    assert "description" not in rec and "JSON cannot carry" in rec["description_error"]
    assert exact_json(rec)
    assert not exact_json({"a": (1, 2)}) and not exact_json({1: "a"}) and exact_json({"a": [1, 2.5, None]})


def test_a_non_str_label_key_fails_tl002_live_and_in_verify() -> None:
    facts = copy.deepcopy(t.FACTS)
    facts[0].plugin_labels = {7: "x"}
    record = {"resource": "NPU", "nodes": {f.node_id: node_record(f) for f in facts}}
    got = verdict("TL-002", json.loads(json.dumps(record)))
    assert got.outcome == "fail" and "returned dict" in str(got.reason)


def test_the_record_is_held_to_the_manifest() -> None:
    labels = t.PASSING["TL-001"]
    # the type the labels are judged against is the manifest's, never the record's
    other = copy.deepcopy(MANIFEST)
    other["accelerator"]["expected"]["accelerator_type"] = "NPU-X2"
    assert verdict("TL-001", labels, other).outcome == "fail"
    assert "manifest's cluster has 3" in str(verdict("TL-001", labels, manifest(nodes=3)).reason)
    # a cluster larger than the manifest's (a --ray-address cluster with a CPU head) is fine
    more = copy.deepcopy(labels)
    more["nodes"]["c" * 56] = {"devices": 0, "labels": {}, "probe_error": "no result: the plugin is not installed"}
    # on the vendor's own cluster a node without devices may be there; on one the suite started
    # from a 2-node manifest, a third node is not the manifest's cluster
    assert judges.judge(checks()["TL-001"], more, MANIFEST, remote=True).outcome == "pass"
    assert judges.judge(checks()["TL-001"], more, manifest(nodes=1), remote=True).outcome == "pass"
    assert verdict("TL-001", more).outcome == "fail"


def test_description_checks_need_the_manifests_provider_and_expectation() -> None:
    bare = copy.deepcopy(MANIFEST)
    bare.pop("topology")
    for cid in ("TL-004", "TL-005", "TL-006", "TL-007", "TL-008"):
        assert verdict(cid, t.PASSING[cid], bare).outcome == "error", cid
    no_expectation = copy.deepcopy(MANIFEST)
    no_expectation["topology"].pop("expected")
    assert verdict("TL-006", t.PASSING["TL-006"], no_expectation).outcome == "error"
    # TL-006 compares with the manifest's expectation: one the description does not meet fails
    stricter = copy.deepcopy(MANIFEST)
    stricter["topology"]["expected"]["domains"] = ["interconnect", "rack"]
    assert "describes no rack domain" in str(verdict("TL-006", t.PASSING["TL-006"], stricter).reason)


def test_an_uncomparable_node_is_never_a_pass() -> None:
    record = copy.deepcopy(t.PASSING["TL-005"])
    record["nodes"][t.NODE_A]["description"]["devices"] = "four"     # schema-invalid: TL-004's failure
    assert verdict("TL-005", record).outcome == "error"
    assert verdict("TL-004", record).outcome == "fail"


def test_absent_values_compare_in_canonical_form() -> None:
    record = copy.deepcopy(t.PASSING["TL-011"])
    text = json.dumps(record).replace("-0123abcd", "-89abcdef")
    assert verdict("TL-011", json.loads(text)).outcome == "pass"
    # a value some node carries is not an absent one: the plan is not the check's
    real = json.loads(json.dumps(record).replace("conformance-absent-t-0123abcd", "NPU-X1"))
    assert verdict("TL-011", real).outcome == "fail"
    assert plans.canonical("in(NPU-X1,conformance-absent-t-0a1b2c3d)") == "in(NPU-X1,conformance-absent-t)"


def test_the_hosts_pending_work_is_not_judged_but_never_a_pass() -> None:
    record = copy.deepcopy(t.PASSING["TL-009"])
    run = next(r for p in record["probes"] for r in p["runs"] if "ran_on" in r)
    run.pop("ran_on")
    run["pending"] = True
    got = verdict("TL-009", record)
    assert got.outcome == "error" and str(got.reason).startswith("not judged")


def test_placement_runs_are_rebuilt_onto_the_plan() -> None:
    record = copy.deepcopy(t.PASSING["TL-009"])
    first = record["probes"][0]["runs"]
    first[0], first[-1] = first[-1], first[0]         # a pinned run recorded where a spread one is
    assert verdict("TL-009", record).outcome == "fail"
    record = copy.deepcopy(t.PASSING["TL-009"])
    record["probes"][0]["spread"] = 1                 # fewer spread tasks than the plan submits
    assert verdict("TL-009", record).outcome == "fail"


def test_tl010_needs_two_nodes() -> None:
    record = copy.deepcopy(t.PASSING["TL-010"])
    record["nodes"].pop(t.NODE_B)
    assert verdict("TL-010", record, manifest(nodes=1)).outcome == "error"


def test_oversize_group_is_not_run_when_one_domain_holds_every_device() -> None:
    record = copy.deepcopy(t.PASSING["TL-014"])
    for rec in record["nodes"].values():
        rec["labels"]["ray.io/accelerator-domain"] = "dom-a"
        rec["plugin_labels"]["ray.io/accelerator-domain"] = "dom-a"
        rec["description"]["domains"]["interconnect"] = "dom-a"
    record["oversize"] = None
    assert verdict("TL-014", record).outcome == "pass"
    record["oversize"] = {"devices": 9, "placed": False, "on": []}
    assert verdict("TL-014", record).outcome == "fail"


def test_unplaced_states_are_the_releases() -> None:
    record = copy.deepcopy(t.PASSING["TL-017"])
    record["reported"][0]["scheduling_state"] = "INFEASIBLE"
    record["reported"][1]["scheduling_state"] = None
    assert verdict("TL-017", record).outcome == "pass"
    check = checks()["TL-017"]
    got = judges.judge(check, record, MANIFEST, params={**check.params, "unplaced_states": ["NO_RESOURCES"]})
    assert got.outcome == "fail" and "INFEASIBLE" in str(got.reason)


def test_facts_of_needs_a_record_per_node() -> None:
    for bad in ({}, {"nodes": {}}, {"nodes": {"x": {"labels": {}}}}, {"nodes": {"x": {"devices": 1}}}):
        try:
            facts_of(bad, MANIFEST)
        except judges.MissingEvidence:
            continue
        raise AssertionError(bad)
