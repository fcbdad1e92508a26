"""Label-selector and placement-group probes, judged against the nodes' ground truth.

A placement check asks two questions about every task, actor or bundle that ran:
* did Ray honour the selector against the node's *labels* (the scheduler's contract), and
* does the node really match the selector by its *truth labels* (selectors.truth_labels: its
  devices and the plugin's own description)? A plugin whose labels lie (a domain the node is
  not in, the type on a node without devices) fails here, the way its users would see it.

Tasks are submitted three ways: with SPREAD (a user's view; where they land is judged), pinned
one per node by adding `ray.io/node-id` to the selector (deterministic: a node must accept
exactly the selectors its truth labels match), and as one actor. Every wait is bounded:
submissions the labels say Ray can place get `run_timeout` (the check's `run_timeout_s`); those
no node's labels match get `pending_wait` (its `pending_wait_s`), after which everything
unfinished is cancelled and actors are killed. The checks pass both from their context
(ctx.param), so the waits are the thresholds the run loaded.
"""
from __future__ import annotations

import time
from dataclasses import dataclass, field
from types import ModuleType
from typing import TYPE_CHECKING, Any, Mapping, Sequence

from conformance.areas.topology.facts import NodeFacts
from conformance.areas.topology.probe import Where, where
from conformance.areas.topology.selectors import NODE_ID_KEY, first_matching, matches, selector_text

if TYPE_CHECKING:
    from ray.util.placement_group import PlacementGroup

    from conformance.run.budget import Budget

CANCEL_WAIT_S = 10.0  # knob: cleanup wait after cancelling, not a bound
# Errors meaning "Ray did not place it": cancelled by us, actor killed by us, or refused outright
# (a selector naming ray.io/node-id is turned into a hard node affinity, and Ray fails such a
# task at once when that node's labels do not match instead of keeping it pending).
NOT_PLACED = ("TaskCancelledError", "ActorDiedError", "RayActorError", "ActorUnavailableError",
              "TaskUnschedulableError", "ActorUnschedulableError")


@dataclass
class SelectorProbe:
    """One selector (with optional fallbacks) and how to exercise it."""

    chain: list[dict[str, str]]
    spread_tasks: int = 2
    actor: bool = False
    pinned: bool = True

    @property
    def text(self) -> str:
        head = selector_text(self.chain[0])
        return head + "".join(f" / fallback {selector_text(s)}" for s in self.chain[1:])


@dataclass
class _Sub:
    probe: SelectorProbe
    kind: str                  # spread | pinned | actor
    ref: Any
    label_nodes: set[str]      # where Ray may place it, by the nodes' labels
    truth_nodes: set[str]      # where it belongs, by the nodes' truth labels
    actor: Any = None
    node: str | None = None    # the pinned node
    ran_on: str | None = None  # the node it ran on (None: it did not run)
    failed: str | None = None  # it did not run for another reason than not being placed


@dataclass
class PlacementResult:
    violations: list[str] = field(default_factory=list)
    # work whose labels match a node that should take it, left pending by Ray within the bound:
    # Ray's machinery (a worker start, scheduling) on a loaded host, not the plugin's labels
    host_pending: list[str] = field(default_factory=list)
    placements: dict[str, list[str]] = field(default_factory=dict)
    submitted: int = 0
    # per probe, in order: what became of each of its submissions (the check's evidence)
    runs: list[list[dict[str, Any]]] = field(default_factory=list)

    def add(self, message: str) -> None:
        if message not in self.violations:
            self.violations.append(message)


def _options(chain: Sequence[Mapping[str, str]]) -> dict[str, Any]:
    opts: dict[str, Any] = {"num_cpus": 0, "label_selector": dict(chain[0])}
    if len(chain) > 1:
        opts["fallback_strategy"] = [{"label_selector": dict(s)} for s in chain[1:]]
    return opts


def _short(ids: set[str] | list[str]) -> str:
    return "{" + ", ".join(sorted(i[:8] for i in ids)) + "}" if ids else "no node"


def submissions(probes: Sequence[SelectorProbe], labels: Mapping[str, Mapping[str, str]],
                truth: Mapping[str, Mapping[str, str]]) -> list[_Sub]:
    """Every submission the probes make (spread tasks, the actor, one task pinned to each node),
    with where the nodes' labels and their truth say it may run. Pure: the live check submits
    them, the judge rebuilds them from the record."""
    subs: list[_Sub] = []
    for p in probes:
        _, by_labels = first_matching(p.chain, labels)
        _, by_truth = first_matching(p.chain, truth)
        subs += [_Sub(p, "spread", None, by_labels, by_truth) for _ in range(p.spread_tasks)]
        if p.actor:
            subs.append(_Sub(p, "actor", None, by_labels, by_truth))
        if p.pinned:   # by node id: the record's order whatever order the report's JSON keeps the nodes in
            for node_id in sorted(labels):
                chain = [{**s, NODE_ID_KEY: node_id} for s in p.chain]
                on_l = {node_id} if any(matches(s, labels[node_id]) for s in chain) else set()
                on_t = {node_id} if any(matches(s, truth[node_id]) for s in chain) else set()
                subs.append(_Sub(p, "pinned", None, on_l, on_t, node=node_id))
    return subs


