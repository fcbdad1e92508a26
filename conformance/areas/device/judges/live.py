"""The live checks (DP-006..DP-015): what the nodes advertise and what tasks and actors see.
"""
from __future__ import annotations

import math
from typing import Any, Mapping

from conformance.areas.device.contract import (
    validation_result,
)
from conformance.areas.device.judges.common import (
    JUDGES,
    Metrics,
    _bool,
    _ids,
    _key,
    _list,
    _mapping,
    _resource_recorded,
    _str_or_none,
    _verdict,
    contract_probe,
    manifest_devices,
    manifest_nodes,
    manifest_quantities,
    manifest_type,
)
from conformance.catalog.manifest import declared_device_nodes
from conformance.report.judges import (
    Verdict,
    number,
    param_value,
    ran_remote,
)
from conformance.report.per_node import each_node


# ------------------------------------------------------------------------------ live (DP-006 .. DP-015)
def _counts(m: Metrics, name: str) -> dict[str, float]:
    counts = _mapping(m.get(name), f"metric {name}")
    return {str(k): number(counts, k) for k in counts}


def node_set_problems(counts: Mapping[str, float], manifest: Mapping[str, Any], what: str,
                      device_nodes_only: bool, resource: Any = None) -> list[str]:
    """The recorded node set is the cluster's. On a cluster the suite started from the manifest:
    cluster.nodes nodes (`device_nodes_only`: the record names only the nodes with devices, so at
    most that many), and at least as many with devices as the manifest's declared environment
    gives (catalog.manifest.declared_device_nodes): a node dropped from the record, or recorded
    with 0 units, is a fail, never a node without devices. On the vendor's own cluster
    (--conformance-ray-address): at least one node with devices. Everywhere, every node with
    devices advertises devices_per_node."""
    n, nodes = manifest_devices(manifest), manifest_nodes(manifest)
    problems = []
    if any(v < 0 for v in counts.values()):
        problems.append(f"{what} records a negative count: {dict(counts)}")
    with_devices = {k: v for k, v in counts.items() if v > 0}
    if not with_devices:
        problems.append(f"{what} records no node with devices ({dict(counts)})")
    if device_nodes_only and len(with_devices) != len(counts):
        problems.append(f"{what} records node(s) without devices among the nodes with devices: {dict(counts)}")
    if not ran_remote(manifest):
        if len(counts) > nodes or (not device_nodes_only and len(counts) != nodes):
            problems.append(f"{what} records {len(counts)} node(s); the cluster the suite started from the manifest "
                            f"has cluster.nodes = {nodes}")
        need = declared_device_nodes(manifest)
        if len(with_devices) < need:
            problems.append(f"{what} records {len(with_devices)} node(s) with devices; the cluster the suite started "
                            f"from the manifest has {need} under its declared accelerator.env, each with "
                            f"devices_per_node = {n}")
    wrong = {k: v for k, v in with_devices.items() if v != n}
    if wrong:
        problems.append(f"{what}: nodes advertise {wrong} units of {resource or 'the resource'}; expected {n} each "
                        "(the manifest's devices_per_node)")
    return problems


@JUDGES.rule(needs=("device_counts", "resource"))
def nodes_advertise_expected_count(m: Metrics, p: Mapping[str, Any], manifest: Mapping[str, Any]) -> Verdict:
    """DP-006: every alive node is recorded and every node with devices advertises the manifest's
    devices per node; on a cluster the suite started, the nodes are the manifest's, each with its
    devices (node_set_problems)."""
    counts = _counts(m, "device_counts")
    problems = _resource_recorded(m, manifest) + node_set_problems(counts, manifest, "device_counts", False,
                                                                          m.get("resource"))
    with_devices = [k for k, v in counts.items() if v > 0]
    return _verdict(problems, f"{len(with_devices)} node(s) advertise {manifest_devices(manifest)} each")


