"""The topology area's judges: each check's recorded evidence + the release's params -> its outcome.

The checklist names a check's judge (`judge: <function name>`); the live check decides with it
(CheckContext.decide) and `verify` decides again with it (conformance/report/judges.py says the
rules every judge keeps). Pure: no Ray, no clock, no I/O beyond the release's own label
vocabulary (tiers/labels.yaml, a digested data file of the release, read once).

Every TL check records `nodes` (each node's facts: devices, Ray labels, what the plugin returned
there; conformance.areas.topology.evidence) and `resource`. The judges rebuild the facts from
that record and run the same pure problem functions the live check ran, after holding the record
to the manifest: its resource, its node count (exactly, on a cluster the suite started, with at
least as many nodes with devices as the manifest's declared environment gives; at least, on the
vendor's own), devices_per_node on every node with devices, the domain labels the manifest expects,
the plugin's labels behind every label only they put on a node the suite started, and the declared
accelerator type (the type the labels are judged against is the
manifest's, never the record's). The placement checks also record the selectors they submitted
and where every submission ran: the judge rebuilds the plan the check runs on the recorded nodes
(conformance.areas.topology.plans) and refuses a record that drops a selector, a pinned node or a
run, then judges every run against the nodes' labels and truth.
"""
from __future__ import annotations

from typing import Any, Callable, Mapping, Sequence

from conformance.areas.topology import consistency, plans
from conformance.areas.topology.evidence import cluster_problems, expected, facts_of
from conformance.areas.topology.facts import NodeFacts
from conformance.areas.topology.placement import SelectorProbe, _Sub, judge_submissions, nodes_labels, submissions
from conformance.areas.topology.selectors import matches, selector_text, truth_labels
from conformance.areas.topology.view import description_checks
from conformance.catalog.labels import Vocabulary, load_vocabulary
from conformance.report.judges import ERROR, FAIL, PASS, JudgeTable, MissingEvidence, Verdict, param_value

JUDGES = JudgeTable()
NODE_RECORD = ("nodes", "resource")
SHOWN = 3   # knob: problems a reason shows per node


def _failed(what: str, per_node: Mapping[str, list[str]]) -> Verdict | None:
    """A fail naming every node and its first problems (the live check's reason), or None. The
    nodes' problems come first, the record's as a whole last: what the record's plausibility
    finds (a declared domain without its label on a node) is also what a plugin that applies no
    labels shows, and must not crowd out the check's own finding (the reason is cut for width)."""
    per_node = {k: v for k, v in sorted(per_node.items(), key=lambda kv: kv[0] == "record") if v}
    if not per_node:
        return None
    parts = [f"{'the record' if node == 'record' else f'node {node}'}: {'; '.join(problems[:SHOWN])}"
             + (f" (+{len(problems) - SHOWN} more)" if len(problems) > SHOWN else "")
             for node, problems in per_node.items()]
    return Verdict(FAIL, f"{what}: " + " | ".join(parts))


def _nodes(m: Mapping[str, Any], manifest: Mapping[str, Any], probed: bool = True
           ) -> tuple[list[NodeFacts], dict[str, list[str]]]:
    """The recorded facts, and the problems of the record as a whole (keyed "record") and, when
    `probed` (the checks that judge what the plugin said on each node), of nodes with devices the
    probe did not reach (the placement checks judge such a node by its devices and the type)."""
    facts = facts_of(m, manifest)
    problems: dict[str, list[str]] = {"record": cluster_problems(m, facts, manifest)}
    for f in facts:
        if probed and f.probe_error and f.has_devices:
            problems.setdefault(f.short, []).append(f"the probe did not run: {f.probe_error}")
    return facts, problems


def _per_node(m: Mapping[str, Any], manifest: Mapping[str, Any], what: str,
              check: Callable[[NodeFacts], list[str]], ok: str) -> Verdict:
    facts, problems = _nodes(m, manifest)
    for f in facts:
        if not f.probe_error:
            problems.setdefault(f.short, []).extend(check(f))
    return _failed(what, problems) or Verdict(PASS, f"{ok} on {len(facts)} node(s)")


