"""The recovery scenarios' nodes per failure domain (issue 48 item 2: conformance.catalog.node_sample
per_domain and its readers, verify's `nodes` line on the recovery checks) and their judges over each
node's record (conformance.report.per_node.each_node with every_covered, as the recovery judges of
FR-001..FR-005 wrap theirs): pure, on records shaped as a run writes them."""
from __future__ import annotations

import copy
from typing import Any

import pytest
from judged import MANIFEST
from judged.recovery import PASSING

from conformance.catalog import node_sample as ns
from conformance.catalog.data import load_suite_data
from conformance.catalog.labels import load_vocabulary
from conformance.report import judges
from conformance.report.judges import RunManifest

RACK, ZONE, DOMAIN = "ray.io/rack", "ray.io/availability-zone", "ray.io/accelerator-domain"
IDS = [f"{i:02x}" * 28 for i in range(16, 28)]   # 12 full node ids


def node(i: int, count: float = 4, **labels: str) -> dict[str, Any]:
    return {"node_id": IDS[i], "count": count, "labels": labels}


# 12 nodes: racks r0 (0-3), r1 (4-7), r2 (8-10), node 11 unlabelled; node 3 has no devices
NODES = ([node(i, **{RACK: "r0"}) for i in range(3)] + [node(3, 0, **{RACK: "r0"})]
         + [node(i, **{RACK: "r1"}) for i in range(4, 8)] + [node(i, **{RACK: "r2"}) for i in range(8, 11)] + [node(11)])


def test_the_domain_keys_are_the_declared_kinds_else_every_domain_key() -> None:
    vocab = load_vocabulary()
    assert ns.manifest_domain_keys({"topology": {"expected": {"domains": ["rack"]}}}, vocab) == [RACK]
    assert ns.manifest_domain_keys({"topology": {"expected": {"domains": ["zone", "rack"]}}}, vocab) == [ZONE, RACK]
    assert ns.manifest_domain_keys({"topology": {"expected": {"domains": ["interconnect"]}}}, vocab)[0] == DOMAIN
    every = [k.key for k in vocab.domain_keys()]
    assert RACK in every and DOMAIN in every
    for manifest in ({}, {"topology": {"expected": {}}}, {"topology": {"expected": {"domains": "rack"}}}, "x"):
        assert ns.manifest_domain_keys(manifest, vocab) == every   # none declared: the labels the plugin sets


def test_a_nodes_domain_is_its_keys_values_and_the_unlabelled_are_one() -> None:
    assert ns.domain_of({RACK: "r1", ZONE: "z", "other": "x"}, [ZONE, RACK]) == f"{ZONE}=z,{RACK}=r1"
    assert ns.domain_of({RACK: "r1"}, [ZONE, RACK]) == f"{RACK}=r1"
    assert ns.domain_of({}, [RACK]) == ns.domain_of(None, [RACK]) == ns.domain_of({RACK: ""}, [RACK]) == ""
    domains = ns.node_domains(NODES, 1, [RACK])
    assert IDS[3][:8] not in domains   # no device: no scenario can hold one there
    assert domains[IDS[11][:8]] == "" and len(domains) == 11
    assert ns.node_domains("x", 1, [RACK]) == {} and ns.node_domains([{"node_id": 3}], 1, [RACK]) == {}


def test_per_domain_takes_the_seeds_choice_in_every_domain() -> None:
    domains = ns.node_domains(NODES, 1, [RACK])
    chosen = ns.per_domain(domains, 1234, 1)
    assert len(chosen) == 4 and {domains[n] for n in chosen} == {f"{RACK}=r0", f"{RACK}=r1", f"{RACK}=r2", ""}
    assert chosen == ns.per_domain(dict(reversed(list(domains.items()))), 1234, 1)   # order-free
    two = ns.per_domain(domains, 1234, 2)   # two per domain, all of a smaller one (the unlabelled node)
    assert len(two) == 7 and set(chosen) <= set(two)
    assert len(ns.per_domain(domains, 1234, 0)) == 4    # at least one per domain whatever the size
    assert ns.per_domain({}, 1, 1) == []


def test_no_node_of_a_domain_is_always_the_one() -> None:
    """Not the same node whatever the seed: every node of a rack is some seed's choice."""
    domains = ns.node_domains(NODES, 1, [RACK])
    hit = {n for seed in range(200) for n in ns.per_domain(domains, seed, 1)}
    assert hit == set(domains)


# ------------------------------------------------------------------ verify's `nodes` line on recovery

SEED = 99


def _report(mode: str = "all", per_node: list[str] | None = None, covered: list[str] | None = None,
            seed: Any = SEED) -> dict[str, Any]:
    want = ns.per_domain(ns.node_domains(NODES, 1, [RACK]), SEED, 1)
    per_node = want if per_node is None else per_node
    record = {"mode": mode, "seed": seed, "size": 1} if seed is not None else {"mode": mode}
    checks = [{"id": cid, "outcome": "pass", "metrics": {"per_node": {n: {} for n in per_node},
                                                         "node_coverage": {"nodes": sorted(covered or per_node)}}}
              for cid in ns.RECOVERY_CHECKS]
    return {"selection": {"nodes": record}, "environment": {"devices": {"nodes": NODES}}, "checks": checks}


POLICY = ns.NodePolicy(sample_size=1)