def run_selector_probes(probes: Sequence[SelectorProbe], labels: Mapping[str, Mapping[str, str]],
                        truth: Mapping[str, Mapping[str, str]], *, run_timeout: float,
                        pending_wait: float) -> PlacementResult:
    """Submit every probe, wait (bounded), judge, clean up. `labels`/`truth`: node_id -> labels;
    `run_timeout`/`pending_wait`: the check's run_timeout_s and pending_wait_s."""
    import ray

    task: Any = ray.remote(where)        # Any: Ray's hints: pyproject.toml
    actor_cls: Any = ray.remote(Where)
    subs = submissions(probes, labels, truth)
    cancelled = False
    try:
        for s in subs:
            if s.kind == "spread":
                s.ref = task.options(**_options(s.probe.chain), scheduling_strategy="SPREAD", max_retries=0).remote()
            elif s.kind == "actor":
                s.actor = actor_cls.options(**_options(s.probe.chain), scheduling_strategy="SPREAD",
                                            max_restarts=0).remote()
                s.ref = s.actor.node.remote()
            else:
                chain = [{**sel, NODE_ID_KEY: str(s.node)} for sel in s.probe.chain]
                s.ref = task.options(**_options(chain), max_retries=0).remote()
        t0 = time.monotonic()
        placeable = [s.ref for s in subs if s.label_nodes]
        if placeable:
            ray.wait(placeable, num_returns=len(placeable), timeout=run_timeout)
        rest = [s.ref for s in subs if not s.label_nodes]
        left = pending_wait - (time.monotonic() - t0)
        if rest and left > 0:
            ray.wait(rest, num_returns=len(rest), timeout=left)
        ready, _ = ray.wait([s.ref for s in subs], num_returns=len(subs), timeout=0)
        done = set(ready)
        unfinished = [s for s in subs if s.ref not in done]
        _cancel(ray, unfinished)
        cancelled = True
        late, _ = ray.wait([s.ref for s in unfinished], num_returns=len(unfinished), timeout=0) if unfinished else ([], [])
        for s in subs:
            if s.ref in done or s.ref in late:
                _outcome(ray, s)
    finally:
        if not cancelled:  # an exception half-way: leave nothing pending on the shared cluster
            _cancel(ray, subs)
        for s in subs:
            if s.actor is not None:
                ray.kill(s.actor)  # idempotent
    return judge_submissions(probes, subs, labels, truth, run_timeout=run_timeout, pending_wait=pending_wait)


def judge_submissions(probes: Sequence[SelectorProbe], subs: Sequence[_Sub], labels: Mapping[str, Mapping[str, str]],
                      truth: Mapping[str, Mapping[str, str]], *, run_timeout: float,
                      pending_wait: float) -> PlacementResult:
    """Where each submission ran (or that it did not), judged against the nodes' labels and truth:
    the violations, the host's pending work, and the runs to record. Pure: the live check and the
    judge (conformance.areas.topology.judges) decide with it."""
    result = PlacementResult(submitted=len(subs), runs=[[] for _ in probes])
    index = {id(p): i for i, p in enumerate(probes)}
    for s in subs:
        run: dict[str, Any] = {"kind": s.kind}
        if s.node:
            run["pin"] = s.node[:8]
        if s.ran_on is not None:
            run["ran_on"] = s.ran_on[:8]
            _judge_ran(s, labels, truth, result)
        elif s.failed is not None:
            run["failed"] = s.failed
            result.add(f"{p_text(s)} ({s.kind}) failed: {s.failed}")
        else:
            run["pending"] = True
            _judge_pending(s, labels, truth, result, run_timeout=run_timeout, pending_wait=pending_wait)
        result.runs[index[id(s.probe)]].append(run)
    return result


def _judge_pending(s: _Sub, labels: Mapping[str, Mapping[str, str]], truth: Mapping[str, Mapping[str, str]],
                   result: PlacementResult, *, run_timeout: float, pending_wait: float) -> None:
    where_ = f"pinned to {s.node[:8]}" if s.node else s.kind
    if set(s.label_nodes) & set(s.truth_nodes):
        text = (f"{p_text(s)} ({where_}) was not placed by Ray within {run_timeout:.0f}s although the labels "
                f"of {_short(set(s.label_nodes) & set(s.truth_nodes))} match it and their devices and description "
                "say so too")
        if text not in result.host_pending:
            result.host_pending.append(text)
    elif s.truth_nodes:
        waited = run_timeout if s.label_nodes else pending_wait
        why = ("no node's labels match it" if not s.label_nodes
               else f"Ray did not place it although the labels of {_short(s.label_nodes)} match")
        result.add(f"{p_text(s)} ({where_}) stayed pending for {waited:.0f}s: {why}, yet by their devices and "
                   f"description {_short(s.truth_nodes)} should accept it{_diff(s, labels, truth)}")