def _vocabulary() -> Vocabulary:
    return load_vocabulary()


def _provider(manifest: Mapping[str, Any]) -> None:
    if not (manifest.get("topology") or {}).get("provider"):
        raise MissingEvidence("the manifest declares no topology.provider: there is no description to judge")


# ---------------------------------------------------------------------------------------------- labels
@JUDGES.rule(needs=NODE_RECORD)
def type_label_on_exactly_the_device_nodes(m: Mapping[str, Any], p: Mapping[str, Any],
                                           manifest: Mapping[str, Any]) -> Verdict:
    """TL-001: every node with devices carries the manager's type (the manifest's), no node without
    devices carries it, and the plugin returns no type label there."""
    kind = expected(manifest)[0]
    return _per_node(m, manifest, "ray.io/accelerator-type is wrong",
                     lambda f: consistency.type_label_problems(f, kind), f"the type label is {kind!r} exactly")


@JUDGES.rule(needs=NODE_RECORD)
def plugin_labels_are_valid(m: Mapping[str, Any], p: Mapping[str, Any], manifest: Mapping[str, Any]) -> Verdict:
    """TL-002: every label the plugin returned passes Ray's label rules and the vocabulary's."""
    vocabulary = _vocabulary()
    return _per_node(m, manifest, "invalid plugin labels",
                     lambda f: consistency.validity_problems(f, vocabulary)[0], "the plugin's labels are valid")


@JUDGES.rule(needs=NODE_RECORD)
def plugin_labels_are_on_the_nodes(m: Mapping[str, Any], p: Mapping[str, Any], manifest: Mapping[str, Any]) -> Verdict:
    """TL-003: every label the plugin returned on a node is one of its Ray labels, same value."""
    return _per_node(m, manifest, "the plugin's labels are missing from the nodes", consistency.applied_problems,
                     "the plugin's labels are applied")


@JUDGES.rule(needs=NODE_RECORD)
def labels_agree_with_description(m: Mapping[str, Any], p: Mapping[str, Any], manifest: Mapping[str, Any]) -> Verdict:
    """TL-007: every vocabulary label that describes a topology field equals the description."""
    _provider(manifest)
    vocabulary = _vocabulary()
    return _per_node(m, manifest, "labels disagree with the topology description",
                     lambda f: consistency.agreement_problems(f, vocabulary), "labels agree with the description")


@JUDGES.rule(needs=NODE_RECORD)
def described_domains_are_published(m: Mapping[str, Any], p: Mapping[str, Any], manifest: Mapping[str, Any]) -> Verdict:
    """TL-008: every domain a node's description names is one of its labels (a vocabulary key)."""
    _provider(manifest)
    facts, _ = _nodes(m, manifest)
    if not any(f.described and f.description.get("domains") for f in facts if not f.probe_error):
        raise MissingEvidence("no recorded description names a domain (the check is not applicable)")
    vocabulary = _vocabulary()
    return _per_node(m, manifest, "described domains are not published as labels",
                     lambda f: consistency.publication_problems(f, vocabulary), "described domains are published")


# ---------------------------------------------------------------------------------------------- description
def _description(m: Mapping[str, Any], manifest: Mapping[str, Any], check_id: str, what: str,
                 topology_expected: Mapping[str, Any] | None = None) -> Verdict:
    _provider(manifest)
    facts, problems = _nodes(m, manifest)
    uncomparable = []
    for f in facts:
        found = description_checks(f, topology_expected)
        problems.setdefault(f.short, []).extend(found[check_id])
        if found["uncomparable"]:
            uncomparable.append(f.short)
    failed = _failed(what, problems)
    if failed:
        return failed
    if check_id != "TL-004" and uncomparable:
        return Verdict(ERROR, f"no schema-valid description to compare on node(s) {', '.join(sorted(uncomparable))} "
                              "(TL-004 reports why)")
    return Verdict(PASS, f"{sum(1 for f in facts if f.described)} description(s) hold")


