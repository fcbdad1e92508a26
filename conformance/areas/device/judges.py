"""The device area's judges: each check's recorded evidence + the release's params -> its outcome.

The checklist names a check's judge (`judge: <function name>`); the live check decides with it
(CheckContext.decide) and `verify` decides again with it (conformance/report/judges.py says the
rules every judge keeps). Pure: no Ray, no clock, no I/O.

The contract checks record the slice of the run's contract probe their `problems_*` function
reads (conformance.areas.device.evidence); their judges recompute the same problems from it. The
live and host checks record what each task, actor, node and host probe saw. Every judge also
holds the evidence to what the release and the manifest fix: the resource name, the accelerator
type, the devices per node and the node count the manifest declares, the quantities and host
overlays it declares (each must have been exercised), and the counts and ids the release's
params fix (tasks, calls, rounds, the ids set). Evidence that is not what a probe writes (a
number that is not one, a type name beside a value of another type) is an error, never a pass.
"""
from __future__ import annotations

import math
from typing import Any, Callable, Mapping

from conformance.areas.device.contract import (
    problems_env_var_written,
    problems_no_stray_vars,
    problems_resource_name,
    problems_round_trip,
    problems_types,
    problems_unset_is_none,
    validation_result,
)
from conformance.areas.device.contract_probe import ROUND_TRIPS
from conformance.areas.device.evidence import BASIC_METHODS
from conformance.areas.device.host_detection import (
    DETECTION_METHODS,
    problems_detection,
    problems_noset,
    problems_overcommit,
    problems_unknown_device,
    problems_warned,
)
from conformance.catalog.manifest import DEFAULT_QUANTITIES, declared_device_nodes
from conformance.report.judges import (
    FAIL,
    PASS,
    JudgeTable,
    MissingEvidence,
    Verdict,
    number,
    param_value,
    ran_remote,
)

JUDGES = JudgeTable()

Metrics = Mapping[str, Any]


# ------------------------------------------------------------------------------ the manifest
def _accelerator(manifest: Mapping[str, Any]) -> Mapping[str, Any]:
    acc = manifest.get("accelerator") if isinstance(manifest, Mapping) else None
    if not isinstance(acc, Mapping):
        raise MissingEvidence("the manifest has no accelerator block")
    return acc


def manifest_resource(manifest: Mapping[str, Any]) -> str:
    name = _accelerator(manifest).get("resource_name")
    if not isinstance(name, str) or not name:
        raise MissingEvidence("the manifest has no accelerator.resource_name")
    return name


def manifest_type(manifest: Mapping[str, Any]) -> str:
    expected = _accelerator(manifest).get("expected")
    typ = expected.get("accelerator_type") if isinstance(expected, Mapping) else None
    if not isinstance(typ, str) or not typ:
        raise MissingEvidence("the manifest has no accelerator.expected.accelerator_type")
    return typ


def manifest_devices(manifest: Mapping[str, Any]) -> int:
    expected = _accelerator(manifest).get("expected")
    n = expected.get("devices_per_node") if isinstance(expected, Mapping) else None
    if isinstance(n, bool) or not isinstance(n, int) or n < 1:
        raise MissingEvidence("the manifest has no accelerator.expected.devices_per_node")
    return n


def manifest_nodes(manifest: Mapping[str, Any]) -> int:
    cluster = manifest.get("cluster") if isinstance(manifest, Mapping) else None
    n = cluster.get("nodes", 1) if isinstance(cluster, Mapping) else 1   # the schema's default
    return n if isinstance(n, int) and not isinstance(n, bool) and n >= 1 else 1


def manifest_quantities(manifest: Mapping[str, Any]) -> dict[str, list[float]]:
    """accelerator.quantities with the manifest's defaults (conformance.catalog.manifest)."""
    q = _accelerator(manifest).get("quantities") or {}
    return {k: [float(v) for v in q.get(k, DEFAULT_QUANTITIES[k])] for k in ("valid", "invalid")}


def _key(q: float) -> str:
    """How the probe and the live checks key a quantity (repr of a float)."""
    return repr(float(q))


# ------------------------------------------------------------------------------ evidence shapes
def _mapping(value: Any, where: str) -> Mapping[str, Any]:
    if not isinstance(value, Mapping):
        raise MissingEvidence(f"{where} is missing or not an object")
    return value


