"""Pure judgements on what device holders report (no Ray; unit-tested).

A holder's state (see `actors.holder_state`) carries three views of its devices: the ids Ray
assigned (runtime context), the visible-devices variable, and the manager's own parse of that
variable. After any failure and recovery they must still agree, and holders alive at the same
time on one node must hold pairwise-disjoint ids.
"""
from __future__ import annotations

from collections import Counter
from typing import Any, Iterable

from conformance.cluster.probes import split_ids


def holder_problems(state: dict[str, Any], env_var: str | None, units: int = 1,
                    valid_ids: Iterable[str] | None = None, label: str = "holder") -> list[str]:
    """What is wrong with one holder's view of its devices (empty list: nothing)."""
    problems = []
    assigned = list(state.get("assigned") or [])
    if len(assigned) != units:
        problems.append(f"{label}: Ray assigned {assigned}; expected {units} device(s)")
    if env_var is not None:
        env_ids = split_ids(state.get("env_value"))
        if not state.get("env_set"):
            problems.append(f"{label}: {env_var} is not set although Ray assigned {assigned}")
        elif sorted(env_ids) != sorted(assigned):
            problems.append(f"{label}: {env_var}={state.get('env_value')!r} but Ray assigned {assigned}")
        view = state.get("manager_view")
        if isinstance(view, str):
            problems.append(f"{label}: the manager's get_current_process_visible_accelerator_ids() {view}")
        elif view is not None and sorted(str(v) for v in view) != sorted(assigned):
            problems.append(f"{label}: the manager reports visible ids {view!r} but Ray assigned {assigned}")
    if valid_ids is not None:
        valid = set(valid_ids)
        unknown = [i for i in assigned if i not in valid]
        if unknown:
            problems.append(f"{label}: holds id(s) {unknown} that are not devices of its node {sorted(valid)}")
    return problems


def held_ids(state: dict[str, Any], env_var: str | None) -> list[str]:
    """The ids a holder actually uses: the variable when there is one, else Ray's assignment."""
    if env_var is not None and state.get("env_set"):
        return split_ids(state.get("env_value"))
    return list(state.get("assigned") or [])


def disjointness_problems(states: list[dict[str, Any]], env_var: str | None,
                          universe: Iterable[str] | None = None) -> list[str]:
    """Holders alive together: per node, no id used twice; with `universe`, every id is used."""
    problems = []
    by_node: dict[str, list[str]] = {}
    for s in states:
        by_node.setdefault(str(s.get("node_id")), []).extend(held_ids(s, env_var))
    for node, ids in by_node.items():
        dup = sorted(i for i, n in Counter(ids).items() if n > 1)
        if dup:
            problems.append(f"node {node[:8]}: id(s) {dup} held by more than one live holder (all: {sorted(ids)})")
    if universe is not None and len(by_node) == 1:
        missing = sorted(set(universe) - set(next(iter(by_node.values()))))
        if missing:
            problems.append(f"device(s) {missing} are held by no live holder although every device was requested")
    return problems


def audit(states: list[dict[str, Any]], env_var: str | None, universe: Iterable[str] | None = None,
          labels: list[str] | None = None) -> list[str]:
    """Every holder's own view, then disjointness (and coverage of `universe`) across them."""
    universe = list(universe) if universe is not None else None
    problems: list[str] = []
    for i, s in enumerate(states):
        label = labels[i] if labels else f"holder {i}"
        problems += holder_problems(s, env_var, 1, universe, label)
    return problems + disjointness_problems(states, env_var, universe)


def holder_record(state: dict[str, Any], node: str | None = None) -> dict[str, Any]:
    """What a check records of one holder's state (its evidence, which the judge audits again):
    its process, where it ran (a role, or the node id's head), its three views of its devices and
    whether Ray reports it restarted."""
    view = state.get("manager_view")
    node_id = str(state.get("node_id") or "")[:12]
    return {"pid": state.get("pid"), "node_id": node_id, "node": node if node is not None else node_id,
            "assigned": [str(i) for i in state.get("assigned") or []], "env_set": bool(state.get("env_set")),
            "env_value": state.get("env_value"),
            "manager_view": view if view is None or isinstance(view, str) else [str(v) for v in view],
            "restarted": state.get("restarted")}


def holder_records(states: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """holder_record of each state, in order (a node's holders, as a device scenario records them)."""
    return [holder_record(s) for s in states]