@JUDGES.rule(needs=NODE_RECORD)
def description_is_well_formed(m: Mapping[str, Any], p: Mapping[str, Any], manifest: Mapping[str, Any]) -> Verdict:
    """TL-004: each node's description validates against the schema, with consistent references."""
    return _description(m, manifest, "TL-004", "invalid topology description")


@JUDGES.rule(needs=NODE_RECORD)
def described_devices_are_rays_devices(m: Mapping[str, Any], p: Mapping[str, Any],
                                       manifest: Mapping[str, Any]) -> Verdict:
    """TL-005: the described device ids are the ids Ray handed the node's probe, the described
    type the manager's; a node without devices describes none."""
    return _description(m, manifest, "TL-005", "the description's devices are not the ones Ray schedules")


@JUDGES.rule(needs=NODE_RECORD)
def description_matches_manifest_expectation(m: Mapping[str, Any], p: Mapping[str, Any],
                                             manifest: Mapping[str, Any]) -> Verdict:
    """TL-006: each node with devices describes what the manifest's topology.expected says (the
    manifest's expectation, never one the record carries)."""
    want = (manifest.get("topology") or {}).get("expected")
    if not want:
        raise MissingEvidence("the manifest declares no topology.expected (the check is not applicable)")
    return _description(m, manifest, "TL-006", "the description differs from topology.expected", want)


# ---------------------------------------------------------------------------------------------- placement
def _truth(facts: Sequence[NodeFacts], vocabulary: Vocabulary, kind: str) -> dict[str, dict[str, str]]:
    return {f.node_id: truth_labels(f, vocabulary, kind) for f in facts}


def _resolve(short: Any, facts: Sequence[NodeFacts]) -> str:
    """The full id of a recorded (short) node id; MissingEvidence when no recorded node has it."""
    hits = [f.node_id for f in facts if isinstance(short, str) and short and f.node_id.startswith(short)]
    if len(hits) != 1:
        raise MissingEvidence(f"a run names node {short!r}, which is not one recorded node")
    return hits[0]


def _chain(raw: Any) -> list[dict[str, str]]:
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


_PLACEMENT = dict(needs=NODE_RECORD + ("probes",), params=("run_timeout_s", "pending_wait_s"))


@JUDGES.rule(**_PLACEMENT)  # type: ignore[arg-type]
def selectors_place_only_on_matching_nodes(m: Mapping[str, Any], p: Mapping[str, Any],
                                           manifest: Mapping[str, Any]) -> Verdict:
    """TL-009: the type and every published domain, spread, pinned to each node, as an actor."""
    return _placements(m, p, manifest, "TL-009", "a label selector placed work on the wrong node")


@JUDGES.rule(**_PLACEMENT)  # type: ignore[arg-type]
def negative_selectors_avoid_matching_nodes(m: Mapping[str, Any], p: Mapping[str, Any],
                                            manifest: Mapping[str, Any]) -> Verdict:
    """TL-010: "!v" and "!in(...)" on the type and the published domains (two nodes at least)."""
    facts = facts_of(m, manifest)
    if len(facts) < 2:
        raise MissingEvidence("fewer than 2 nodes recorded (the check is not applicable)")
    return _placements(m, p, manifest, "TL-010", "a negative selector placed work wrongly")


@JUDGES.rule(**_PLACEMENT)  # type: ignore[arg-type]
def unmatched_selectors_stay_pending(m: Mapping[str, Any], p: Mapping[str, Any], manifest: Mapping[str, Any]) -> Verdict:
    """TL-011: absent values, and the type or a domain restricted to the nodes without it."""
    return _placements(m, p, manifest, "TL-011", "a selector no node should match was placed")


@JUDGES.rule(**_PLACEMENT)  # type: ignore[arg-type]
def fallback_strategy_is_honoured(m: Mapping[str, Any], p: Mapping[str, Any], manifest: Mapping[str, Any]) -> Verdict:
    """TL-012: absent primaries falling back to the type, or to a published domain."""
    return _placements(m, p, manifest, "TL-012", "fallback_strategy placed work on the wrong node")


