"""Every node's record judged, not the worst one's alone (issue 48).

A check that ran its scenario on several nodes (the device visibility checks under `run --nodes
all` or the seed's sample, the recovery scenarios on the seed's failure-domain choice:
conformance.run.nodes) records each node's evidence under `per_node` (short id -> the
evidence its judge reads) and one node's evidence at the top level (CheckContext.decide_per_node:
the first failing node's). A judge that read only the top level would pass a report whose
per_node holds a failing node beside a passing copy on top, so `each_node` wraps a live judge:
the top-level record and every per_node entry (over the shared fields, e.g. the resource) are
judged alike, each entry's counts held to the release's params as run_judge holds the top's, and
the verdict names every failing node. A record without per_node (a run of one node, a report of
an older release) is judged as before. Which nodes per_node must name (all of them, or the seed's
choice) is the `nodes` line of verify (conformance.catalog.node_sample): a judge does not see the
run's node list; with `every_covered` it holds per_node to name every node the check's coverage
names (a recovery check: a scenario record for each node it says it exercised).

Core, since two areas' judges wrap theirs with it (the device and recovery areas).

Pure: no Ray, no I/O.
"""
from __future__ import annotations

import functools
from typing import Any, Callable, Mapping

from conformance.report.judges import ERROR, FAIL, PASS, MissingEvidence, Verdict, number, param_value, path_of

PER_NODE = "per_node"       # the metrics key decide_per_node writes
SHOWN = 4                   # failing nodes named in full in a verdict before "and k more"

Metrics = Mapping[str, Any]
Judge = Callable[[Metrics, Mapping[str, Any], Mapping[str, Any]], Verdict]


def _mapping(value: object, where: str) -> Mapping[str, Any]:
    if not isinstance(value, Mapping):
        raise MissingEvidence(f"{where} is missing or not an object")
    return value


def _count_problem(entry: Mapping[str, Any], params: Mapping[str, Any], counts: tuple[tuple[str, str], ...]) -> str | None:
    for metric, name in counts:
        got, want = number({metric: path_of(entry, metric)}, metric), param_value(params, name)
        if got != want:
            return f"{metric} is {got:g} but the release's params say {name} = {want:g}"
    return None


def node_verdicts(judge: Judge, m: Metrics, p: Mapping[str, Any], manifest: Mapping[str, Any],
                  counts: tuple[tuple[str, str], ...] = ()) -> dict[str, Verdict]:
    """Each per_node entry's verdict under `judge` (short id -> Verdict), the entry over the
    record's shared fields; {} when the record has no per_node. Evidence of a node that is not
    what a probe writes raises MissingEvidence naming the node."""
    if PER_NODE not in m:
        return {}
    nodes = _mapping(m.get(PER_NODE), f"metric {PER_NODE}")
    if not nodes:
        raise MissingEvidence(f"metric {PER_NODE} names no node")
    shared = {k: v for k, v in m.items() if k != PER_NODE}
    out: dict[str, Verdict] = {}
    for node, entry in sorted(nodes.items(), key=lambda kv: str(kv[0])):
        entry = _mapping(entry, f"{PER_NODE}.{node}")
        try:
            wrong = _count_problem(entry, p, counts)
            out[str(node)] = Verdict(FAIL, wrong) if wrong else judge({**shared, **entry}, p, manifest)
        except MissingEvidence as exc:
            raise MissingEvidence(f"{PER_NODE}.{node}: {exc}") from None
    return out


def _coverage_problem(m: Metrics, nodes: Mapping[str, Verdict], every_covered: bool = False) -> str | None:
    """per_node names only nodes the check's coverage record names (when it keeps one), and with
    `every_covered` each of them."""
    record = m.get("node_coverage")
    covered = record.get("nodes") if isinstance(record, Mapping) else None
    if not isinstance(covered, list):
        return "per_node beside no node_coverage record of its nodes" if every_covered else None
    extra = sorted(set(nodes) - set(map(str, covered)))
    if extra:
        return f"per_node names node(s) {extra[:SHOWN]} its node_coverage does not"
    missing = sorted(set(map(str, covered)) - set(nodes)) if every_covered else []
    return f"node(s) {missing[:SHOWN]} of its node_coverage have no per_node record" if missing else None


def each_node(counts: tuple[tuple[str, str], ...] = (), every_covered: bool = False) -> Callable[[Judge], Judge]:
    """Wrap a live judge so it judges the top-level record and every per_node entry (`counts`: the
    counts its JUDGES.rule holds to the params, held per node too); fail naming the failing nodes.
    `every_covered`: every node the coverage record names has its per_node entry."""
    def wrap(judge: Judge) -> Judge:
        @functools.wraps(judge)
        def judged(m: Metrics, p: Mapping[str, Any], manifest: Mapping[str, Any]) -> Verdict:
            top = judge(m, p, manifest)
            nodes = node_verdicts(judge, m, p, manifest, counts)
            if not nodes:
                return top
            bad = {n: v for n, v in nodes.items() if v.outcome != PASS}
            problems = [f"node {n}: {v.reason}" for n, v in list(bad.items())[:SHOWN]]
            if len(bad) > SHOWN:
                problems.append(f"and {len(bad) - SHOWN} more node(s)")
            wrong = _coverage_problem(m, nodes, every_covered)
            if wrong:
                problems.append(wrong)
            if top.outcome != PASS and not bad:
                problems.insert(0, f"the top-level record: {top.reason}")
            if not problems:
                return Verdict(PASS, f"{top.reason} (each of {len(nodes)} node(s))")
            seen = {v.outcome for v in bad.values()} | ({top.outcome} - {PASS})
            outcome = FAIL if FAIL in seen or wrong else ERROR
            return Verdict(outcome, f"{len(bad)} of {len(nodes)} node(s) fail: " + "; ".join(problems))
        return judged
    return wrap
