"""The topology judges of placement groups: bundles on matching nodes, packing in one domain,
unschedulable groups reported pending."""
from __future__ import annotations

from typing import Any, Callable, Mapping, Sequence

from conformance.areas.topology import plans
from conformance.areas.topology.evidence import expected
from conformance.areas.topology.facts import NodeFacts
from conformance.areas.topology.judges.common import JUDGES, NODE_RECORD, _failed, _nodes, _resolve, _truth, _vocabulary
from conformance.areas.topology.placement import nodes_labels
from conformance.areas.topology.selectors import matches, selector_text
from conformance.catalog.labels import Vocabulary
from conformance.report.judges import ERROR, FAIL, PASS, MissingEvidence, Verdict


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