@JUDGES.rule(needs=("probe", "node_types", "resource"))
def accelerator_type_probed_and_advertised(m: Metrics, p: Mapping[str, Any], manifest: Mapping[str, Any]) -> Verdict:
    """DP-007: the manager's type is the manifest's, and every node with devices carries it."""
    probe = contract_probe(m)
    want = manifest_type(manifest)
    problems = _resource_recorded(m, manifest)
    entry = probe["methods"]["get_current_node_accelerator_type"]
    if not entry["ok"]:
        problems.append(f"get_current_node_accelerator_type() raised {entry['error']}")
    elif entry["result"].get("value") != want:
        problems.append(f"get_current_node_accelerator_type() = {entry['result'].get('value')!r}; "
                        f"the manifest expects {want!r}")
    nodes = _mapping(m.get("node_types"), "metric node_types")
    # node_types names the nodes with devices: as many as the cluster has (node_set_problems)
    problems += node_set_problems({str(k): float(manifest_devices(manifest)) for k in nodes}, manifest,
                                  "node_types", True)
    key = f"accelerator_type:{want}"
    for node, types in sorted(nodes.items()):
        found = {k: number(_mapping(types, f"node_types.{node}"), k) for k in _mapping(types, f"node_types.{node}")}
        if found.get(key) != 1:
            problems.append(f"node {node} advertises {sorted(found) or 'no accelerator type'}; expected {key}")
    return _verdict(problems, f"type {want} probed and advertised by {len(nodes)} node(s)")


def _seen(entry: Any, where: str) -> tuple[bool, str | None, list[str]]:
    """What a task or actor saw (conformance.cluster.probes.visible_state): variable set, its value,
    the ids Ray assigned."""
    entry = _mapping(entry, where)
    return (_bool(entry.get("env_set"), f"{where}.env_set"), _str_or_none(entry.get("env_value"), f"{where}.env_value"),
            _ids(entry.get("assigned"), f"{where}.assigned"))


def split_ids(value: str | None) -> list[str]:
    """The ids a visible-devices value lists (as conformance.cluster.probes.split_ids reads them)."""
    return [] if not value else [v.strip() for v in value.split(",")]


@JUDGES.rule(needs=("tasks_run", "tasks", "resource"), params=("tasks",), counts=(("tasks_run", "tasks"),))
@each_node((("tasks_run", "tasks"),))
def one_device_task_sees_its_id(m: Metrics, p: Mapping[str, Any], manifest: Mapping[str, Any]) -> Verdict:
    """DP-008: each 1-unit task sees exactly one id in the variable, the one Ray assigned."""
    tasks = _list(m.get("tasks"), "metric tasks")
    problems = _resource_recorded(m, manifest)
    if len(tasks) != param_value(p, "tasks"):
        problems.append(f"tasks records {len(tasks)} task(s); the release runs {param_value(p, 'tasks'):g}")
    for i, t in enumerate(tasks):
        env_set, value, assigned = _seen(t, f"tasks[{i}]")
        ids = split_ids(value)
        if len(assigned) != 1:
            problems.append(f"task {i}: Ray assigned {assigned} to a 1-unit task")
        elif not env_set:
            problems.append(f"task {i}: the variable is not set in a task that holds 1 unit")
        elif len(ids) != 1:
            problems.append(f"task {i}: a 1-device task sees {value!r}; expected one id")
        elif ids != assigned:
            problems.append(f"task {i}: a 1-device task sees {value!r} but Ray assigned {assigned}")
    return _verdict(problems, "every 1-unit task saw exactly its id")


@JUDGES.rule(needs=("devices_by_node", "ids_by_node", "resource"))
def concurrent_actors_get_disjoint_ids(m: Metrics, p: Mapping[str, Any], manifest: Mapping[str, Any]) -> Verdict:
    """DP-009: on each node, devices_per_node 1-unit actors see disjoint ids, each the one Ray
    assigned, covering every device."""
    devices = _counts(m, "devices_by_node")
    seen = _mapping(m.get("ids_by_node"), "metric ids_by_node")
    problems = _resource_recorded(m, manifest) + node_set_problems(devices, manifest, "devices_by_node", True)
    n = manifest_devices(manifest)
    if set(seen) != set(devices):
        problems.append(f"actors were recorded on nodes {sorted(seen)}, devices on {sorted(devices)}")
    for node, count in sorted(devices.items()):
        if count != n:
            problems.append(f"node {node} holds {count:g} devices; the manifest says {n}")
        actors = _list(seen.get(node, []), f"ids_by_node.{node}")
        if len(actors) != count:
            problems.append(f"{len(actors)} actor(s) recorded on node {node}, which has {count:g} devices")
        flat: list[str] = []
        for i, a in enumerate(actors):
            _, value, assigned = _seen(a, f"ids_by_node.{node}[{i}]")
            ids = split_ids(value)
            if ids != assigned:
                problems.append(f"an actor on node {node} sees {value!r} but Ray assigned {assigned}")
            flat += ids
        if len(flat) != len(set(flat)):
            problems.append(f"concurrent 1-device actors on node {node} share ids: {flat}")
        elif len(flat) != len(actors):
            problems.append(f"{len(actors)} actors on node {node} see ids {flat}")
    return _verdict(problems, "concurrent actors hold disjoint ids covering every device")