@JUDGES.rule(**_PLACEMENT)  # type: ignore[arg-type]
def in_and_multi_key_selectors_place_rightly(m: Mapping[str, Any], p: Mapping[str, Any],
                                             manifest: Mapping[str, Any]) -> Verdict:
    """TL-015: in(...) on the type and the domains; the type AND a domain (or the device nodes)."""
    return _placements(m, p, manifest, "TL-015", "an in() or multi-key selector placed work wrongly")


@JUDGES.rule(**_PLACEMENT)  # type: ignore[arg-type]
def feasible_primary_wins_over_fallback(m: Mapping[str, Any], p: Mapping[str, Any],
                                        manifest: Mapping[str, Any]) -> Verdict:
    """TL-016: a feasible primary (the type, a domain) with a fallback that matches the others."""
    return _placements(m, p, manifest, "TL-016", "a feasible primary selector lost to its fallback")


# ---------------------------------------------------------------------------------------------- groups
def _group_view(m: Mapping[str, Any], manifest: Mapping[str, Any]
                ) -> tuple[list[NodeFacts], Vocabulary, str, dict[str, dict[str, str]], dict[str, dict[str, str]]]:
    facts, problems = _nodes(m, manifest, probed=False)
    failed = _failed("the record is not the manifest's cluster", problems)
    if failed:
        raise _Refused(failed)
    vocabulary, kind = _vocabulary(), expected(manifest)[0]
    return facts, vocabulary, kind, nodes_labels(facts), _truth(facts, vocabulary, kind)


class _Refused(Exception):
    def __init__(self, verdict: Verdict) -> None:
        super().__init__(verdict.reason)
        self.verdict = verdict


def _refusing(fn: Callable[..., Verdict]) -> Callable[..., Verdict]:
    def run(m: Mapping[str, Any], p: Mapping[str, Any], manifest: Mapping[str, Any]) -> Verdict:
        try:
            return fn(m, p, manifest)
        except _Refused as exc:
            return exc.verdict
    run.__name__, run.__doc__ = fn.__name__, fn.__doc__
    return run


def _placed_on(rec: Mapping[str, Any], facts: Sequence[NodeFacts], count: int, what: str) -> list[str]:
    on = rec.get("on")
    if not isinstance(on, list) or len(on) != count:
        raise _Refused(Verdict(FAIL, f"{what} is recorded as placed with {len(on) if isinstance(on, list) else 'no'} "
                                     f"bundle node(s); it has {count} bundle(s)"))
    return [_resolve(x, facts) for x in on]


