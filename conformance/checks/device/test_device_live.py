"""Device area, live part: what Ray does with the plugin on a running cluster.

Each check records what every task, actor and node saw (compact: conformance.areas.device.evidence)
and decides by its judge (conformance.areas.device.judges), which `verify` runs again on the
report. DP-007, DP-013 and DP-014 also record the slice of the run's contract probe their
requirement's first half reads, so one record decides the whole check."""
from __future__ import annotations

from typing import Any

import pytest

from conformance.areas.device.context import DeviceCtx
from conformance.areas.device.evidence import contract_evidence, error_text, seen
from conformance.cluster.probes import StateActor, visible_state
from conformance.cluster.requests import demand
from conformance.run.fixtures import not_applicable
from conformance.run.nodes import ALL, alive_nodes, holding, node_of, run_seed, sampled, wave

GET_TIMEOUT_S = 60.0  # knob: hang guard of live device tasks; the DP checks state no time (timing/owned.RAY_NOMINAL_S)


def _ray() -> Any:
    import ray
    return ray


def device_nodes(resource: str) -> list[dict[str, Any]]:
    return [n for n in _ray().nodes() if n.get("Alive") and n.get("Resources", {}).get(resource, 0) > 0]


def pinned(node_id: str) -> Any:
    from ray.util.scheduling_strategies import NodeAffinitySchedulingStrategy
    return NodeAffinitySchedulingStrategy(node_id=node_id, soft=False)


def submit_task(ctx: DeviceCtx, units: float, **options: Any) -> Any:
    fn = _ray().remote(visible_state).options(**{"num_cpus": 0, **demand(ctx.resource, units), **options})
    return fn.remote(ctx.env_var, ctx.resource, ctx.manager_ref)


def run_task(ctx: DeviceCtx, units: float, **options: Any) -> dict[str, Any]:
    state: dict[str, Any] = ctx.budget.get(submit_task(ctx, units, **options), GET_TIMEOUT_S,
                                           f"result of a task requesting {units} {ctx.resource}")
    ctx.exercised([node_of(state)])
    return state


def task_wave(ctx: DeviceCtx, nodes: list[str], units: float, count: int = 1) -> dict[str, list[dict[str, Any]]]:
    """`count` tasks of `units` pinned on each of `nodes`, all submitted at once, one bounded get
    (conformance.run.nodes.wave): node id -> what its tasks saw."""
    return wave(lambda nid: [submit_task(ctx, units, scheduling_strategy=pinned(nid)) for _ in range(count)],
                nodes, lambda refs, what: ctx.budget.get(refs, GET_TIMEOUT_S, what),
                f"results of {count} task(s) requesting {units} {ctx.resource} on each of {len(nodes)} node(s)")


def every_device_node(ctx: DeviceCtx, units: float = 1) -> list[str] | None:
    """The nodes the check's per-node scenario runs on (one read of Ray's view): `--nodes all`, every
    alive node offering `units` of the resource; a sample (the default), the run's seed's choice
    among them (conformance.run.nodes.sampled, which verify recomputes); None for a run without a
    seed (a stand-in), where the check runs where Ray puts it."""
    seed = run_seed(ctx.run)
    if ctx.node_mode == ALL:
        nodes = holding(alive_nodes(), ctx.resource, units)
    elif seed is None:
        return None
    else:
        recorded = (getattr(ctx.run, "devices", None) or {}).get("nodes")
        nodes = sampled(recorded, alive_nodes(), ctx.resource, units, seed, int(getattr(ctx.run, "node_sample_size", 1)))
    if not nodes:
        pytest.fail(f"no node offers {units:g} {ctx.resource}, so no task can hold them", pytrace=False)
    return nodes


def require_env_var(ctx: DeviceCtx) -> None:
    """Per-task visibility checks need a variable, and devices to hand out (else fail fast)."""
    if ctx.env_var is None:
        not_applicable("the manager names no visible-devices variable")
    require_devices(ctx)


def require_devices(ctx: DeviceCtx) -> None:
    if not device_nodes(ctx.resource):
        pytest.fail(f"no node advertises the {ctx.resource} resource, so no task can hold a device",
                    pytrace=False)


@pytest.mark.check("DP-006")
def test_nodes_advertise_expected_count(device_ctx: DeviceCtx) -> None:
    nodes = alive_nodes()
    counts = {n["NodeID"][:8]: n.get("Resources", {}).get(device_ctx.resource, 0) for n in nodes}
    device_ctx.exercised([n["NodeID"] for n in nodes], alive=len(nodes))
    device_ctx.decide(resource=device_ctx.resource, device_counts=counts)