@JUDGES.rule(needs=("calls_made", "calls", "resource"), params=("calls",), counts=(("calls_made", "calls"),))
@each_node((("calls_made", "calls"),))
def actor_keeps_its_id(m: Metrics, p: Mapping[str, Any], manifest: Mapping[str, Any]) -> Verdict:
    """DP-010: in every call the variable, Ray's assignment and the manager's view agree, on one
    id that never changes."""
    calls = _list(m.get("calls"), "metric calls")
    problems = _resource_recorded(m, manifest)
    if len(calls) != param_value(p, "calls"):
        problems.append(f"calls records {len(calls)} call(s); the release makes {param_value(p, 'calls'):g}")
    first = None
    for i, c in enumerate(calls):
        _, value, assigned = _seen(c, f"calls[{i}]")
        view = c.get("manager_view")   # the manager's own answer in the worker: ids, None, or what it raised
        view_ids = ([] if view is None else list(view) if isinstance(view, list) and all(isinstance(v, str) for v in view)
                    else [f"not ids: {view!r}"])
        if len(assigned) != 1:
            problems.append(f"call {i}: Ray assigned {assigned} to a 1-unit actor")
        if not split_ids(value) == assigned == view_ids:
            problems.append(f"call {i}: the variable is {value!r}, Ray assigned {assigned}, the manager sees "
                            f"{view!r}; they must agree")
        state = (value, tuple(assigned), tuple(view_ids))
        first = first or state
        if state != first:
            problems.append(f"call {i}: the actor's device changed from {first[0]!r} to {value!r}")
    return _verdict(problems, "the actor kept its one id")


@JUDGES.rule(needs=("requested", "task", "resource"))
@each_node(())
def two_device_task_sees_both_ids(m: Metrics, p: Mapping[str, Any], manifest: Mapping[str, Any]) -> Verdict:
    """DP-011: a 2-unit task sees exactly the two distinct ids Ray assigned."""
    requested = number(m, "requested")
    problems = _resource_recorded(m, manifest)
    if requested != 2:   # the requirement's request: 2 units
        problems.append(f"the task requested {requested:g} units; the check requests 2")
    if manifest_devices(manifest) < 2:  # knob: structure: DP-011 requests 2 units
        problems.append("the manifest declares fewer than 2 devices per node: this check is not applicable, no pass")
    _, value, assigned = _seen(m.get("task"), "task")
    ids = split_ids(value)
    if len(assigned) != 2:
        problems.append(f"Ray assigned {assigned} to a 2-device task")
    elif sorted(ids) != sorted(assigned) or len(set(ids)) != 2:
        problems.append(f"a 2-device task sees {value!r}; Ray assigned {assigned}")
    return _verdict(problems, "the 2-unit task saw both its ids")


@JUDGES.rule(needs=("rounds_run", "rounds", "resource"), params=("rounds",), counts=(("rounds_run", "rounds"),))
@each_node((("rounds_run", "rounds"),))
def task_without_resource_sees_no_variable(m: Metrics, p: Mapping[str, Any], manifest: Mapping[str, Any]) -> Verdict:
    """DP-012: after a device task on the same workers, a task without the resource has no variable."""
    rounds = _list(m.get("rounds"), "metric rounds")
    problems = _resource_recorded(m, manifest)
    if len(rounds) != param_value(p, "rounds"):
        problems.append(f"rounds records {len(rounds)} round(s); the release runs {param_value(p, 'rounds'):g}")
    for i, r in enumerate(rounds):
        env_set, value, assigned = _seen(r, f"rounds[{i}]")
        if assigned:
            problems.append(f"round {i}: Ray assigned {assigned} to a task that requested none")
        if env_set:
            problems.append(f"round {i}: a task without the resource sees {value!r}; expected the variable unset")
    return _verdict(problems, "tasks without the resource never saw the variable")


