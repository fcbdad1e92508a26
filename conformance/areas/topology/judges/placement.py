"""The topology judges of label selectors: the plan rebuilt on the recorded nodes, every run
judged against the nodes' labels and truth."""
from __future__ import annotations

from typing import Any, Mapping, Sequence

from conformance.areas.topology import plans
from conformance.areas.topology.evidence import expected, facts_of
from conformance.areas.topology.facts import NodeFacts
from conformance.areas.topology.judges.common import JUDGES, NODE_RECORD, _failed, _nodes, _resolve, _truth, _vocabulary
from conformance.areas.topology.placement import SelectorProbe, _Sub, judge_submissions, nodes_labels, submissions
from conformance.report.judges import ERROR, FAIL, PASS, MissingEvidence, Verdict, param_value


# ---------------------------------------------------------------------------------------------- placement
def _chain(raw: object) -> list[dict[str, str]]:
    if not isinstance(raw, list) or not raw or not all(isinstance(s, Mapping) for s in raw):
        raise MissingEvidence("a probe's chain is not a list of selectors")
    return [{str(k): str(v) for k, v in s.items()} for s in raw]


def _flag(rec: Mapping[str, Any], key: str) -> bool:
    value = rec.get(key)
    if not isinstance(value, bool):
        raise MissingEvidence(f"a probe's {key} is not recorded")
    return value


def _placements(m: Mapping[str, Any], p: Mapping[str, Any], manifest: Mapping[str, Any], check_id: str,
                what: str) -> Verdict:
    """The placement checks' one rule: the record's probes are the check's plan on the recorded
    nodes, each submitted as often as the plan says, and no run landed, failed or stayed pending
    against the nodes' labels and truth (placement.judge_submissions, the live check's rule)."""
    facts, problems = _nodes(m, manifest, probed=False)
    failed = _failed("the record is not the manifest's cluster", problems)
    if failed:
        return failed
    vocabulary, kind = _vocabulary(), expected(manifest)[0]
    labels, truth = nodes_labels(facts), _truth(facts, vocabulary, kind)
    want = plans.PLANS[check_id](facts, kind, plans.published_domains(facts, vocabulary), truth,
                                 lambda tag: f"{plans.ABSENT_PREFIX}{tag}")
    raw = m.get("probes")
    if not isinstance(raw, list):
        raise MissingEvidence("metric probes is missing or not a list")
    probes, subs = [], []
    for rec in raw:
        if not isinstance(rec, Mapping) or not isinstance(rec.get("runs"), list):
            raise MissingEvidence("a probe is recorded without its runs")
        spread = rec.get("spread")
        if isinstance(spread, bool) or not isinstance(spread, int):
            raise MissingEvidence("a probe's spread is not recorded")
        probe = SelectorProbe(_chain(rec.get("chain")), spread_tasks=spread, actor=_flag(rec, "actor"),
                              pinned=_flag(rec, "pinned"))
        probes.append(probe)
        subs.append((probe, rec["runs"]))
    shapes = [plans.shape(x) for x in probes]
    missing = [x.text for x in want if plans.shape(x) not in shapes]
    extra = [x.text for x in probes if plans.shape(x) not in [plans.shape(w) for w in want]]
    if missing or extra or len(probes) != len(want):
        return Verdict(FAIL, f"the recorded probes are not the ones {check_id} submits on the recorded nodes: "
                             f"missing {missing[:3]}, not in its plan {extra[:3]}, {len(probes)} recorded of {len(want)}")
    rebuilt: list[_Sub] = []
    for probe, runs in subs:
        plan = submissions([probe], labels, truth)
        wrong = _runs_onto(plan, runs, facts, probe.text)
        if wrong:
            return Verdict(FAIL, wrong)
        rebuilt += plan
    result = judge_submissions(probes, rebuilt, labels, truth, run_timeout=_wait(m, p, "run_timeout_s"),
                               pending_wait=param_value(p, "pending_wait_s"))
    if result.violations:
        more = f" (+{len(result.violations) - 2} more)" if len(result.violations) > 2 else ""
        return Verdict(FAIL, f"{what}: " + " | ".join(result.violations[:2]) + more)
    if result.host_pending:
        return Verdict(ERROR, f"not judged: {result.host_pending[0]} (Ray's machinery, not the plugin's labels)")
    return Verdict(PASS, f"{result.submitted} submission(s) of {len(probes)} selector(s) ran where the labels and the "
                         "description say")