@pytest.mark.check("DP-007")
def test_nodes_advertise_accelerator_type(device_ctx: DeviceCtx) -> None:
    probe = contract_evidence(device_ctx.contract(), "DP-007")
    alive = alive_nodes()
    with_devices = [n for n in alive if n.get("Resources", {}).get(device_ctx.resource, 0) > 0]
    node_types = {n["NodeID"][:8]: {k: v for k, v in n.get("Resources", {}).items() if k.startswith("accelerator_type:")}
                  for n in with_devices}
    device_ctx.exercised([n["NodeID"] for n in with_devices], alive=len(alive))
    device_ctx.decide(resource=device_ctx.resource, probe=probe, node_types=node_types)


@pytest.mark.check("DP-008")
def test_one_device_task_sees_one_id(device_ctx: DeviceCtx) -> None:
    require_env_var(device_ctx)
    count = int(device_ctx.param("tasks"))
    nodes = every_device_node(device_ctx)
    if nodes is not None:   # the same tasks on every device node (all) or the sample's, in one wave
        by_node = task_wave(device_ctx, nodes, 1, count)
        device_ctx.decide_per_node({nid: {"tasks_run": len(states), "tasks": [seen(s) for s in states]}
                                    for nid, states in by_node.items()}, resource=device_ctx.resource)
        return
    tasks = [seen(run_task(device_ctx, 1)) for _ in range(count)]
    device_ctx.decide(resource=device_ctx.resource, tasks_run=len(tasks), tasks=tasks)


@pytest.mark.check("DP-009")
def test_concurrent_actors_get_disjoint_ids(device_ctx: DeviceCtx) -> None:
    require_env_var(device_ctx)
    ray = _ray()
    alive = alive_nodes()
    nodes = [n for n in alive if n.get("Resources", {}).get(device_ctx.resource, 0) > 0]
    device_ctx.exercised([n["NodeID"] for n in nodes], alive=len(alive))
    Actor = ray.remote(StateActor)
    per_node: dict[str, list[Any]] = {}
    devices = {n["NodeID"][:8]: n["Resources"][device_ctx.resource] for n in nodes}
    for n in nodes:
        count = int(n["Resources"][device_ctx.resource])
        per_node[n["NodeID"]] = [Actor.options(num_cpus=0, **demand(device_ctx.resource, 1),
                                               scheduling_strategy=pinned(n["NodeID"]))
                                 .remote(device_ctx.env_var, device_ctx.resource, device_ctx.manager_ref) for _ in range(count)]
    try:
        # one wave: every node's actors asked at once, one bounded get
        states = wave(lambda nid: [a.state.remote() for a in per_node[nid]], list(per_node),
                      lambda refs, what: device_ctx.budget.get(refs, GET_TIMEOUT_S, what),
                      f"state of {sum(map(len, per_node.values()))} actors on {len(per_node)} node(s)")
        ids_by_node = {node_id[:8]: [seen(s) for s in node_states] for node_id, node_states in states.items()}
    finally:
        for actors in per_node.values():
            for a in actors:
                ray.kill(a)
    device_ctx.decide(resource=device_ctx.resource, devices_by_node=devices, ids_by_node=ids_by_node)


@pytest.mark.check("DP-010")
def test_actor_keeps_its_id(device_ctx: DeviceCtx) -> None:
    require_env_var(device_ctx)
    ray = _ray()
    nodes = every_device_node(device_ctx)
    if nodes is not None:   # one actor per node (all, or the sample's), each call a wave over all of them
        on = {nid: ray.remote(StateActor).options(num_cpus=0, **demand(device_ctx.resource, 1), scheduling_strategy=pinned(nid))
              .remote(device_ctx.env_var, device_ctx.resource, device_ctx.manager_ref) for nid in nodes}
        per_node: dict[str, list[dict[str, Any]]] = {nid: [] for nid in nodes}
        try:
            for _ in range(int(device_ctx.param("calls"))):
                got = wave(lambda nid: [on[nid].state.remote()], nodes,
                           lambda refs, what: device_ctx.budget.get(refs, GET_TIMEOUT_S, what),
                           f"state of {len(nodes)} actor(s), one per node")
                for nid, states in got.items():
                    per_node[nid].append(seen(states[0], manager_view=True))
        finally:
            for a in on.values():
                ray.kill(a)
        device_ctx.decide_per_node({nid: {"calls_made": len(c), "calls": c} for nid, c in per_node.items()},
                                   resource=device_ctx.resource)
        return
    actor = ray.remote(StateActor).options(num_cpus=0, **demand(device_ctx.resource, 1)).remote(
        device_ctx.env_var, device_ctx.resource, device_ctx.manager_ref)
    try:
        states = [device_ctx.budget.get(actor.state.remote(), GET_TIMEOUT_S, "actor state")
                  for _ in range(int(device_ctx.param("calls")))]
        device_ctx.exercised([node_of(s) for s in states])
        calls = [seen(s, manager_view=True) for s in states]
    finally:
        ray.kill(actor)
    device_ctx.decide(resource=device_ctx.resource, calls_made=len(calls), calls=calls)