@JUDGES.rule(needs=("probe", "ran", "resource"))
def valid_quantities_accepted_and_run(m: Metrics, p: Mapping[str, Any], manifest: Mapping[str, Any]) -> Verdict:
    """DP-013: the validator accepts every valid quantity, and each that fits a node ran, holding
    as many ids as the request rounds up to."""
    probe = contract_probe(m, ("validate",))
    ran = _mapping(m.get("ran"), "metric ran")
    problems = _resource_recorded(m, manifest)
    n = manifest_devices(manifest)
    for q in manifest_quantities(manifest)["valid"]:
        accepted, message, problem = validation_result(probe, q)
        if problem:
            problems.append(problem)
        elif not accepted:
            problems.append(f"validate_resource_request_quantity({q:g}) refused a quantity the manifest "
                            f"declares valid: {message!r}")
        if q > n:
            continue
        entry = ran.get(_key(q))
        if entry is None:
            problems.append(f"no task requesting {q:g} units was recorded")
            continue
        entry = _mapping(entry, f"ran.{_key(q)}")
        if "error" in entry:
            problems.append(f"a task requesting {q:g} units did not run: {entry['error']}")
            continue
        assigned = _ids(entry.get("assigned"), f"ran.{_key(q)}.assigned")
        if len(assigned) != max(1, math.ceil(q)) or len(set(assigned)) != len(assigned):
            problems.append(f"a task requesting {q:g} units holds {assigned}")
    return _verdict(problems, "every valid quantity was accepted and ran")


@JUDGES.rule(needs=("probe", "submissions", "resource"))
def invalid_quantities_refused_with_message(m: Metrics, p: Mapping[str, Any], manifest: Mapping[str, Any]) -> Verdict:
    """DP-014: the validator refuses every invalid quantity with a message, and Ray refuses a task
    submitted with it at .remote() with that message."""
    probe = contract_probe(m, ("validate",))
    subs = _mapping(m.get("submissions"), "metric submissions")
    problems = _resource_recorded(m, manifest)
    invalid = manifest_quantities(manifest)["invalid"]
    if not invalid:
        problems.append("the manifest declares no invalid quantities: this check is not applicable, no pass")
    for q in invalid:
        accepted, message, problem = validation_result(probe, q)
        if problem:
            problems.append(problem)
            continue
        if accepted:
            problems.append(f"validate_resource_request_quantity({q:g}) accepted a quantity the manifest "
                            "declares invalid")
            continue
        if not message:
            problems.append(f"validate_resource_request_quantity({q:g}) refused without a message")
            continue
        entry = subs.get(_key(q))
        if entry is None:
            problems.append(f"no submission of {q:g} units was recorded")
            continue
        entry = _mapping(entry, f"submissions.{_key(q)}")
        if not _bool(entry.get("refused"), f"submissions.{_key(q)}.refused"):
            problems.append(f"submitting a task with {q:g} units was accepted; expected a refusal with {message!r}")
        elif message not in str(entry.get("error") or ""):
            problems.append(f"submitting {q:g} units was refused, but not with the plugin's message {message!r}: "
                            f"{str(entry.get('error'))[:200]}")
    return _verdict(problems, "every invalid quantity was refused with the plugin's message")


@JUDGES.rule(needs=("advertised", "preset", "resource"), params=("min_devices_per_node",))
def preset_variable_restricts_node(m: Metrics, p: Mapping[str, Any], manifest: Mapping[str, Any]) -> Verdict:
    """DP-015: a node started with the variable preset to two ids advertises two units, and a
    2-unit task there sees exactly those ids."""
    advertised = number(m, "advertised")
    preset = _ids(m.get("preset"), "metric preset")
    problems = _resource_recorded(m, manifest)
    need = param_value(p, "min_devices_per_node")
    if manifest_devices(manifest) < need:
        problems.append(f"the manifest declares fewer than {need:g} devices per node: this check is not "
                        "applicable, no pass")
    if len(preset) != 2 or len(set(preset)) != 2:   # the shape pre-selects two ids (a third stays hidden)
        problems.append(f"the node was started with the ids {preset}; the check pre-selects two")
    if advertised != len(preset):   # no 2-unit task was run on a node that does not advertise them
        problems.append(f"with the variable preset to {','.join(preset)} the node advertises {advertised:g} units; "
                        f"expected {len(preset)}")
        return _verdict(problems, "")
    _, value, assigned = _seen(m.get("task"), "metric task")
    if sorted(split_ids(value)) != sorted(preset):
        problems.append(f"with {','.join(preset)} preset, a 2-device task sees {value!r}; expected {preset}")
    if len(assigned) != 2:
        problems.append(f"Ray assigned {assigned} to a 2-device task")
    return _verdict(problems, "the preset variable restricts the node")