@JUDGES.rule(needs=NODE_RECORD + ("groups",), params=("group_timeout_s", "pending_wait_s"))
@_refusing
def bundles_land_on_matching_nodes(m: Mapping[str, Any], p: Mapping[str, Any], manifest: Mapping[str, Any]) -> Verdict:
    """TL-013: one STRICT_SPREAD group of one-device bundles per selector (the type, each published
    domain), one bundle per node with devices that matches it; each placed, each bundle on a node
    matching by labels and by description."""
    facts, vocabulary, kind, labels, truth = _group_view(m, manifest)
    plan = plans.bundle_plan(facts, kind, plans.published_domains(facts, vocabulary), labels, truth)
    groups = m.get("groups")
    if not isinstance(groups, list) or not all(isinstance(g, Mapping) for g in groups):
        raise MissingEvidence("metric groups is not a list of groups")
    recorded = {plans.selector_shape(g.get("selector") or {}): g for g in groups}
    if len(recorded) != len(groups) or set(recorded) != {plans.selector_shape(s) for s, _, _ in plan}:
        return Verdict(FAIL, f"the recorded groups select {[selector_text(g.get('selector') or {}) for g in groups]}; "
                             f"on the recorded nodes the check makes {[selector_text(s) for s, _, _ in plan]}")
    problems, host = [], []
    for sel, k, agree in plan:
        g, text = recorded[plans.selector_shape(sel)], selector_text(sel)
        if g.get("bundles") != k:
            return Verdict(FAIL, f"the group selecting {text} records {g.get('bundles')!r} bundles; the check makes {k}")
        if g.get("host_pending"):
            if not agree:
                return Verdict(FAIL, f"the group selecting {text} is recorded as the host's pending work, but the labels "
                                     "and the description disagree on the nodes it matches")
            host.append(str(g["host_pending"]))
            continue
        if g.get("ready") is not True:
            if g.get("ready") is not False:
                raise MissingEvidence(f"the group selecting {text} records no ready")
            by_labels = sorted(n[:8] for n in labels if matches(sel, labels[n]) and n in _devices(facts))
            by_truth = sorted(n[:8] for n in truth if matches(sel, truth[n]) and n in _devices(facts))
            problems.append(f"{k} one-device bundles selecting {text} (one per matching node) did not place; nodes "
                            f"matching by labels: {by_labels}, by devices and description: {by_truth}")
            continue
        nodes = _placed_on(g, facts, k, f"the group selecting {text}")
        if len(set(nodes)) != k:
            problems.append(f"the STRICT_SPREAD group selecting {text} records two bundles on one node")
        for node in nodes:
            if not matches(sel, labels[node]):
                problems.append(f"a bundle selecting {text} was placed on {node[:8]}, whose labels do not match")
            if not matches(sel, truth[node]):
                problems.append(f"a bundle selecting {text} landed on {node[:8]}, which by its description does not "
                                f"match (truth {', '.join(f'{key}={truth[node].get(key)!r}' for key in sel)})")
    return _group_verdict(problems, host, "bundle_label_selector placed bundles on the wrong node",
                          f"{len(plan)} group(s) placed on matching nodes")


def _devices(facts: Sequence[NodeFacts]) -> set[str]:
    return {f.node_id for f in facts if f.has_devices}


def _group_verdict(problems: list[str], host: list[str], what: str, ok: str) -> Verdict:
    if problems:
        more = f" (+{len(problems) - 2} more)" if len(problems) > 2 else ""
        return Verdict(FAIL, f"{what}: " + " | ".join(problems[:2]) + more)
    if host:
        return Verdict(ERROR, f"not judged: {host[0]} (Ray's machinery, not the plugin's labels)")
    return Verdict(PASS, ok)