def _list(value: Any, where: str) -> list[Any]:
    if not isinstance(value, list):
        raise MissingEvidence(f"{where} is missing or not a list")
    return value


def _str_or_none(value: Any, where: str) -> str | None:
    if value is not None and not isinstance(value, str):
        raise MissingEvidence(f"{where} is not a string or null")
    return value


def _bool(value: Any, where: str) -> bool:
    if not isinstance(value, bool):
        raise MissingEvidence(f"{where} is missing or not true/false")
    return value


def _ids(value: Any, where: str) -> list[str]:
    items = _list(value, where)
    if not all(isinstance(i, str) for i in items):
        raise MissingEvidence(f"{where} holds something other than id strings")
    return items


def _typed_value(kind: Any, value: Any, where: str) -> None:
    """A value beside its recorded Python type name: they must agree (a forged `int` that is NaN,
    a string or a bool is malformed evidence)."""
    if not isinstance(kind, str):
        raise MissingEvidence(f"{where}.type is missing")
    ok = {"int": lambda v: isinstance(v, int) and not isinstance(v, bool),
          "float": lambda v: isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v),
          "bool": lambda v: isinstance(v, bool), "str": lambda v: isinstance(v, str),
          "NoneType": lambda v: v is None}.get(kind)
    if ok is not None and not ok(value):
        raise MissingEvidence(f"{where}.value {value!r} is not a {kind}")


def _description(d: Any, where: str) -> None:
    """A return value as the contract probe describes it (conformance.run.probe_calls.describe)."""
    d = _mapping(d, where)
    kind = d.get("type")
    if kind in ("list", "tuple"):
        for i, item in enumerate(_list(d.get("items"), f"{where}.items")):
            _description(item, f"{where}.items[{i}]")
    elif kind == "dict":
        for k, item in _mapping(d.get("items"), f"{where}.items").items():
            item = _mapping(item, f"{where}.items.{k}")
            if not isinstance(item.get("key_type"), str) or not isinstance(item.get("type"), str):
                raise MissingEvidence(f"{where}.items.{k} lacks its key and value types")
    else:
        _typed_value(kind, d.get("value"), where)


def _call(entry: Any, where: str) -> Mapping[str, Any]:
    """One call of the contract probe: ok and its described result, or the error it raised."""
    entry = _mapping(entry, where)
    if _bool(entry.get("ok"), f"{where}.ok"):
        _description(entry.get("result"), f"{where}.result")
    elif not isinstance(entry.get("error"), str):
        raise MissingEvidence(f"{where}.error is missing")
    return entry


def contract_probe(m: Metrics, parts: tuple[str, ...] = ()) -> dict[str, Any]:
    """The recorded slice of the contract probe, checked to be what the probe writes."""
    probe = dict(_mapping(m.get("probe"), "metric probe"))
    _str_or_none(probe.get("env_var"), "probe.env_var")
    methods = _mapping(probe.get("methods"), "probe.methods")
    for name in BASIC_METHODS:
        _call(methods.get(name), f"probe.methods.{name}")
    if "validate" in parts:
        for q, entry in _mapping(probe.get("validate"), "probe.validate").items():
            _call(entry, f"probe.validate.{q}")
    if "unset_get" in parts and probe.get("env_var") is not None:
        _call(probe.get("unset_get"), "probe.unset_get")
    if "round_trips" in parts and probe.get("env_var") is not None:
        for i, trip in enumerate(_list(probe.get("round_trips"), "probe.round_trips")):
            trip = _mapping(trip, f"probe.round_trips[{i}]")
            _ids(trip.get("ids"), f"probe.round_trips[{i}].ids")
            _ids(trip.get("changed_vars"), f"probe.round_trips[{i}].changed_vars")
            _str_or_none(trip.get("env_value"), f"probe.round_trips[{i}].env_value")
            _call(trip.get("set"), f"probe.round_trips[{i}].set")
            _call(trip.get("get"), f"probe.round_trips[{i}].get")
    return probe


