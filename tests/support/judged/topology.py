"""The topology area's judged checks: evidence each judge passes and evidence it fails.

PASSING: check id -> evidence its judge passes under the shipped params and judged.MANIFEST
(the hand-made reports of the signing tests carry it). FAILING: check id -> records its judge
must not pass (each a way the check's evidence shows a failure). tests/unit/test_judges.py
holds every judge to both tables.

The cluster: two nodes of 4 NPU-X1 devices each, in interconnect domains dom-a and dom-b, as
judged.MANIFEST declares (its topology.expected: 4 devices, fully connected). The records are
built the way the live checks build them (evidence.record_nodes, the placement plans); the
placement runs are those of a scheduler that does everything right.
"""
from __future__ import annotations

import copy
from typing import Any, Callable

from conformance.areas.topology import plans
from conformance.areas.topology.evidence import FIELDS, FULL, NONE, record_nodes
from conformance.areas.topology.facts import NodeFacts
from conformance.areas.topology.placement import judge_submissions, nodes_labels, submissions
from conformance.areas.topology.selectors import TYPE_KEY, truth_labels
from conformance.catalog.labels import load_vocabulary

TYPE, RESOURCE, DOMAIN_KEY = "NPU-X1", "NPU", "ray.io/accelerator-domain"
# the hand-made run's nodes (tests/support/signing_support._node_id: judged/device.py NODES in full),
# which verify holds TL-001's node records to (conformance/signing/same_measurement.identity_problems)
NODE_A, NODE_B = "a1b2c3d4" + "0" * 48, "e5f6a7b8" + "0" * 48


def description(domain: str) -> dict[str, Any]:
    ids = [str(i) for i in range(4)]
    return {"schema_version": 1, "accelerator_type": TYPE, "devices": [{"id": i} for i in ids],
            "links": [{"a": a, "b": b, "kind": "npulink", "bandwidth_gbps": 100.0}
                      for n, a in enumerate(ids) for b in ids[n + 1:]],
            "domains": {"interconnect": domain}}


def node(node_id: str, domain: str) -> NodeFacts:
    return NodeFacts(node_id=node_id, ray_labels={TYPE_KEY: TYPE, DOMAIN_KEY: domain}, device_count=4.0,
                     ray_ids=[str(i) for i in range(4)], manager_type=TYPE, plugin_labels={DOMAIN_KEY: domain},
                     description=description(domain), provider_declared=True)


FACTS = [node(NODE_A, "dom-a"), node(NODE_B, "dom-b")]


def nodes_record(mode: str) -> dict[str, Any]:
    return {"resource": RESOURCE, "nodes": record_nodes(FACTS, mode), "notes": []}


def absent(tag: str) -> str:
    return f"{plans.ABSENT_PREFIX}{tag}-0123abcd"


def placement_record(check_id: str) -> dict[str, Any]:
    """What the check records when every submission runs where the labels and the truth agree."""
    vocabulary = load_vocabulary()
    labels = nodes_labels(FACTS)
    truth = {f.node_id: truth_labels(f, vocabulary, TYPE) for f in FACTS}
    probes = plans.PLANS[check_id](FACTS, TYPE, plans.published_domains(FACTS, vocabulary), truth, absent)
    subs = submissions(probes, labels, truth)
    for s in subs:
        fits = sorted(s.label_nodes & s.truth_nodes)
        s.ran_on = fits[0] if fits else None
    result = judge_submissions(probes, subs, labels, truth, run_timeout=20.0, pending_wait=3.0)
    assert not result.violations and not result.host_pending, result
    return {**nodes_record(FIELDS), "run_timeout_s": 20.0, "submitted": result.submitted,
            "probes": [plans.probe_record(p, runs) for p, runs in zip(probes, result.runs)]}


def changed(record: dict[str, Any], edit: Callable[[dict[str, Any]], Any]) -> dict[str, Any]:
    out = copy.deepcopy(record)
    edit(out)
    return out


