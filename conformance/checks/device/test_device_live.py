"""Device area, live part: what Ray does with the plugin on a running cluster."""
from __future__ import annotations

from typing import Any

import pytest

from conformance.areas.device.context import DeviceCtx
from conformance.cluster.probes import StateActor, split_ids, visible_state
from conformance.cluster.requests import demand
from conformance.run.fixtures import not_applicable

GET_TIMEOUT_S = 60.0  # knob: hang guard of live device tasks; the DP checks state no time
pytestmark = pytest.mark.cluster("shared")


def _ray() -> Any:
    import ray
    return ray


def device_nodes(resource: str) -> list[dict[str, Any]]:
    return [n for n in _ray().nodes() if n.get("Alive") and n.get("Resources", {}).get(resource, 0) > 0]


def pinned(node_id: str) -> Any:
    from ray.util.scheduling_strategies import NodeAffinitySchedulingStrategy
    return NodeAffinitySchedulingStrategy(node_id=node_id, soft=False)


def run_task(ctx: DeviceCtx, units: float, **options: Any) -> dict[str, Any]:
    ray = _ray()
    fn = ray.remote(visible_state).options(**{"num_cpus": 0, **demand(ctx.resource, units), **options})
    return ctx.budget.get(fn.remote(ctx.env_var, ctx.resource, ctx.manager_ref), GET_TIMEOUT_S,
                          f"result of a task requesting {units} {ctx.resource}")


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
    nodes = [n for n in _ray().nodes() if n.get("Alive")]
    counts = {n["NodeID"][:8]: n.get("Resources", {}).get(device_ctx.resource, 0) for n in nodes}
    device_ctx.metrics["device_counts"] = counts
    with_devices = {k: v for k, v in counts.items() if v > 0}
    assert with_devices, f"no node advertises the {device_ctx.resource} resource (counts: {counts})"
    wrong = {k: v for k, v in with_devices.items() if v != device_ctx.n}
    assert not wrong, f"nodes advertise {wrong} units of {device_ctx.resource}; expected {device_ctx.n} each"


@pytest.mark.check("DP-007")
def test_nodes_advertise_accelerator_type(device_ctx: DeviceCtx) -> None:
    key = f"accelerator_type:{device_ctx.accelerator_type}"
    nodes = device_nodes(device_ctx.resource)
    assert nodes, f"no node advertises {device_ctx.resource}"
    for n in nodes:
        res = n.get("Resources", {})
        types = sorted(k for k in res if k.startswith("accelerator_type:"))
        assert res.get(key) == 1, f"node {n['NodeID'][:8]} advertises {types or 'no accelerator type'}; expected {key}"


@pytest.mark.check("DP-008")
def test_one_device_task_sees_one_id(device_ctx: DeviceCtx) -> None:
    require_env_var(device_ctx)
    for _ in range(3):
        s = run_task(device_ctx, 1)
        ids = split_ids(s["env_value"])
        assert s["env_set"], f"{device_ctx.env_var} is not set in a task that holds 1 {device_ctx.resource}"
        assert len(ids) == 1, f"a 1-device task sees {device_ctx.env_var}={s['env_value']!r}; expected one id"
        assert ids == s["assigned"], (f"a 1-device task sees {device_ctx.env_var}={s['env_value']!r} but Ray assigned "
                                      f"{s['assigned']}")


@pytest.mark.check("DP-009")
def test_concurrent_actors_get_disjoint_ids(device_ctx: DeviceCtx) -> None:
    require_env_var(device_ctx)
    ray = _ray()
    nodes = device_nodes(device_ctx.resource)
    assert nodes, f"no node advertises {device_ctx.resource}"
    Actor = ray.remote(StateActor)
    per_node: dict[str, list[Any]] = {}
    for n in nodes:
        count = int(n["Resources"][device_ctx.resource])
        per_node[n["NodeID"]] = [Actor.options(num_cpus=0, **demand(device_ctx.resource, 1),
                                               scheduling_strategy=pinned(n["NodeID"]))
                                 .remote(device_ctx.env_var, device_ctx.resource, device_ctx.manager_ref) for _ in range(count)]
    try:
        seen = {}
        for node_id, actors in per_node.items():
            states = device_ctx.budget.get([a.state.remote() for a in actors], GET_TIMEOUT_S, f"state of {len(actors)} actors")
            env_ids = [split_ids(s["env_value"]) for s in states]
            seen[node_id[:8]] = [",".join(i) for i in env_ids]
            for s, ids in zip(states, env_ids):
                assert ids == s["assigned"], (f"actor sees {device_ctx.env_var}={s['env_value']!r} but Ray assigned "
                                              f"{s['assigned']}")
            flat = [i for ids in env_ids for i in ids]
            assert len(flat) == len(set(flat)), f"concurrent 1-device actors on node {node_id[:8]} share ids: {flat}"
            assert len(flat) == len(actors), f"{len(actors)} actors on node {node_id[:8]} see ids {flat}"
        device_ctx.metrics["ids_by_node"] = seen
    finally:
        for actors in per_node.values():
            for a in actors:
                ray.kill(a)