def _wait(m: Mapping[str, Any], p: Mapping[str, Any], name: str) -> float:
    """The wait the check recorded using (the release's param stretched by the host), never less
    than the release's param."""
    bound = param_value(p, name)
    recorded = m.get(name)
    return max(bound, float(recorded)) if isinstance(recorded, (int, float)) and not isinstance(recorded, bool) \
        else bound


def _runs_onto(plan: list[_Sub], runs: list[Any], facts: Sequence[NodeFacts], text: str) -> str | None:
    """Put each recorded run onto the submission the plan makes (same kind, same pinned node, in
    order); a reason when the runs are not the plan's (a dropped run, a pinned node missing)."""
    if len(runs) != len(plan):
        return f"selector {text}: {len(runs)} run(s) recorded; the check submits {len(plan)}"
    for sub, run in zip(plan, runs):
        if not isinstance(run, Mapping) or run.get("kind") != sub.kind:
            return f"selector {text}: a run is recorded as {run!r}; the check submits a {sub.kind} one there"
        if sub.node is not None and _resolve(run.get("pin"), facts) != sub.node:
            return f"selector {text}: a pinned run names node {run.get('pin')!r}; the check pins {sub.node[:8]} there"
        if "ran_on" in run:
            sub.ran_on = _resolve(run["ran_on"], facts)
        elif run.get("failed"):
            sub.failed = str(run["failed"])
        elif run.get("pending") is not True:
            raise MissingEvidence(f"selector {text}: a run records neither where it ran nor that it stayed pending")
    return None


# what the four placement judges read: the node record, the probes, and two params
_PLACEMENT_NEEDS = NODE_RECORD + ("probes",)
_PLACEMENT_PARAMS = ("run_timeout_s", "pending_wait_s")


@JUDGES.rule(needs=_PLACEMENT_NEEDS, params=_PLACEMENT_PARAMS)
def selectors_place_only_on_matching_nodes(m: Mapping[str, Any], p: Mapping[str, Any],
                                           manifest: Mapping[str, Any]) -> Verdict:
    """TL-009: the type and every published domain, spread, pinned to each node, as an actor."""
    return _placements(m, p, manifest, "TL-009", "a label selector placed work on the wrong node")


@JUDGES.rule(needs=_PLACEMENT_NEEDS, params=_PLACEMENT_PARAMS)
def negative_selectors_avoid_matching_nodes(m: Mapping[str, Any], p: Mapping[str, Any],
                                            manifest: Mapping[str, Any]) -> Verdict:
    """TL-010: "!v" and "!in(...)" on the type and the published domains (two nodes at least)."""
    facts = facts_of(m, manifest)
    if len(facts) < 2:
        raise MissingEvidence("fewer than 2 nodes recorded (the check is not applicable)")
    return _placements(m, p, manifest, "TL-010", "a negative selector placed work wrongly")


@JUDGES.rule(needs=_PLACEMENT_NEEDS, params=_PLACEMENT_PARAMS)
def unmatched_selectors_stay_pending(m: Mapping[str, Any], p: Mapping[str, Any], manifest: Mapping[str, Any]) -> Verdict:
    """TL-011: absent values, and the type or a domain restricted to the nodes without it."""
    return _placements(m, p, manifest, "TL-011", "a selector no node should match was placed")


@JUDGES.rule(needs=_PLACEMENT_NEEDS, params=_PLACEMENT_PARAMS)
def fallback_strategy_is_honoured(m: Mapping[str, Any], p: Mapping[str, Any], manifest: Mapping[str, Any]) -> Verdict:
    """TL-012: absent primaries falling back to the type, or to a published domain."""
    return _placements(m, p, manifest, "TL-012", "fallback_strategy placed work on the wrong node")


@JUDGES.rule(needs=_PLACEMENT_NEEDS, params=_PLACEMENT_PARAMS)
def in_and_multi_key_selectors_place_rightly(m: Mapping[str, Any], p: Mapping[str, Any],
                                             manifest: Mapping[str, Any]) -> Verdict:
    """TL-015: in(...) on the type and the domains; the type AND a domain (or the device nodes)."""
    return _placements(m, p, manifest, "TL-015", "an in() or multi-key selector placed work wrongly")


@JUDGES.rule(needs=_PLACEMENT_NEEDS, params=_PLACEMENT_PARAMS)
def feasible_primary_wins_over_fallback(m: Mapping[str, Any], p: Mapping[str, Any],
                                        manifest: Mapping[str, Any]) -> Verdict:
    """TL-016: a feasible primary (the type, a domain) with a fallback that matches the others."""
    return _placements(m, p, manifest, "TL-016", "a feasible primary selector lost to its fallback")