@pytest.mark.check("DP-011")
def test_two_device_task_sees_both_ids(device_ctx: DeviceCtx) -> None:
    require_env_var(device_ctx)
    if device_ctx.n < 2:  # knob: structure: DP-011 requests 2 units
        not_applicable("fewer than 2 devices per node")
    nodes = every_device_node(device_ctx, 2)  # knob: structure: DP-011 requests 2 units
    if nodes is not None:
        by_node = task_wave(device_ctx, nodes, 2)
        device_ctx.decide_per_node({nid: {"task": seen(states[0])} for nid, states in by_node.items()},
                                   resource=device_ctx.resource, requested=2)
        return
    device_ctx.decide(resource=device_ctx.resource, requested=2, task=seen(run_task(device_ctx, 2)))


@pytest.mark.check("DP-012")
def test_task_without_resource_sees_no_variable(device_ctx: DeviceCtx) -> None:
    require_env_var(device_ctx)
    nodes = every_device_node(device_ctx)
    if nodes is not None:   # each round is two waves over the nodes (all, or the sample's)
        per_node: dict[str, list[dict[str, Any]]] = {nid: [] for nid in nodes}
        for _ in range(int(device_ctx.param("rounds"))):
            task_wave(device_ctx, nodes, 1)
            for nid, states in task_wave(device_ctx, nodes, 0).items():
                per_node[nid].append(seen(states[0]))
        device_ctx.decide_per_node({nid: {"rounds_run": len(r), "rounds": r} for nid, r in per_node.items()},
                                   resource=device_ctx.resource)
        return
    rounds = []
    for _ in range(int(device_ctx.param("rounds"))):
        run_task(device_ctx, 1)  # a device task first, on the same workers: visibility must not leak
        rounds.append(seen(run_task(device_ctx, 0)))
    device_ctx.decide(resource=device_ctx.resource, rounds_run=len(rounds), rounds=rounds)


@pytest.mark.check("DP-013")
def test_valid_quantities_schedule_and_run(device_ctx: DeviceCtx) -> None:
    probe = contract_evidence(device_ctx.contract(), "DP-013")
    require_devices(device_ctx)
    ran: dict[str, dict[str, Any]] = {}
    for q in device_ctx.manifest.quantities["valid"]:
        if q > device_ctx.n:
            continue
        try:
            ran[repr(float(q))] = {"assigned": run_task(device_ctx, q)["assigned"]}
        except Exception as exc:  # noqa: BLE001 - any refusal or timeout is the finding
            ran[repr(float(q))] = {"error": error_text(exc)}
    device_ctx.decide(resource=device_ctx.resource, probe=probe, ran=ran)


@pytest.mark.check("DP-014")
def test_invalid_quantities_refused_at_submission(device_ctx: DeviceCtx) -> None:
    if not device_ctx.manifest.quantities["invalid"]:
        not_applicable("the manifest declares no invalid quantities (accelerator.quantities.invalid)")
    from conformance.areas.device.contract import validation_result

    probe = device_ctx.contract()
    ray = _ray()
    submissions: dict[str, dict[str, Any]] = {}
    for q in device_ctx.manifest.quantities["invalid"]:
        accepted, message, problem = validation_result(probe, q)
        if problem or accepted:   # the validator's half already fails (the judge says how): nothing to submit
            continue
        fn = ray.remote(visible_state)
        try:
            ref = fn.options(num_cpus=0, **demand(device_ctx.resource, q)).remote(device_ctx.env_var, device_ctx.resource)
        except ValueError as exc:
            submissions[repr(float(q))] = {"refused": True, "error": error_text(exc, message)}
            continue
        ray.cancel(ref, force=True)
        submissions[repr(float(q))] = {"refused": False}
    device_ctx.decide(resource=device_ctx.resource, probe=contract_evidence(probe, "DP-014"), submissions=submissions)


@pytest.mark.check("DP-015")
def test_preset_visible_variable_restricts_node(device_ctx: DeviceCtx) -> None:
    # device_ctx resolved the shape: n/a when the manager names no visible-devices variable, or with --ray-address
    ctx = device_ctx
    env_var = ctx.env_var
    min_devices = ctx.param("min_devices_per_node")
    if ctx.n < min_devices:
        not_applicable(f"needs at least {min_devices} devices per node to pre-select 2 of them")
    preset = ctx.shape.env(0)[str(env_var)].split(",")  # the shape exists only when the manager names one
    ctx.cluster()
    total = _ray().cluster_resources().get(ctx.resource, 0)
    evidence: dict[str, Any] = {"resource": ctx.resource, "preset": preset, "advertised": total}
    if total == len(preset):   # a 2-unit task waits forever on a node that advertises fewer
        evidence["task"] = seen(run_task(ctx, 2))
        ctx.wait_devices_released()
    ctx.decide(**evidence)