@pytest.mark.check("DP-010")
def test_actor_keeps_its_id(device_ctx: DeviceCtx) -> None:
    require_env_var(device_ctx)
    ray = _ray()
    actor = ray.remote(StateActor).options(num_cpus=0, **demand(device_ctx.resource, 1)).remote(
        device_ctx.env_var, device_ctx.resource, device_ctx.manager_ref)
    try:
        first = None
        for call in range(6):
            s = device_ctx.budget.get(actor.state.remote(), GET_TIMEOUT_S, "actor state")
            view = (s["env_value"], tuple(s["assigned"]), tuple(s["manager_view"] or ()))
            assert split_ids(s["env_value"]) == s["assigned"] == list(s["manager_view"] or []), (
                f"call {call}: {device_ctx.env_var}={s['env_value']!r}, Ray assigned {s['assigned']}, "
                f"manager sees {s['manager_view']!r}; they must agree")
            first = first or view
            assert view == first, f"call {call}: the actor's device changed from {first[0]!r} to {view[0]!r}"
    finally:
        ray.kill(actor)


@pytest.mark.check("DP-011")
def test_two_device_task_sees_both_ids(device_ctx: DeviceCtx) -> None:
    require_env_var(device_ctx)
    if device_ctx.n < 2:  # knob: structure: DP-011 requests 2 units
        not_applicable("fewer than 2 devices per node")
    s = run_task(device_ctx, 2)
    ids = split_ids(s["env_value"])
    assert len(s["assigned"]) == 2, f"Ray assigned {s['assigned']} to a 2-device task"
    assert sorted(ids) == sorted(s["assigned"]) and len(set(ids)) == 2, (
        f"a 2-device task sees {device_ctx.env_var}={s['env_value']!r}; Ray assigned {s['assigned']}")


@pytest.mark.check("DP-012")
def test_task_without_resource_sees_no_variable(device_ctx: DeviceCtx) -> None:
    require_env_var(device_ctx)
    for round_ in range(3):
        run_task(device_ctx, 1)  # a device task first, on the same workers: visibility must not leak
        s = run_task(device_ctx, 0)
        assert not s["env_set"], (f"round {round_}: a task without {device_ctx.resource} sees "
                                  f"{device_ctx.env_var}={s['env_value']!r}; expected the variable unset")


@pytest.mark.check("DP-013")
def test_valid_quantities_schedule_and_run(device_ctx: DeviceCtx) -> None:
    require_devices(device_ctx)
    ran = {}
    for q in device_ctx.manifest.quantities["valid"]:
        if q > device_ctx.n:
            continue
        try:
            s = run_task(device_ctx, q)
        except Exception as exc:  # noqa: BLE001 - any refusal or timeout is the finding
            pytest.fail(f"a task requesting {q} {device_ctx.resource} did not run: {exc.__class__.__name__}: "
                        f"{str(exc).splitlines()[0] if str(exc) else ''}", pytrace=False)
        ran[str(q)] = s["assigned"]
    device_ctx.metrics["assigned_by_quantity"] = ran


@pytest.mark.check("DP-014")
def test_invalid_quantities_refused_at_submission(device_ctx: DeviceCtx) -> None:
    if not device_ctx.manifest.quantities["invalid"]:
        not_applicable("the manifest declares no invalid quantities (accelerator.quantities.invalid)")
    ray = _ray()
    for q in device_ctx.manifest.quantities["invalid"]:
        ok, message = device_ctx.manager().validate_resource_request_quantity(q)
        assert not ok and message, f"the plugin accepts {q} (declared invalid)"
        fn = ray.remote(visible_state)
        try:
            ref = fn.options(num_cpus=0, **demand(device_ctx.resource, q)).remote(device_ctx.env_var, device_ctx.resource)
        except ValueError as exc:
            assert message in str(exc), (f"submitting {q} {device_ctx.resource} was refused, but not with the "
                                         f"plugin's message {message!r}: {str(exc)[:200]}")
            continue
        ray.cancel(ref, force=True)
        pytest.fail(f"submitting a task with {q} {device_ctx.resource} was accepted; expected a refusal with "
                    f"{message!r}", pytrace=False)


@pytest.mark.cluster("preset-visible")
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
    ray = _ray()
    total = ray.cluster_resources().get(ctx.resource, 0)
    assert total == len(preset), f"with {env_var}={','.join(preset)} the node advertises {total} {ctx.resource}; expected 2"
    s = run_task(ctx, 2)
    assert sorted(split_ids(s["env_value"])) == preset, (
        f"with {env_var}={','.join(preset)} preset, a 2-device task sees {s['env_value']!r}; expected {preset}")
    ctx.wait_devices_released()
