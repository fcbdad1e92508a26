"""Device area, other hosts: detection where the device, its driver or a known device id is
missing, and the node-start rules Ray builds on detection (conformance.areas.device.host_detection).

The manifest says how such hosts look (`accelerator.hosts`: environment overlays); the probes
run the manager under them in a fresh process, and DP-017 also starts a node that looks like
that (or, with --conformance-ray-address, finds a node without devices) and runs work there.
Each check records what its probes, the node and the worker saw and decides by its judge
(conformance.areas.device.judges), which `verify` runs again on the report.
"""
from __future__ import annotations

from typing import Any

import pytest

from conformance.areas.device import host_detection as hosts
from conformance.areas.device.context import DeviceCtx
from conformance.areas.device.evidence import compact_detection, compact_observed, error_text
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


def start_with_host(ctx: DeviceCtx) -> dict[str, Any]:
    """Start the cluster whose last node looks like the host without the device (shape
    "host-without-device", the check's mark): whether it started, and what was logged at ERROR."""
    with hosts.capture_records() as records:
        try:
            ctx.cluster()
        except ClusterStartError as exc:
            return {"ok": False, "error": error_text(exc)}
    return {"ok": True, "errors": [r for r in records if r["level"] in ("ERROR", "CRITICAL")][:3]}


@pytest.mark.check("DP-017")
def test_host_without_device_detects_nothing_and_runs_work(device_ctx: DeviceCtx) -> None:
    # device_ctx resolved the shape: not applicable without accelerator.hosts.without_device (conformance.cluster.shapes)
    ctx = device_ctx
    evidence: dict[str, Any] = {
        "resource": ctx.resource,
        "probe": compact_detection(ctx.probe(ctx.manifest.host_overlay("without_device"), "detect"))}  # type: ignore[arg-type]  # declared: the shape resolved
    resource = ctx.resource
    if ctx.run.ray_address:
        ctx.cluster()   # the vendor's cluster as it is
        evidence["start"] = {"ok": True, "errors": []}
        candidates = nodes_without(resource)
        if not candidates:
            evidence["live"] = "the cluster has no node without devices; only the probe ran"
    else:
        evidence["start"] = start_with_host(ctx)
        candidates = nodes_without(resource) if evidence["start"]["ok"] else []
    if candidates:
        import ray
        from ray.util.scheduling_strategies import NodeAffinitySchedulingStrategy

        node = candidates[0]
        ctx.exercised([node["NodeID"]])
        evidence["node"] = {"id": node["NodeID"][:8], "advertises": node.get("Resources", {}).get(resource, 0),
                            "accelerator_types": sorted(k for k in node.get("Resources", {})
                                                        if k.startswith("accelerator_type:"))}
        task = ray.remote(detect_on_this_node).options(
            num_cpus=0, scheduling_strategy=NodeAffinitySchedulingStrategy(node["NodeID"], soft=False))
        try:
            seen = ctx.budget.get(task.remote(ctx.manager_ref), ctx.param("task_timeout_s"),
                                  "a task on the node without devices")
        except Exception as exc:  # noqa: BLE001 - the check's finding
            evidence["worker"] = {"error": error_text(exc).splitlines()[0][:300]}
        else:
            evidence["worker"] = {"probe": compact_detection(seen["probe"])}
    ctx.decide(**evidence)


@pytest.mark.check("DP-018")
def test_detection_degrades_under_faults(device_ctx: DeviceCtx) -> None:
    ctx = device_ctx
    declared = {k: ctx.manifest.host_overlay(k) for k in ("library_error", "unknown_device")}
    declared = {k: v for k, v in declared.items() if v is not None}
    if not declared:
        not_applicable("the manifest declares neither accelerator.hosts.library_error nor .unknown_device")
    probes = {kind: compact_detection(ctx.probe(env, "detect")) for kind, env in declared.items()}  # type: ignore[arg-type]  # the Nones are filtered out above
    ctx.decide(faults=sorted(declared), probes=probes)


@pytest.mark.check("DP-019")
def test_node_asking_more_than_visible_is_refused(device_ctx: DeviceCtx) -> None:
    ctx = device_ctx
    env_var = ctx.env_var
    if env_var is None:
        not_applicable("the manager names no visible-devices variable")
    visible = [str(i) for i in ctx.param("visible_ids")]
    request = float(len(visible) + 1)
    result = ctx.probe(ctx.manifest.accelerator_env, "overcommit", env_var=env_var, visible=visible, request=request)
    ctx.decide(env_var=env_var, visible=visible, request=request, result=compact_observed(result))


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
    ctx.decide(env_var=env_var, noset_var=noset_var, preset=preset, ids=ids,
               result={side: compact_observed(r) for side, r in result.items()})
