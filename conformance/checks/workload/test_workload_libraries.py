"""Workload area, Ray's libraries on the vendor's resource (WL-010..WL-013): informational findings.

Where a user reaches for Ray Train, Ray Data or Ray Serve with the manifest's resource, each
check runs the library once, small and bounded, and records what Ray did with it: where the
workers ran, what each was given (Ray's accelerator ids, the vendor's visible-ids variable, the
torch device Train hands out) and whether the dashboard's metrics report the vendor's devices.
Level INFO: the findings are the check's metrics and the report's "Findings for the SIG"; no tier
or capability profile counts them (Ray 2.60 has no plug-in point there: docs/ray-libraries.md).
A check passes once it has recorded its findings (a library that overruns its own bound is one:
Train's fit() past fit_bound_s is recorded with what its workers reported by then), is not
applicable when the library does not import here, and fails only when its scenario does not
answer within scenario_bound_s.
"""
from __future__ import annotations

from typing import Any, Callable

import pytest

from conformance.areas.workload import libraries
from conformance.areas.workload.context import WorkloadCtx
from conformance.rdt.device import is_host
from conformance.rdt.pool import alive_nodes
from conformance.run.fixtures import not_applicable


def _prepare(ctx: WorkloadCtx, module: str) -> tuple[str, str, list[str]]:
    """The resource, the vendor's visible-ids variable and the nodes offering the resource; not
    applicable when the library does not import or no node offers the resource."""
    why = libraries.importable(module)
    if why:
        not_applicable(f"{module} does not import in this environment ({why}); "
                       "install Ray's extra for it to record this finding")
    ctx.cluster()
    resource = ctx.manifest.resource_name
    nodes = [n["NodeID"] for n in alive_nodes(resource)]
    if not nodes:
        not_applicable(f"no node of the cluster offers {resource}")
    return resource, ctx.manager().get_visible_accelerator_ids_env_var() or "(the manager names none)", nodes


def _run(ctx: WorkloadCtx, scenario: Callable[..., libraries.Observation], what: str, *args: Any,
         resources: dict[str, float] | None = None, env: dict[str, str] | None = None) -> libraries.Observation:
    """The library's scenario as one Ray task, waited on within scenario_bound_s and cancelled past
    it; `env` reaches the library's own actors too (a runtime_env is inherited)."""
    import ray

    clock = ctx.scenario(what, param="scenario_bound_s")
    options: dict[str, Any] = {"runtime_env": {"env_vars": env}} if env else {}
    host_cls: Any = ray.remote(num_cpus=0, max_restarts=0, resources=resources or {}, **options)(libraries.ScenarioHost)
    host = host_cls.remote()
    try:
        observation: libraries.Observation = clock.get(host.run.remote(scenario, *args), what)
    finally:
        ray.kill(host)   # the library's own actors (owned by it) end with it
    ctx.metrics["scenario_s"] = round(clock.elapsed(), 3)
    return observation


def _record(ctx: WorkloadCtx, obs: libraries.Observation, findings: list[str], resource: str, env_var: str,
            nodes: list[str], **extra: Any) -> None:
    """The findings with what they were derived from (the judge derives them again) and the
    decision: the scenario answered within its bound."""
    ctx.decide(findings=findings, upstream=libraries.UPSTREAM[ctx.check_id], observed=obs, resource=resource,
               env_var=env_var, vendor_nodes=nodes, **extra)


@pytest.mark.check("WL-010")
def test_train_on_the_vendor_resource(workload_ctx: WorkloadCtx) -> None:
    ctx = workload_ctx
    resource, env_var, nodes = _prepare(ctx, "ray.train.torch")
    bound = str(int(ctx.param("scenario_bound_s")))
    # Train's own worker-group start bound (60 s) would retry, not fail, on a loaded host: the scenario's bounds it
    obs = _run(ctx, libraries.train_scenario, "a TorchTrainer on the vendor's resource", resource, env_var,
               int(ctx.param("workers")), float(ctx.param("fit_bound_s")),
               env={"RAY_TRAIN_WORKER_GROUP_START_TIMEOUT_S": bound})
    devices = [d for d in ctx.transport.devices if not is_host(d)]
    torch_device = devices[0] if devices else None
    _record(ctx, obs, libraries.train_findings(obs, resource, env_var, nodes, torch_device), resource, env_var, nodes,
            torch_device=torch_device)


@pytest.mark.check("WL-011")
def test_data_on_the_vendor_resource(workload_ctx: WorkloadCtx) -> None:
    ctx = workload_ctx
    resource, env_var, nodes = _prepare(ctx, "ray.data")
    obs = _run(ctx, libraries.data_scenario, "a Ray Data map_batches on the vendor's resource", resource, env_var,
               int(ctx.param("blocks")))
    _record(ctx, obs, libraries.data_findings(obs, resource, env_var, nodes), resource, env_var, nodes)


@pytest.mark.check("WL-012")
def test_serve_on_the_vendor_resource(workload_ctx: WorkloadCtx) -> None:
    ctx = workload_ctx
    resource, env_var, nodes = _prepare(ctx, "ray.serve")
    try:
        obs = _run(ctx, libraries.serve_scenario, "a Serve deployment on the vendor's resource", resource, env_var,
                   int(ctx.param("replicas")), float(ctx.param("answer_bound_s")))
    finally:
        from ray import serve

        serve.shutdown()   # the controller is detached: never leave it to the next check
    _record(ctx, obs, libraries.serve_findings(obs, resource, env_var, nodes), resource, env_var, nodes)


@pytest.mark.check("WL-013")
def test_dashboard_metrics_of_the_vendor_resource(workload_ctx: WorkloadCtx) -> None:
    ctx = workload_ctx
    resource, env_var, nodes = _prepare(ctx, "ray.dashboard.modules.reporter.gpu_providers")
    obs = _run(ctx, libraries.metrics_scenario, "the dashboard's device metrics on a vendor node", resource,
               resources={resource: 1})
    _record(ctx, obs, libraries.metrics_findings(obs, resource), resource, env_var, nodes)