def _observed(entry: Any, where: str) -> Mapping[str, Any]:
    """One observed call of a host probe (conformance.areas.device.host_detection.observe)."""
    entry = _mapping(entry, where)
    seconds = number(entry, "seconds") if "seconds" in entry else None
    if seconds is None or seconds < 0:
        raise MissingEvidence(f"{where}.seconds is missing or negative")
    for i, r in enumerate(_list(entry.get("records"), f"{where}.records")):
        r = _mapping(r, f"{where}.records[{i}]")
        if not all(isinstance(r.get(k), str) for k in ("level", "logger", "message")):
            raise MissingEvidence(f"{where}.records[{i}] lacks its level, logger or message")
    if _bool(entry.get("ok"), f"{where}.ok"):
        _typed_value(entry.get("type"), entry.get("value"), where)
    elif not isinstance(entry.get("error"), str):
        raise MissingEvidence(f"{where}.error is missing")
    return entry


def detection_probe(value: Any, where: str) -> dict[str, Any]:
    """A host's detection probe: every detection method observed."""
    probe = dict(_mapping(value, where))
    for method in DETECTION_METHODS:
        _observed(probe.get(method), f"{where}.{method}")
    return probe


def _verdict(problems: list[str], passed: str) -> Verdict:
    return Verdict(FAIL, "; ".join(problems)) if problems else Verdict(PASS, passed)


def _resource_recorded(m: Metrics, manifest: Mapping[str, Any]) -> list[str]:
    """The resource the live evidence was taken for is the manifest's."""
    want = manifest_resource(manifest)
    got = m.get("resource")
    if not isinstance(got, str):
        raise MissingEvidence("metric resource is missing")
    return [] if got == want else [f"the evidence is of resource {got!r}; the manifest's is {want!r}"]


# ------------------------------------------------------------------------------ contract (DP-001 .. DP-005, DP-016)
def _env_var_problems(probe: Mapping[str, Any]) -> list[str]:
    """A visible-ids check passes only where the manager names a variable (else it is not
    applicable), and the variable the probe used is the one the manager named."""
    env_var = probe.get("env_var")
    if env_var is None:
        return ["the manager names no visible-devices variable, so this check is not applicable: no pass"]
    named = probe["methods"]["get_visible_accelerator_ids_env_var"]
    if not named["ok"] or named["result"].get("value") != env_var:
        return [f"the probe used {env_var!r}, but get_visible_accelerator_ids_env_var() is not that"]
    return []


def _round_trip_problems(probe: Mapping[str, Any]) -> list[str]:
    """The probe set exactly the release's ids (DP-003's requirement names them)."""
    trips = [t["ids"] for t in probe.get("round_trips", [])]
    if trips != ROUND_TRIPS:
        return [f"the probe's round trips set {trips}; the release's contract probe sets {ROUND_TRIPS}"]
    return []


@JUDGES.rule(needs=("probe",))
def documented_return_types(m: Metrics, p: Mapping[str, Any], manifest: Mapping[str, Any]) -> Verdict:
    """DP-001: every method's recorded return has its documented type, and every quantity the
    manifest declares (and 1) was validated."""
    probe = contract_probe(m, ("validate",))
    problems = problems_types(probe)
    q = manifest_quantities(manifest)
    missing = sorted({_key(v) for v in (1.0, *q["valid"], *q["invalid"])} - set(probe["validate"]))
    if missing:
        problems.append(f"validate_resource_request_quantity was not probed with {', '.join(missing)} "
                        "(1 and the manifest's accelerator.quantities)")
    return _verdict(problems, "every method returns its documented type")


@JUDGES.rule(needs=("probe",))
def resource_name_valid_and_declared(m: Metrics, p: Mapping[str, Any], manifest: Mapping[str, Any]) -> Verdict:
    """DP-002: the name is a valid, unreserved Ray resource name and the manifest's."""
    probe = contract_probe(m)
    return _verdict(problems_resource_name(probe, manifest_resource(manifest)),
                    "a valid resource name, the manifest's")


def _visible_ids_judge(problems_of: Callable[[dict[str, Any]], list[str]], part: str,
                       trips: bool) -> Callable[[Metrics, Mapping[str, Any], Mapping[str, Any]], Verdict]:
    def decide(m: Metrics, p: Mapping[str, Any], manifest: Mapping[str, Any]) -> Verdict:
        probe = contract_probe(m, (part,))
        problems = _env_var_problems(probe)
        if not problems:
            problems = (_round_trip_problems(probe) if trips else []) + problems_of(probe)
        return _verdict(problems, "the visible-ids calls keep the contract")
    return decide