def cluster_lies(record: dict[str, Any]) -> list[dict[str, Any]]:
    """The record held to the manifest: a node dropped, another device count, another resource,
    no node at all (Ray observed nothing)."""
    return [changed(record, lambda r: r["nodes"].pop(NODE_B)),
            changed(record, lambda r: r.update(nodes={})),
            changed(record, lambda r: r["nodes"][NODE_A].update(devices=2)),
            changed(record, lambda r: r.update(resource="GPU")),
            # a node zeroed (kept in the record, without its devices and ids): fewer nodes with devices
            # than the manifest's declared environment gives
            changed(record, lambda r: r["nodes"][NODE_A].update(devices=0, ray_ids=[])),
            # a node the manifest's 2-node cluster does not have
            changed(record, lambda r: r["nodes"].__setitem__("c" * 56, {"devices": 0, "labels": {}})),
            # the plugin's labels dropped from the record ("the plugin returned none")
            changed(record, lambda r: [n.update(plugin_labels={}) for n in r["nodes"].values()])]


def node_a(r: dict[str, Any]) -> dict[str, Any]:
    return r["nodes"][NODE_A]


LABELS, DESCRIBED, FULL_RECORD = nodes_record(NONE), nodes_record(FIELDS), nodes_record(FULL)
PLACEMENTS = {cid: placement_record(cid) for cid in plans.PLANS}


def _groups() -> dict[str, dict[str, Any]]:
    vocabulary = load_vocabulary()
    labels = nodes_labels(FACTS)
    truth = {f.node_id: truth_labels(f, vocabulary, TYPE) for f in FACTS}
    groups = [{"selector": sel, "bundles": k, "ready": True, "wait_s": 20.0,
               "on": sorted(n[:8] for n in labels if all(truth[n].get(key) == v for key, v in sel.items()))}
              for sel, k, _ in plans.bundle_plan(FACTS, TYPE, plans.published_domains(FACTS, vocabulary), labels, truth)]
    reported = [{"selector": sel, "ready": False, "on": [], "state": "PENDING", "scheduling_state": "NO_RESOURCES"}
                for sel in plans.unplaced_selectors(TYPE, truth, absent)]
    return {
        "TL-013": {**DESCRIBED, "groups": groups},
        "TL-014": {**DESCRIBED, "key": DOMAIN_KEY, "capacity_by_domain": {"dom-a": 4, "dom-b": 4},
                   "packed": {"devices": 2, "ready": True, "on": [NODE_A[:8], NODE_A[:8]]},
                   "oversize": {"devices": 5, "placed": False, "on": [], "capacity_by_label": {"dom-a": 4, "dom-b": 4},
                                "wait_s": 3.0}},
        "TL-017": {**DESCRIBED, "reported": reported},
    }


GROUPS = _groups()

PASSING: dict[str, dict[str, Any]] = {
    "TL-001": LABELS, "TL-002": LABELS, "TL-003": LABELS,
    "TL-004": {**FULL_RECORD, "described_nodes": 2}, "TL-005": FULL_RECORD, "TL-006": FULL_RECORD,
    "TL-007": DESCRIBED, "TL-008": DESCRIBED,
    **PLACEMENTS, **GROUPS,
}


def _first_run(r: dict[str, Any], kind: str) -> dict[str, Any]:
    return next(run for p in r["probes"] for run in p["runs"] if run["kind"] == kind)