def p_text(s: _Sub) -> str:
    return f"selector {s.probe.text}"


def _cancel(ray: ModuleType, subs: Sequence[_Sub]) -> None:
    for s in subs:
        if s.actor is None and s.ref is not None:
            ray.cancel(s.ref, force=True)
    for s in subs:
        if s.actor is not None:
            ray.kill(s.actor)
    refs = [s.ref for s in subs if s.ref is not None]
    if refs:
        ray.wait(refs, num_returns=len(refs), timeout=CANCEL_WAIT_S)


def _diff(s: _Sub, labels: Mapping[str, Mapping[str, str]], truth: Mapping[str, Mapping[str, str]]) -> str:
    keys = {k for sel in s.probe.chain for k in sel if k != NODE_ID_KEY}
    parts = []
    for node_id in sorted(set(labels)):
        for k in sorted(keys):
            if labels[node_id].get(k) != truth[node_id].get(k):
                parts.append(f"{node_id[:8]} labels {k}={labels[node_id].get(k)!r}, truth {truth[node_id].get(k)!r}")
    return f" ({'; '.join(parts)})" if parts else ""


def _outcome(ray: ModuleType, s: _Sub) -> None:
    """Where a finished submission ran (s.ran_on), or why it failed (s.failed); neither: it was
    cancelled or refused before it ran (pending)."""
    try:
        s.ran_on = ray.get(s.ref, timeout=CANCEL_WAIT_S)
    except Exception as exc:  # noqa: BLE001 - cancelled or failed: it did not run anywhere
        if exc.__class__.__name__ not in NOT_PLACED:
            s.failed = f"{exc.__class__.__name__}: {str(exc).strip()[:160]}"


def _judge_ran(s: _Sub, labels: Mapping[str, Mapping[str, str]], truth: Mapping[str, Mapping[str, str]],
               result: PlacementResult) -> None:
    node = str(s.ran_on)
    result.placements.setdefault(s.probe.text, []).append(node[:8])
    if node not in s.label_nodes:
        result.add(f"{p_text(s)} ({s.kind}) ran on {node[:8]}, whose labels do not match it (Ray placed it "
                   f"against its selector; nodes that match: {_short(s.label_nodes)})")
    if node not in s.truth_nodes:
        result.add(f"{p_text(s)} ({s.kind}) ran on {node[:8]}, which by its devices and description should not "
                   f"match it (should run on {_short(s.truth_nodes)}){_diff(s, labels, truth)}")


def group_nodes(pg: PlacementGroup) -> list[str]:
    """The node of every bundle of a ready placement group, in bundle order."""
    from ray.util.placement_group import placement_group_table

    table = placement_group_table(pg)
    mapping = table.get("bundles_to_node_id") or {}
    return [mapping[i] for i in sorted(mapping)]


def try_group(budget: Budget, bundles: list[dict[str, float]], wait_s: float, *, host_wait: str | None = None,
              **kwargs: Any) -> tuple[bool, list[str]]:
    """Create a placement group, wait at most wait_s, remove it; (ready, bundle nodes).

    `host_wait` (what the wait is for) when the nodes' labels and description agree that Ray can
    place the group: the wait is then one on Ray's machinery, through the check's `budget`
    (Budget.ray, conformance.run.machinery: wait_s stretched by the run's measured worker start, a
    fresh sample before blaming), and a group still not placed raises HostNotReady (the host's
    failure, never the plugin's)."""
    import math

    from ray.util.placement_group import placement_group, remove_placement_group

    from conformance.timing.waits import BoundRanOut

    pg = placement_group(bundles, **kwargs)

    def placed(limit_s: float) -> bool:
        # whole seconds: Ray's wait_placement_group_ready truncates its timeout to an int
        if not pg.wait(max(math.ceil(limit_s), 1)):
            raise BoundRanOut(f"{host_wait}: not placed within {limit_s:.0f}s")
        return True

    try:
        ready = pg.wait(wait_s) if host_wait is None else budget.ray(placed, host_wait, wait_s)
        return ready, group_nodes(pg) if ready else []
    finally:
        remove_placement_group(pg)


def nodes_labels(facts: Sequence[NodeFacts]) -> dict[str, dict[str, str]]:
    return {f.node_id: {**f.ray_labels, NODE_ID_KEY: f.node_id} for f in facts}
