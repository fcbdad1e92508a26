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
from conformance.areas.device.contract import ProbeFailed, probe_timeout_s, run_contract_probe
from conformance.catalog.data import check_param
from conformance.cluster.manager import ClusterShape, ClusterStartError
from conformance.run.fixtures import not_applicable, use_cluster
from conformance.run.waits import bounded_get


def probe(manifest: Any, conformance_run: Any, env: dict[str, str], mode: str, **options: Any) -> dict[str, Any]:
    try:
        return run_contract_probe(manifest.accelerator["manager"], python_path=manifest.python_path, env=env,
                                  timeout_s=probe_timeout_s(conformance_run), mode=mode,
                                  hangs=conformance_run.hangs, found_by=f"the {mode} probe", **options)
    except ProbeFailed as exc:
        pytest.fail(str(exc), pytrace=False)


def detect_on_this_node(manager_ref: str) -> dict[str, Any]:
    """Runs in a worker on the node under test: the manager's detection, observed."""
    import ray

    from conformance.areas.device import host_detection as h
    from conformance.imports import import_ref
    return {"node_id": ray.get_runtime_context().get_node_id(), "probe": h.detect(import_ref(manager_ref))}


def nodes_without(resource: str) -> list[dict[str, Any]]:
    import ray
    return [n for n in ray.nodes() if n.get("Alive") and n.get("Resources", {}).get(resource, 0) == 0]


def start_with_host(conformance_run: Any, shape: ClusterShape) -> list[str]:
    """Start the cluster whose last node looks like the host without the device (shape
    "host-without-device", conformance.cluster.shapes); what went wrong."""
    with hosts.capture_records() as records:
        try:
            conformance_run.cluster(shape)
        except ClusterStartError as exc:
            return [f"a cluster with a node without the device did not start: {exc}"]
    return [f"while that node started, {r['logger']} logged {r['level']}: {r['message']}"
            for r in records if r["level"] in ("ERROR", "CRITICAL")][:3]


@pytest.mark.cluster("host-without-device")
@pytest.mark.check("DP-017")
def test_host_without_device_detects_nothing_and_runs_work(manifest: Any, conformance_run: Any,
                                                           cluster_shape: ClusterShape,
                                                           check_metrics: dict[str, Any]) -> None:
    # cluster_shape: not applicable without accelerator.hosts.without_device (conformance.cluster.shapes)
    max_s = float(check_param("DP-017", "max_detect_s"))
    problems = hosts.problems_detection(probe(manifest, conformance_run, manifest.host_overlay("without_device"),
                                              "detect"), "without the device", max_s)
    resource = manifest.resource_name
    if conformance_run.ray_address:
        use_cluster(conformance_run, cluster_shape)   # the vendor's cluster as it is
        candidates = nodes_without(resource)
        if not candidates:
            check_metrics["live"] = "the cluster has no node without devices; only the probe ran"
    else:
        start_problems = start_with_host(conformance_run, cluster_shape)
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
            seen = bounded_get(task.remote(manifest.accelerator["manager"]), check_param("DP-017", "task_timeout_s"),
                               "a task on the node without devices")
        except Exception as exc:  # noqa: BLE001 - the check's finding
            problems.append(f"a task on the node without devices did not run: {exc.__class__.__name__}: "
                            f"{str(exc).splitlines()[0][:300]}")
        else:
            check_metrics["node"] = node["NodeID"][:8]
            problems += [p.replace("on a host without the device", "in a worker on the node without devices")
                         for p in hosts.problems_detection(seen["probe"], "without the device", max_s)]
    assert not problems, "; ".join(problems)


@pytest.mark.check("DP-018")
def test_detection_degrades_under_faults(manifest: Any, conformance_run: Any, check_metrics: dict[str, Any]) -> None:
    declared = {k: manifest.host_overlay(k) for k in ("library_error", "unknown_device")}
    declared = {k: v for k, v in declared.items() if v is not None}
    if not declared:
        not_applicable("the manifest declares neither accelerator.hosts.library_error nor .unknown_device")
    max_s = float(check_param("DP-018", "max_detect_s"))
    require_warning = bool(check_param("DP-018", "require_warning"))
    problems: list[str] = []
    for kind, env in declared.items():
        seen = probe(manifest, conformance_run, env, "detect")
        if kind == "library_error":
            host = "whose vendor library fails"
            problems += hosts.problems_detection(seen, host, max_s)
        else:
            host = "whose device id is unknown"
            problems += hosts.problems_unknown_device(seen, max_s)
        if require_warning:
            problems += hosts.problems_warned(seen, host)
    check_metrics["faults"] = sorted(declared)
    assert not problems, "; ".join(problems)


@pytest.mark.check("DP-019")
def test_node_asking_more_than_visible_is_refused(manifest: Any, conformance_run: Any,
                                                  accelerator_manager: type) -> None:
    env_var = accelerator_manager.get_visible_accelerator_ids_env_var()
    if env_var is None:
        not_applicable("the manager names no visible-devices variable")
    visible = [str(i) for i in check_param("DP-019", "visible_ids")]
    request = float(len(visible) + 1)
    result = probe(manifest, conformance_run, manifest.accelerator_env, "overcommit", env_var=env_var,
                   visible=visible, request=request)
    problems = hosts.problems_overcommit(result, manifest.resource_name, env_var, visible, request)
    assert not problems, "; ".join(problems)


@pytest.mark.check("DP-020")
def test_noset_variable_stops_setting_visible_ids(manifest: Any, conformance_run: Any,
                                                  accelerator_manager: type) -> None:
    noset_var = manifest.noset_env_var
    if noset_var is None:
        not_applicable("the manifest declares no accelerator.noset_env_var (an opt-out of the "
                       "RAY_EXPERIMENTAL_NOSET_* kind)")
    env_var = accelerator_manager.get_visible_accelerator_ids_env_var()
    if env_var is None:
        not_applicable("the manager names no visible-devices variable")
    preset, ids = str(check_param("DP-020", "preset")), [str(i) for i in check_param("DP-020", "ids")]
    result = probe(manifest, conformance_run, manifest.accelerator_env, "noset", env_var=env_var,
                   noset_var=noset_var, preset=preset, ids=ids)
    problems = hosts.problems_noset(result, env_var, noset_var, preset)
    assert not problems, "; ".join(problems)