@JUDGES.rule(needs=NODE_RECORD + ("key", "packed", "oversize"), params=("group_timeout_s", "pending_wait_s"))
@_refusing
def packing_keeps_groups_in_one_domain(m: Mapping[str, Any], p: Mapping[str, Any], manifest: Mapping[str, Any]) -> Verdict:
    """TL-014: with topology_strategy STRICT_PACK on the first packing key a node with devices
    carries, a small group lands in one domain by label and by description, and a group one device
    larger than the largest described domain (when the cluster holds it) is not placed."""
    facts, vocabulary, kind, labels, truth = _group_view(m, manifest)
    key = plans.packing_key(facts, vocabulary)
    if key is None:
        raise MissingEvidence("no recorded node with devices carries a packing domain label (not applicable)")
    if m.get("key") != key:
        return Verdict(FAIL, f"records packing key {m.get('key')!r}; the recorded nodes' first packing key is {key!r}")
    cap = plans.capacity(facts, truth, key)
    if not cap:
        return Verdict(FAIL, f"no domain to pack into: no node with devices describes the domain its {key} label names")
    small, packed = min(2, max(cap.values())), m.get("packed")
    problems, host = [], []
    if not isinstance(packed, Mapping):
        raise MissingEvidence("metric packed is not a record")
    if packed.get("devices") != small:
        return Verdict(FAIL, f"the packed group records {packed.get('devices')!r} devices; the check asks {small}")
    if packed.get("host_pending"):
        if any(labels[f.node_id].get(key) != truth[f.node_id].get(key) for f in facts if f.has_devices):
            return Verdict(FAIL, "the packed group is recorded as the host's pending work, but labels and description "
                                 f"disagree on a node's {key}")
        host.append(str(packed["host_pending"]))
    elif packed.get("ready") is not True:
        problems.append(f"a {small}-device group with topology_strategy={{{key!r}: 'STRICT_PACK'}} did not place "
                        f"(domain capacity by description: {cap})")
    else:
        nodes = _placed_on(packed, facts, small, "the packed group")
        seen_labels = sorted({str(labels[n].get(key)) for n in nodes})
        seen_truth = sorted({str(truth[n].get(key)) for n in nodes})
        if len(seen_labels) != 1 or len(seen_truth) != 1:
            problems.append(f"a {small}-device group with topology_strategy={{{key!r}: 'STRICT_PACK'}} spans {key} "
                            f"labels {seen_labels} and described domains {seen_truth}")
    big, total, over = max(cap.values()) + 1, sum(cap.values()), m.get("oversize")
    if big > total:
        if over is not None:
            return Verdict(FAIL, f"records an oversize group although one domain holds all {total} devices")
    else:
        if not isinstance(over, Mapping) or over.get("devices") != big or not isinstance(over.get("placed"), bool):
            return Verdict(FAIL, f"the oversize group ({big} devices, more than any described domain: {cap}) is not "
                                 f"recorded as run: {over!r}")
        if over["placed"]:
            where = sorted({str(truth[n].get(key)) for n in _placed_on(over, facts, big, "the oversize group")})
            problems.append(f"a {big}-device group (more than any domain holds by description: {cap}) was placed with "
                            f"topology_strategy={{{key!r}: 'STRICT_PACK'}} across described domains {where}; it must "
                            "stay pending")
    return _group_verdict(problems, host, "topology-aware packing split a group across domains",
                          f"packed within one {key} domain; the oversize group stayed pending")


@JUDGES.rule(needs=NODE_RECORD + ("reported",), params=("pending_wait_s",))
@_refusing
def unschedulable_groups_are_reported_pending(m: Mapping[str, Any], p: Mapping[str, Any],
                                              manifest: Mapping[str, Any]) -> Verdict:
    """TL-017: groups whose bundle selector no node matches by its devices and description (an absent
    type; the type restricted to the nodes without it) are not placed, and placement_group_table
    reports them PENDING with a scheduling_state among the release's unplaced_states."""
    facts, _, kind, _, truth = _group_view(m, manifest)
    accepted = p.get("unplaced_states")
    if not isinstance(accepted, list) or not accepted:
        raise MissingEvidence("param unplaced_states is missing")
    want = plans.unplaced_selectors(kind, truth, lambda tag: f"{plans.ABSENT_PREFIX}{tag}")
    reported = m.get("reported")
    if not isinstance(reported, list) or not all(isinstance(r, Mapping) for r in reported):
        raise MissingEvidence("metric reported is not a list of groups")
    shapes = [plans.selector_shape(r.get("selector") or {}) for r in reported]
    if sorted(shapes) != sorted(plans.selector_shape(s) for s in want):
        return Verdict(FAIL, f"the recorded groups select {[selector_text(r.get('selector') or {}) for r in reported]}; "
                             f"on the recorded nodes the check makes {[selector_text(s) for s in want]}")
    problems = []
    for r in reported:
        text = selector_text(r.get("selector") or {})
        if r.get("ready") is True:
            problems.append(f"a bundle selecting {text} was placed on {r.get('on')!r}, although by their devices and "
                            "description no node matches it")
        elif r.get("ready") is not False:
            raise MissingEvidence(f"the group selecting {text} records no ready")
        elif r.get("state") != "PENDING" or r.get("scheduling_state") not in (None, *accepted):
            problems.append(f"a group whose bundle selects {text} (no node matches) is reported by placement_group_table "
                            f"as state={r.get('state')!r}, scheduling_state={r.get('scheduling_state')!r}; expected "
                            f"PENDING and one of {sorted(accepted)}")
    return _group_verdict(problems, [], "an unschedulable bundle_label_selector",
                          f"{len(reported)} unschedulable group(s) reported pending")
