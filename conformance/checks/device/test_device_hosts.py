"""Device area, other hosts: detection where the device, its driver or a known device id is
missing, and the node-start rules Ray builds on detection (conformance.areas.device.host_detection).

The manifest says how such hosts look (`accelerator.hosts`: environment overlays); the probes
run the manager under them in a fresh process, and DP-017 also starts a node that looks like
that (or, with --conformance-ray-address, finds a node without devices) and runs work there.
"""
from __future__ import annotations

from typing import Any

import pytest

from conformance.areas.device import host_detection as hosts
from conformance.areas.device.context import DeviceCtx
from conformance.cluster.manager import ClusterStartError
from conformance.run.fixtures import not_applicable


def detect_on_this_node(manager_ref: str) -> dict[str, Any]:
    """Runs in a worker on the node under test: the manager's detection, observed."""
    import ray

    from conformance.areas.device import host_detection as h
    from conformance.imports import import_ref
    return {"node_id": ray.get_runtime_context().get_node_id(), "probe": h.detect(import_ref(manager_ref))}


def nodes_without(resource: str) -> list[dict[str, Any]]:
    import ray
    return [n for n in ray.nodes() if n.get("Alive") and n.get("Resources", {}).get(resource, 0) == 0]


def start_with_host(ctx: DeviceCtx) -> list[str]:
    """Start the cluster whose last node looks like the host without the device (shape
    "host-without-device", the check's mark); what went wrong."""
    with hosts.capture_records() as records:
        try:
            ctx.cluster()
        except ClusterStartError as exc:
            return [f"a cluster with a node without the device did not start: {exc}"]
    return [f"while that node started, {r['logger']} logged {r['level']}: {r['message']}"
            for r in records if r["level"] in ("ERROR", "CRITICAL")][:3]


@pytest.mark.cluster("host-without-device")
@pytest.mark.check("DP-017")
def test_host_without_device_detects_nothing_and_runs_work(device_ctx: DeviceCtx) -> None:
    # device_ctx resolved the shape: not applicable without accelerator.hosts.without_device (conformance.cluster.shapes)
    ctx = device_ctx
    max_s = float(ctx.param("max_detect_s"))
    problems = hosts.problems_detection(ctx.probe(ctx.manifest.host_overlay("without_device"), "detect"),  # type: ignore[arg-type]  # declared: the shape resolved
                                        "without the device", max_s)
    resource = ctx.resource
    if ctx.run.ray_address:
        ctx.cluster()   # the vendor's cluster as it is
        candidates = nodes_without(resource)
        if not candidates:
            ctx.metrics["live"] = "the cluster has no node without devices; only the probe ran"
    else:
        start_problems = start_with_host(ctx)
        problems += start_problems
        if start_problems and "did not start" in start_problems[0]:
            raise AssertionError("; ".join(problems))
        candidates = nodes_without(resource)
        if not candidates:
            problems.append(f"the node started as a host without the device advertises {resource}")
    if candidates:
        import ray
        from ray.util.scheduling_strategies import NodeAffinitySchedulingStrategy

        node = candidates[0]
        types = sorted(k for k in node.get("Resources", {}) if k.startswith("accelerator_type:"))
        if types:
            problems.append(f"the node without devices advertises {types}")
        task = ray.remote(detect_on_this_node).options(
            num_cpus=0, scheduling_strategy=NodeAffinitySchedulingStrategy(node["NodeID"], soft=False))
        try:
            seen = ctx.budget.get(task.remote(ctx.manager_ref), ctx.param("task_timeout_s"),
                                  "a task on the node without devices")
        except Exception as exc:  # noqa: BLE001 - the check's finding
            problems.append(f"a task on the node without devices did not run: {exc.__class__.__name__}: "
                            f"{str(exc).splitlines()[0][:300]}")
        else:
            ctx.metrics["node"] = node["NodeID"][:8]
            problems += [p.replace("on a host without the device", "in a worker on the node without devices")
                         for p in hosts.problems_detection(seen["probe"], "without the device", max_s)]
    assert not problems, "; ".join(problems)


@pytest.mark.check("DP-018")
def test_detection_degrades_under_faults(device_ctx: DeviceCtx) -> None:
    ctx = device_ctx
    declared = {k: ctx.manifest.host_overlay(k) for k in ("library_error", "unknown_device")}
    declared = {k: v for k, v in declared.items() if v is not None}
    if not declared:
        not_applicable("the manifest declares neither accelerator.hosts.library_error nor .unknown_device")
    max_s = float(ctx.param("max_detect_s"))
    require_warning = bool(ctx.param("require_warning"))
    problems: list[str] = []
    for kind, env in declared.items():
        seen = ctx.probe(env, "detect")  # type: ignore[arg-type]  # the Nones are filtered out above
        if kind == "library_error":
            host = "whose vendor library fails"
            problems += hosts.problems_detection(seen, host, max_s)
        else:
            host = "whose device id is unknown"
            problems += hosts.problems_unknown_device(seen, max_s)
        if require_warning:
            problems += hosts.problems_warned(seen, host)
    ctx.metrics["faults"] = sorted(declared)
    assert not problems, "; ".join(problems)


@pytest.mark.check("DP-019")
def test_node_asking_more_than_visible_is_refused(device_ctx: DeviceCtx) -> None:
    ctx = device_ctx
    env_var = ctx.env_var
    if env_var is None:
        not_applicable("the manager names no visible-devices variable")
    visible = [str(i) for i in ctx.param("visible_ids")]
    request = float(len(visible) + 1)
    result = ctx.probe(ctx.manifest.accelerator_env, "overcommit", env_var=env_var, visible=visible, request=request)
    problems = hosts.problems_overcommit(result, ctx.resource, env_var, visible, request)
    assert not problems, "; ".join(problems)


@pytest.mark.check("DP-020")
def test_noset_variable_stops_setting_visible_ids(device_ctx: DeviceCtx) -> None:
    ctx = device_ctx
    noset_var = ctx.manifest.noset_env_var
    if noset_var is None:
        not_applicable("the manifest declares no accelerator.noset_env_var (an opt-out of the "
                       "RAY_EXPERIMENTAL_NOSET_* kind)")
    env_var = ctx.env_var
    if env_var is None:
        not_applicable("the manager names no visible-devices variable")
    preset, ids = str(ctx.param("preset")), [str(i) for i in ctx.param("ids")]
    result = ctx.probe(ctx.manifest.accelerator_env, "noset", env_var=env_var, noset_var=noset_var, preset=preset, ids=ids)
    problems = hosts.problems_noset(result, env_var, noset_var, preset)
    assert not problems, "; ".join(problems)