@JUDGES.rule(needs=("probe",))
def visible_ids_round_trip(m: Metrics, p: Mapping[str, Any], manifest: Mapping[str, Any]) -> Verdict:
    """DP-003: set then get returns exactly the ids, as strings, for the release's ids."""
    return _visible_ids_judge(problems_round_trip, "round_trips", True)(m, p, manifest)


@JUDGES.rule(needs=("probe",))
def unset_variable_reads_none(m: Metrics, p: Mapping[str, Any], manifest: Mapping[str, Any]) -> Verdict:
    """DP-004: with the variable unset, get returns None."""
    return _visible_ids_judge(problems_unset_is_none, "unset_get", False)(m, p, manifest)


@JUDGES.rule(needs=("probe",))
def named_variable_written(m: Metrics, p: Mapping[str, Any], manifest: Mapping[str, Any]) -> Verdict:
    """DP-005: set writes the variable the manager names."""
    return _visible_ids_judge(problems_env_var_written, "round_trips", True)(m, p, manifest)


@JUDGES.rule(needs=("probe",))
def no_other_variable_written(m: Metrics, p: Mapping[str, Any], manifest: Mapping[str, Any]) -> Verdict:
    """DP-016: set changes no variable but the named one."""
    return _visible_ids_judge(problems_no_stray_vars, "round_trips", True)(m, p, manifest)


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


# ------------------------------------------------------------------------------ other hosts (DP-017 .. DP-020)
@JUDGES.rule(needs=("probe", "resource"), params=("max_detect_s",))
def host_without_device_detects_nothing(m: Metrics, p: Mapping[str, Any], manifest: Mapping[str, Any]) -> Verdict:
    """DP-017: detection under the manifest's without_device overlay finds nothing, quickly and
    quietly; the node started that way came up without the resource or a type, and detection in a
    worker there agrees."""
    max_s = param_value(p, "max_detect_s")
    hosts = _accelerator(manifest).get("hosts") or {}
    problems = _resource_recorded(m, manifest)
    if "without_device" not in hosts:
        problems.append("the manifest declares no accelerator.hosts.without_device: this check is not "
                        "applicable, no pass")
    problems += problems_detection(detection_probe(m.get("probe"), "metric probe"), "without the device", max_s)
    if "live" in m:   # a --ray-address cluster without such a node: only the probe ran
        if not isinstance(m.get("live"), str) or not ran_remote(manifest):
            problems.append("records `live` (no node without the device in the cluster: only the probe ran), but the "
                            "run started its own cluster, which has such a node: the node's and its worker's "
                            "evidence is missing")
        elif "node" in m or "worker" in m:
            problems.append("records `live` (no node without the device) beside a node without the device")
        return _verdict(problems, "detection without the device finds nothing (no live node)")
    start = _mapping(m.get("start"), "metric start")
    if not _bool(start.get("ok"), "start.ok"):
        problems.append(f"a cluster with a node without the device did not start: {start.get('error')}")
        return _verdict(problems, "")
    for r in _list(start.get("errors", []), "start.errors")[:3]:
        r = _mapping(r, "start.errors[]")
        problems.append(f"while that node started, {r.get('logger')} logged {r.get('level')}: {r.get('message')}")
    if m.get("node") is None:
        problems.append(f"the node started as a host without the device advertises {manifest_resource(manifest)}")
        return _verdict(problems, "")
    node = _mapping(m.get("node"), "metric node")
    if number(node, "advertises") != 0:
        problems.append(f"the node started as a host without the device advertises {node['advertises']:g} units")
    types = _ids(node.get("accelerator_types"), "node.accelerator_types")
    if types:
        problems.append(f"the node without devices advertises {types}")
    worker = _mapping(m.get("worker"), "metric worker")
    if "error" in worker:
        problems.append(f"a task on the node without devices did not run: {worker['error']}")
    else:
        problems += [x.replace("on a host without the device", "in a worker on the node without devices")
                     for x in problems_detection(detection_probe(worker.get("probe"), "worker.probe"),
                                                 "without the device", max_s)]
    return _verdict(problems, "a host without the device detects nothing and runs work")


FAULT_HOSTS = {"library_error": "whose vendor library fails", "unknown_device": "whose device id is unknown"}


