"""Tier computation: a pure function from per-check outcomes to the achieved tier.

Used by the plugin when it writes a report and by the verifier, which recomputes the tier from
the per-check results and never trusts the claimed one. No Ray, no I/O.
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, Iterable, Mapping

from conformance.catalog.data import Check, Checklist, Ladder, select_checks  # noqa: F401 - select_checks: public here too

PASSING = "pass"
WAIVED = "waived"
FLAKY = "flaky"


@dataclass(frozen=True)
class RunContext:
    """Facts about the run that tier conditions look at (taken from the report)."""

    transport_declared: bool
    nodes: int
    # The hardware's verified shape (report["shape"]: nodes, devices_per_node, domain_labels);
    # None when unknown (older reports): no check is then attributed to the shape.
    shape: Mapping[str, Any] | None = None
    # What this run's environment can do beyond the hardware (environment_facts); None: unknown.
    # Only the ceiling and the SHOULD slack read it: it never changes which tier is achieved.
    environment: Mapping[str, Any] | None = None


SUITE_STARTED_MODES = ("local", "simulated")


def environment_facts(cluster: Mapping[str, Any] | None) -> dict[str, Any]:
    """What the run's cluster can do that some checks need, from the report's `cluster` (pure).

    `partition_faults`: a node can be cut off the network while its processes run. Nodes the
    suite starts itself share one network stack, so there it is False; on a --ray-address
    cluster it depends on the fault driver, which the report does not judge here (None).
    """
    cluster = cluster or {}
    suite_started = cluster.get("mode") in SUITE_STARTED_MODES or ("address" in cluster and not cluster["address"])
    return {"partition_faults": False if suite_started else None}


def context_from_report(report: Mapping[str, Any]) -> RunContext:
    manifest = report.get("manifest") or {}
    return RunContext(transport_declared=bool(manifest.get("transport")),
                      nodes=int((report.get("cluster") or {}).get("nodes") or 0),
                      shape=report.get("shape"), environment=environment_facts(report.get("cluster")))


def shape_facts(nodes: int, devices_per_node: Iterable[float], domain_labels: bool) -> dict[str, Any]:
    """The shape facts tiers look at, from what Ray detected (never from the manifest's claims).

    A fact the run did not observe (no cluster started, no device detected) is None, and no
    check is ruled out by it.
    """
    counts = [int(c) for c in devices_per_node if c and float(c).is_integer()]
    return {"nodes": int(nodes) or None, "devices_per_node": max(counts) if counts else None,
            "domain_labels": bool(domain_labels) if counts else None}


PARTITION_WHY = ("needs a fault driver that can partition a node; the nodes of a suite-started cluster share "
                 "one network stack (run against real or namespace hosts with --fault-driver)")


def shape_limits(policy: Mapping[str, Any], shape: Mapping[str, Any] | None,
                 environment: Mapping[str, Any] | None = None) -> dict[str, str]:
    """check id -> the hardware fact (or, given `environment`, the fact of this run's environment)
    that keeps it from ever passing here (pure). compute_tiers passes no environment: what a
    run's environment cannot do never excuses a check from a tier."""
    out: dict[str, str] = {}
    for need in policy.get("needs", []):
        if need.get("partition_faults") and (environment or {}).get("partition_faults") is False:
            for cid in need["ids"]:
                out.setdefault(cid, PARTITION_WHY)
    if not shape:
        return out
    for need in policy.get("needs", []):
        why = None
        devices, nodes = shape.get("devices_per_node"), shape.get("nodes")
        if "min_devices_per_node" in need and devices is not None and devices < need["min_devices_per_node"]:
            why = f"needs >= {need['min_devices_per_node']} devices per node; this hardware has {devices}"
        elif "min_nodes" in need and nodes is not None and nodes < need["min_nodes"]:
            why = f"needs >= {need['min_nodes']} nodes; this run has {nodes}"
        elif need.get("domain_labels") and shape.get("domain_labels") is False:
            why = "needs interconnect/slice/rack domain labels on the nodes; none carries one"
        if why:
            for cid in need["ids"]:
                out.setdefault(cid, why)
    return out


def required_checks(tier: Mapping[str, Any], checklist: Checklist) -> list[str]:
    ids: list[str] = []
    for req in tier.get("requires", []):
        for c in select_checks(checklist, req["select"]):
            if c.id not in ids:
                ids.append(c.id)
    return ids


def _counts(outcome: str, allow_waived: bool, waiver_blocks: bool = False, allow_flaky: bool = False) -> bool:
    """`pass` counts; `waived` counts only where the tier allows waivers and the waiver does not
    say `blocks_tier`; `flaky` (failed, then passed on a re-run) only where the tier allows flakes."""
    return outcome == PASSING or (allow_waived and outcome == WAIVED and not waiver_blocks) or \
        (allow_flaky and outcome == FLAKY)


def _blocks_tier(result: Mapping[str, Any]) -> bool:
    """The waiver recorded on a check entry (report.json) says it must not count toward a tier."""
    return bool((result.get("waiver") or {}).get("blocks_tier", False))


def _condition(cond: Mapping[str, Any], ctx: RunContext, outcomes: Mapping[str, str],
               checklist: Checklist, allow_waived: bool,
               blocks: Mapping[str, bool] | None = None, exempt: frozenset[str] = frozenset(),
               allow_flaky: bool = False) -> dict[str, Any]:
    blocks = blocks or {}
    kind = cond["kind"]
    if kind == "transport_declared":
        met = ctx.transport_declared
        detail = "a transport is declared" if met else "the manifest declares no transport"
    elif kind == "min_nodes":
        need = int(cond["value"])
        met = ctx.nodes >= need
        detail = f"{ctx.nodes} node(s) in the run; needs >= {need}"
    elif kind == "should_share":
        shoulds = [c.id for c in checklist.counted() if c.level == "SHOULD" and c.id not in exempt]
        passed = sum(1 for cid in shoulds if _counts(outcomes.get(cid, "skip"), allow_waived, blocks.get(cid, False),
                                                     allow_flaky))
        share = passed / len(shoulds) if shoulds else 1.0
        met = share >= float(cond["value"])
        detail = f"{passed}/{len(shoulds)} SHOULD checks passed ({share:.0%}); needs >= {float(cond['value']):.0%}"
        if exempt:
            detail += f" ({len(exempt)} not applicable on this hardware's shape left out)"
    else:  # schema forbids this; keep the function total
        met, detail = False, f"unknown condition {kind}"
    return {"kind": kind, "met": met, "detail": detail}


def compute_tiers(results: Iterable[Mapping[str, Any]], checklist: Checklist, ladder: Ladder,
                  ctx: RunContext) -> tuple[str | None, list[dict[str, Any]]]:
    """Return (highest achieved tier or None, per-tier detail).

    A check satisfies a requirement only with outcome `pass` (or `waived` when the tier allows
    waivers, unless the check's waiver says `blocks_tier`; or `flaky` when the tier says
    `allow_flaky`). A check absent from `results` counts as `skip`. Tiers are cumulative.
    """
    results = list(results)
    outcomes = {r["id"]: r["outcome"] for r in results}
    blocks = {r["id"]: _blocks_tier(r) for r in results}
    reasons = {r["id"]: r.get("reason") for r in results}
    exempt: frozenset[str] = frozenset()
    if ladder.shape_policy.get("exempt_from_should_share"):
        exempt = frozenset(cid for cid in shape_limits(ladder.shape_policy, ctx.shape)
                           if outcomes.get(cid) == "not_applicable")
    achieved: str | None = None
    below_failed: str | None = None
    detail = []
    for tier in ladder.tiers:
        allow_waived = bool(tier.get("allow_waived", False))
        allow_flaky = bool(tier.get("allow_flaky", False))
        req = required_checks(tier, checklist)
        blocking = [{"id": cid, "outcome": outcomes.get(cid, "skip"),
                     "reason": reasons.get(cid) or ("not run" if cid not in outcomes else None)}
                    for cid in req if not _counts(outcomes.get(cid, "skip"), allow_waived, blocks.get(cid, False),
                                                  allow_flaky)]
        conditions = [_condition(c, ctx, outcomes, checklist, allow_waived, blocks, exempt, allow_flaky)
                      for c in tier.get("conditions", [])]
        own_ok = not blocking and all(c["met"] for c in conditions)
        ok = own_ok and below_failed is None
        detail.append({"name": tier["name"], "achieved": ok, "required_checks": req,
                       "blocking": blocking, "conditions": conditions, "below": below_failed})
        if ok:
            achieved = tier["name"]
        elif below_failed is None:
            below_failed = tier["name"]
    return achieved, detail


def tier_rank(ladder: Ladder, name: str | None) -> int:
    """0 for no tier, 1 for the lowest, ...; raises ValueError for an unknown name."""
    if name is None:
        return 0
    return ladder.names().index(name) + 1


def should_slack(checklist: Checklist, ladder: Ladder, tier: Mapping[str, Any], cond: Mapping[str, Any],
                 limits: Mapping[str, str], shape_only: Mapping[str, str]) -> dict[str, Any]:
    """How a should_share condition stands here, assuming every check the shape and environment
    allow passes: {tier, total, needed, possible, misses_allowed, ruled_out} (pure).

    `limits`: every check ruled out (shape and environment); `shape_only`: those the hardware's
    shape rules out, which leave the share's denominator when the ladder exempts them.
    """
    shoulds = [c.id for c in checklist.counted() if c.level == "SHOULD"]
    if ladder.shape_policy.get("exempt_from_should_share"):
        shoulds = [cid for cid in shoulds if cid not in shape_only]
    ruled_out = [cid for cid in shoulds if cid in limits]
    total = len(shoulds)
    needed = math.ceil(float(cond["value"]) * total - 1e-9) if total else 0
    possible = total - len(ruled_out)
    return {"tier": tier["name"], "total": total, "needed": needed, "possible": possible,
            "misses_allowed": possible - needed, "ruled_out": ruled_out}


def slack_text(slack: Mapping[str, Any]) -> str:
    """`stable's SHOULD share: 11 of 13 can pass here, 11 needed: 0 more SHOULD misses allowed`."""
    n = slack["misses_allowed"]
    return (f"{slack['tier']}'s SHOULD share: {slack['possible']} of {slack['total']} can pass here, "
            f"{slack['needed']} needed: {n} more SHOULD miss{'' if n == 1 else 'es'} allowed")


def ruled_out_text(ids: Iterable[str], limits: Mapping[str, str]) -> str:
    """'FR-017, FR-018 cannot: <their reason>; DP-019 cannot: <its reason>': each check beside its
    own reason (checks ruled out for different reasons are never given the first one's)."""
    by_reason: dict[str, list[str]] = {}
    for cid in ids:
        by_reason.setdefault(limits[cid], []).append(cid)
    return "; ".join(f"{', '.join(group)} cannot: {why}" for why, group in by_reason.items())


def shape_ceiling(checklist: Checklist, ladder: Ladder, ctx: RunContext,
                  ruled_out: Mapping[str, str] | None = None) -> dict[str, Any]:
    """The highest tier this hardware's shape and this run's environment can ever reach, whatever
    the plugin does (pure).

    Assumes every check they allow passes; a tier is out of reach when one of its MUST checks
    needs more than they allow, a min_nodes condition exceeds the run's nodes, or the SHOULD
    share cannot reach its bound without the checks they rule out. A fact the run did not observe
    (no cluster started: 0 nodes) rules nothing out. Where a tier has a SHOULD share, `slack`
    says how many more SHOULD checks may miss before it is lost. `ruled_out`: more checks that can
    never pass here, each with why (validate-manifest's: those the manifest's missing fields make
    not applicable, conformance.catalog.manifest_gates).
    """
    limits = {**shape_limits(ladder.shape_policy, ctx.shape, ctx.environment), **(ruled_out or {})}
    best: str | None = None
    slack: dict[str, Any] | None = None

    def result(tier: str | None, reason: str) -> dict[str, Any]:
        out: dict[str, Any] = {"tier": tier, "reason": reason}
        if slack is not None and slack["misses_allowed"] >= 0:
            out["slack"] = {k: slack[k] for k in ("tier", "total", "needed", "possible", "misses_allowed")}
            out["reason"] += "; " + slack_text(slack)
        return out

    for tier in ladder.tiers:
        blocked = [cid for cid in required_checks(tier, checklist) if cid in limits]
        if blocked:
            return result(best, f"{tier['name']} needs {', '.join(blocked)} ({ruled_out_text(blocked, limits)})")
        for cond in tier.get("conditions", []):
            if cond["kind"] == "min_nodes" and 0 < ctx.nodes < int(cond["value"]):
                return result(best, f"{tier['name']} needs >= {int(cond['value'])} nodes; this run has {ctx.nodes}")
            if cond["kind"] == "should_share":
                tier_slack = should_slack(checklist, ladder, tier, cond, limits,
                                          shape_limits(ladder.shape_policy, ctx.shape))
                ruled_out = tier_slack["ruled_out"]
                if tier_slack["misses_allowed"] < 0 and ruled_out:
                    return result(best, f"{tier['name']} needs >= {float(cond['value']):.0%} of SHOULD checks; here at "
                                        f"most {tier_slack['possible']}/{tier_slack['total']} can pass "
                                        f"({ruled_out_text(ruled_out, limits)})")
                slack = tier_slack
        best = tier["name"]
    return result(best, "the shape and this run's environment allow every tier")


def planned_context(transport_declared: bool, nodes: int, devices_per_node: int | None) -> RunContext:
    """The run a manifest plans on a cluster the suite starts, before anything ran (pure): its
    nodes and devices per node as the manifest declares them (the run verifies them), domain
    labels not known yet (they rule nothing out), the environment of a suite-started cluster."""
    return RunContext(transport_declared=transport_declared, nodes=int(nodes),
                      shape={"nodes": int(nodes) or None, "devices_per_node": devices_per_node, "domain_labels": None},
                      environment=environment_facts({"mode": "local"}))


def reach_lines(checklist: Checklist, ladder: Ladder, ctx: RunContext, ruled_out: Mapping[str, str]) -> list[str]:
    """What validate-manifest says the planned run can reach at most, whatever the plugin does
    (pure): the ceiling, the SHOULD misses it leaves, and each check that can never pass there
    beside its reason. Everything is computed from the ladder's data (tiers/tiers.yaml: its
    conditions and shape policy), so it follows the ladder when the ladder changes."""
    ceiling = shape_ceiling(checklist, ladder, ctx, ruled_out)
    limits = {**shape_limits(ladder.shape_policy, ctx.shape, ctx.environment), **ruled_out}
    level = {c.id: c.level for c in checklist.active()}
    never = [cid for cid in (c.id for c in checklist.active()) if cid in limits and level.get(cid) in ("MUST", "SHOULD")]
    lines = [f"reach: at most {ceiling['tier'] or 'no tier'} here ({ceiling['reason']})"]
    if never:
        lines.append(f"can never pass here: {ruled_out_text(never, limits)}")
    return lines