def _placement_lies(cid: str) -> list[dict[str, Any]]:
    good = PLACEMENTS[cid]
    pinned_ran = next(run for p in good["probes"] for run in p["runs"] if run["kind"] == "pinned" and "ran_on" in run) \
        if any("ran_on" in run for p in good["probes"] for run in p["runs"] if run["kind"] == "pinned") else None
    out = cluster_lies(good) + [
        changed(good, lambda r: r["probes"].pop()),                          # a selector dropped
        changed(good, lambda r: r["probes"][0]["runs"].pop()),               # a run dropped
        changed(good, lambda r: r["probes"][0].update(actor=not r["probes"][0]["actor"])),
        # the type the record exercised is not the manifest's
        changed(good, lambda r: [n["labels"].update({TYPE_KEY: "NPU-X9"}) or n.update(manager_type="NPU-X9")
                                 for n in r["nodes"].values()]),
        changed(good, lambda r: _first_run(r, "spread" if r["probes"][0]["spread"] else "actor")
                .update(ran_on="ffffffff", pending=None)),   # a node not recorded
    ]
    if any(run["kind"] == "pinned" for p in good["probes"] for run in p["runs"]):   # a pinned node dropped
        out.append(changed(good, lambda r: _first_run(r, "pinned").update(pin="ffffffff")))
    if pinned_ran is not None:   # a pinned run that ran elsewhere than its node
        other = NODE_B[:8] if pinned_ran["pin"] == NODE_A[:8] else NODE_A[:8]
        out.append(changed(good, lambda r: next(run for p in r["probes"] for run in p["runs"]
                                                if run == pinned_ran).update(ran_on=other)))
    pending = [run for p in good["probes"] for run in p["runs"] if run.get("pending")]
    if pending:   # work no node should take recorded as run somewhere
        out.append(changed(good, lambda r: next(run for p in r["probes"] for run in p["runs"] if run.get("pending"))
                           .update(ran_on=NODE_A[:8], pending=None)))
    placed = [run for p in good["probes"] for run in p["runs"] if "ran_on" in run]
    if placed:   # work that should run recorded as pending (or failed)
        out.append(changed(good, lambda r: _drop_ran_on_pending(next(run for p in r["probes"] for run in p["runs"]
                                                                     if "ran_on" in run))))
        out.append(changed(good, lambda r: _failed_instead(next(run for p in r["probes"] for run in p["runs"]
                                                                if "ran_on" in run))))
    return out


def _failed_instead(run: dict[str, Any]) -> None:
    run.pop("ran_on")
    run["failed"] = "RayTaskError: boom"


def _drop_ran_on_pending(run: dict[str, Any]) -> None:
    run.pop("ran_on")
    run["pending"] = True