@JUDGES.rule(needs=("probes",), params=("max_detect_s", "require_warning"))
def detection_degrades_under_faults(m: Metrics, p: Mapping[str, Any], manifest: Mapping[str, Any]) -> Verdict:
    """DP-018: under every fault overlay the manifest declares, detection degrades (0 / None),
    quickly, without raising or logging ERROR, and (require_warning) with a warning."""
    max_s = param_value(p, "max_detect_s")
    require_warning = p.get("require_warning")
    if not isinstance(require_warning, bool):
        raise MissingEvidence("param require_warning is missing or not true/false")
    probes = _mapping(m.get("probes"), "metric probes")
    declared = sorted(k for k in FAULT_HOSTS if k in (_accelerator(manifest).get("hosts") or {}))
    problems = []
    if not declared:
        problems.append("the manifest declares no fault host overlay: this check is not applicable, no pass")
    if sorted(probes) != declared:
        problems.append(f"detection was recorded under {sorted(probes)}; the manifest declares {declared}")
    for kind in declared:
        if kind not in probes:
            continue
        seen = detection_probe(probes[kind], f"probes.{kind}")
        if kind == "library_error":
            problems += problems_detection(seen, FAULT_HOSTS[kind], max_s)
        else:
            problems += problems_unknown_device(seen, max_s)
        if require_warning:
            problems += problems_warned(seen, FAULT_HOSTS[kind])
    return _verdict(problems, f"detection degrades under {', '.join(declared)}")


@JUDGES.rule(needs=("request", "result", "env_var", "visible"), params=("visible_ids",))
def node_asking_more_than_visible_refused(m: Metrics, p: Mapping[str, Any], manifest: Mapping[str, Any]) -> Verdict:
    """DP-019: resolving a node's resources with one unit more than the release's visible ids
    fails with Ray's ValueError naming the manifest's resource."""
    request = number(m, "request")
    visible = _ids(m.get("visible"), "metric visible")
    env_var = m.get("env_var")
    if not isinstance(env_var, str) or not env_var:
        raise MissingEvidence("metric env_var is missing")
    want = [str(i) for i in _list(p.get("visible_ids"), "param visible_ids")]
    problems = []
    if visible != want:
        problems.append(f"the node was resolved with {env_var}={','.join(visible)}; the release's visible_ids are {want}")
    if request != len(visible) + 1:
        problems.append(f"the node asked for {request:g} units; the check asks one more than the {len(visible)} visible")
    result = _observed(m.get("result"), "metric result")
    problems += problems_overcommit(dict(result), manifest_resource(manifest), env_var, visible, request)
    return _verdict(problems, "Ray refuses the over-asked node")


@JUDGES.rule(needs=("result", "env_var", "noset_var", "preset", "ids"), params=("preset", "ids"))
def noset_variable_leaves_visible_ids(m: Metrics, p: Mapping[str, Any], manifest: Mapping[str, Any]) -> Verdict:
    """DP-020: with the manifest's opt-out variable set, set leaves the preset value; without it,
    set writes the ids."""
    noset = _accelerator(manifest).get("noset_env_var")
    env_var = m.get("env_var")
    if not isinstance(env_var, str) or not env_var:
        raise MissingEvidence("metric env_var is missing")
    problems = []
    if not isinstance(noset, str) or not noset:
        problems.append("the manifest declares no accelerator.noset_env_var: this check is not applicable, no pass")
    elif m.get("noset_var") != noset:
        problems.append(f"the opt-out variable set was {m.get('noset_var')!r}; the manifest declares {noset!r}")
    preset, ids = str(p.get("preset")), [str(i) for i in _list(p.get("ids"), "param ids")]
    if m.get("preset") != preset or m.get("ids") != ids:
        problems.append(f"the probe preset {m.get('preset')!r} and set {m.get('ids')!r}; the release's are "
                        f"{preset!r} and {ids}")
    result = _mapping(m.get("result"), "metric result")
    for side in ("with_noset", "without_noset"):
        entry = _observed(result.get(side), f"result.{side}")
        _str_or_none(entry.get("after"), f"result.{side}.after")
    problems += problems_noset(dict(result), env_var, str(m.get("noset_var")), preset)
    return _verdict(problems, "the opt-out variable is honoured")