def test_the_seeds_choice_per_domain_holds() -> None:
    problems, summary = ns.choice_problems(_report(), POLICY, [RACK])
    assert problems == [] and f"{len(ns.RECOVERY_CHECKS)} recovery check(s) ran on seed {SEED}'s choice of 1 node(s) per failure domain" in summary
    problems, _ = ns.choice_problems(_report("sample"), POLICY, [RACK])
    assert problems == []
    assert ns.choice_problems(_report(), POLICY)[0] == []   # without keys: the line as before


def test_a_dropped_or_swapped_node_is_refused() -> None:
    want = ns.per_domain(ns.node_domains(NODES, 1, [RACK]), SEED, 1)
    problems, _ = ns.choice_problems(_report(per_node=want[1:]), POLICY, [RACK])
    assert len(problems) == len(ns.RECOVERY_CHECKS) and f"node(s) {[want[0]]} have no scenario record" in problems[0]
    other = next(n for n in ns.node_domains(NODES, 1, [RACK]) if n not in want)
    problems, _ = ns.choice_problems(_report(per_node=[other, *want[1:]]), POLICY, [RACK])
    assert problems and "seed 99's choice of 1 per failure domain among 11 node(s) in 4 domain(s)" in problems[0]
    problems, _ = ns.choice_problems(_report(covered=[*want, other]), POLICY, [RACK])   # coverage beyond the choice
    assert problems and "coverage" in problems[0]
    report = _report()
    del report["checks"][0]["metrics"]["per_node"]
    assert "records no per-node scenario evidence" in ns.choice_problems(report, POLICY, [RACK])[0][0]


def test_a_seed_is_needed_to_hold_the_choice_and_a_bad_one_is_refused() -> None:
    problems, summary = ns.choice_problems(_report(seed=None), POLICY, [RACK])
    assert problems == [] and "the run records no seed" in summary
    assert ns.choice_problems(_report(seed="x"), POLICY, [RACK])[0] == \
        ["selection.nodes.seed is 'x'; expected a whole number below 2**32"]
    report = _report()
    report["selection"]["nodes"]["size"] = 3
    assert "selection.nodes.size is '3'" in ns.choice_problems(report, POLICY, [RACK])[0][0]


# ------------------------------------------------------------------ the judges over each node's record

# one step over its bound in a node's record, and the phrase the judge says it with
OVER: dict[str, tuple[dict[str, Any], str]] = {
    "FR-001": ({"release_s": 31.0}, "over its 30 s bound"),
    "FR-002": ({"release_s": 31.0}, "over its 30 s bound"),
    "FR-003": ({"restarts": [{**PASSING["FR-003"]["restarts"][0], "restart_s": 61.0}, PASSING["FR-003"]["restarts"][1]]},
               "over its 60 s bound"),
    "FR-004": ({"rounds": [{**PASSING["FR-004"]["rounds"][0], "round_s": 95.0}, *PASSING["FR-004"]["rounds"][1:]]},
               "over its 90 s bound"),
    "FR-005": ({"retry_done_s": 61.0}, "over its 60 s bound"),
}


def test_every_recovery_check_per_node_has_its_case() -> None:
    assert sorted(OVER) == sorted(ns.RECOVERY_CHECKS)


def _record(cid: str, nodes: tuple[str, ...] = ("aaaaaaaa", "bbbbbbbb"), bad: str | None = None) -> dict[str, Any]:
    """The check's passing evidence recorded over `nodes` (decide_per_node: per_node, the top
    level a copy of the first node's), one node's step over its bound when `bad` (OVER)."""
    metrics = copy.deepcopy(PASSING[cid])
    own = {k: v for k, v in metrics.items() if k not in ("env_var", "scenarios")}
    per_node = {n: {**copy.deepcopy(own), "node": n, **(copy.deepcopy(OVER[cid][0]) if n == bad else {})} for n in nodes}
    return {**metrics, **per_node[nodes[0]], "per_node": per_node,
            "node_coverage": {"nodes": sorted(nodes), "alive": 3, "mode": "all"}}


def _judge(cid: str, metrics: dict[str, Any]) -> judges.Verdict:
    check = load_suite_data().checklist.by_id()[cid]
    return judges.judge(check, metrics, RunManifest(MANIFEST, False))


@pytest.mark.parametrize("cid", sorted(ns.RECOVERY_CHECKS))
def test_each_nodes_record_is_judged(cid: str) -> None:
    assert _judge(cid, _record(cid)).outcome == "pass"
    verdict = _judge(cid, _record(cid, bad="bbbbbbbb"))   # the top level is a passing node's copy
    assert verdict.outcome == "fail" and "node bbbbbbbb:" in verdict.reason and OVER[cid][1] in verdict.reason, verdict


@pytest.mark.parametrize("cid", sorted(ns.RECOVERY_CHECKS))
def test_a_covered_node_without_its_record_is_refused(cid: str) -> None:
    metrics = _record(cid)
    del metrics["per_node"]["bbbbbbbb"]
    verdict = _judge(cid, metrics)
    assert verdict.outcome == "fail" and "node(s) ['bbbbbbbb'] of its node_coverage have no per_node record" in verdict.reason
    metrics = _record(cid)
    del metrics["node_coverage"]
    assert "per_node beside no node_coverage record" in _judge(cid, metrics).reason


def test_a_record_of_one_node_without_per_node_is_judged_as_before() -> None:
    assert _judge("FR-001", copy.deepcopy(PASSING["FR-001"])).outcome == "pass"