FAILING: dict[str, list[dict[str, Any]]] = {
    "TL-001": cluster_lies(LABELS) + [
        changed(LABELS, lambda r: node_a(r)["labels"].update({TYPE_KEY: "NPU-X2"})),
        changed(LABELS, lambda r: node_a(r)["labels"].pop(TYPE_KEY)),
        changed(LABELS, lambda r: node_a(r).update(manager_type="NPU-X2")),
        changed(LABELS, lambda r: r["nodes"].update({"c" * 56: {"devices": 0, "labels": {TYPE_KEY: TYPE},
                                                               "manager_type": TYPE, "ray_ids": []}})),
        changed(LABELS, lambda r: r["nodes"].update({"c" * 56: {"devices": 0, "labels": {}, "manager_type": None,
                                                               "ray_ids": [], "plugin_labels": {TYPE_KEY: TYPE}}})),
        changed(LABELS, lambda r: node_a(r).update(probe_error="no result within 45 s")),
    ],
    "TL-002": cluster_lies(LABELS) + [
        changed(LABELS, lambda r: node_a(r)["plugin_labels"].update({"ray.io/node-id": "x"})),
        changed(LABELS, lambda r: node_a(r)["plugin_labels"].update({"ray.io/accelerator-count": "four"})),
        changed(LABELS, lambda r: node_a(r)["plugin_labels"].update({"vendor.example.com/fw": "1.2 beta"})),
        changed(LABELS, lambda r: node_a(r).update(plugin_labels_error="RuntimeError: driver")),
    ],
    "TL-003": cluster_lies(LABELS) + [
        changed(LABELS, lambda r: node_a(r)["plugin_labels"].update({"vendor.example.com/fw": "1.2"})),
        changed(LABELS, lambda r: node_a(r)["labels"].pop(DOMAIN_KEY)),
    ],
    "TL-004": cluster_lies(FULL_RECORD) + [
        changed(FULL_RECORD, lambda r: node_a(r)["description"]["links"][0].update(b="9")),
        changed(FULL_RECORD, lambda r: node_a(r)["description"]["links"][0].update(bandwidth_gbps=0)),
        changed(FULL_RECORD, lambda r: node_a(r)["description"]["devices"].append({"id": "0"})),
        changed(FULL_RECORD, lambda r: node_a(r).pop("description")),
        changed(FULL_RECORD, lambda r: node_a(r).update(description_error="ValueError: no driver")),
    ],
    "TL-005": cluster_lies(FULL_RECORD) + [
        changed(FULL_RECORD, lambda r: node_a(r).update(ray_ids=["1", "2", "3", "4"])),
        changed(FULL_RECORD, lambda r: node_a(r).pop("ray_ids")),
        changed(FULL_RECORD, lambda r: node_a(r)["description"].update(accelerator_type="NPU-X2")),
        changed(FULL_RECORD, lambda r: node_a(r).pop("description")),
    ],
    "TL-006": cluster_lies(FULL_RECORD) + [
        changed(FULL_RECORD, lambda r: node_a(r)["description"]["links"].pop()),
        changed(FULL_RECORD, lambda r: node_a(r)["description"]["devices"].pop()),   # 3 of the 4 expected
    ],
    "TL-007": cluster_lies(DESCRIBED) + [
        changed(DESCRIBED, lambda r: node_a(r)["labels"].update({DOMAIN_KEY: "dom-b"})),
        changed(DESCRIBED, lambda r: node_a(r)["labels"].update({"ray.io/accelerator-count": "8"})),
        changed(DESCRIBED, lambda r: node_a(r)["plugin_labels"].update({"ray.io/rack": "rack-1"})),
    ],
    "TL-008": cluster_lies(DESCRIBED) + [
        changed(DESCRIBED, lambda r: node_a(r)["labels"].pop(DOMAIN_KEY)),
        changed(DESCRIBED, lambda r: node_a(r)["description"]["domains"].update(rack="rack-1")),
        changed(DESCRIBED, lambda r: [n["description"].pop("domains") for n in r["nodes"].values()]),
    ],
    **{cid: _placement_lies(cid) for cid in plans.PLANS},
    "TL-013": cluster_lies(GROUPS["TL-013"]) + [
        changed(GROUPS["TL-013"], lambda r: r["groups"].pop()),
        changed(GROUPS["TL-013"], lambda r: r["groups"][0].update(ready=False, on=[])),
        changed(GROUPS["TL-013"], lambda r: r["groups"][0].update(bundles=1)),
        changed(GROUPS["TL-013"], lambda r: r["groups"][1].update(on=[NODE_B[:8]])),
        changed(GROUPS["TL-013"], lambda r: r["groups"][0].update(on=[NODE_A[:8], NODE_A[:8]])),
        changed(GROUPS["TL-013"], lambda r: r["groups"][0].update(on=[NODE_A[:8]])),
    ],
    "TL-014": cluster_lies(GROUPS["TL-014"]) + [
        changed(GROUPS["TL-014"], lambda r: r["oversize"].update(placed=True, on=[NODE_A[:8]] * 4 + [NODE_B[:8]])),
        changed(GROUPS["TL-014"], lambda r: r["packed"].update(on=[NODE_A[:8], NODE_B[:8]])),
        changed(GROUPS["TL-014"], lambda r: r["packed"].update(ready=False, on=[])),
        changed(GROUPS["TL-014"], lambda r: r.update(oversize=None)),
        changed(GROUPS["TL-014"], lambda r: r["oversize"].update(devices=9)),
        changed(GROUPS["TL-014"], lambda r: r.update(key="ray.io/rack")),
        changed(GROUPS["TL-014"], lambda r: r["packed"].update(devices=1, on=[NODE_A[:8]])),
    ],
    "TL-017": cluster_lies(GROUPS["TL-017"]) + [
        changed(GROUPS["TL-017"], lambda r: r["reported"][0].update(ready=True, on=[NODE_A[:8]])),
        changed(GROUPS["TL-017"], lambda r: r["reported"][1].update(state="CREATED")),
        changed(GROUPS["TL-017"], lambda r: r["reported"][0].update(scheduling_state="SCHEDULED")),
        changed(GROUPS["TL-017"], lambda r: r["reported"].pop()),
        changed(GROUPS["TL-017"], lambda r: r["reported"][1]["selector"].pop("ray.io/node-id")),
    ],
}
