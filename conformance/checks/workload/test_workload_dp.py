"""Workload area, data-parallel steps (WL-002): workers on several nodes, each with its own shard,
all-reduce their gradients through the manifest's collective backend on its declared device and
apply them; every replica holds bit-identical parameters after every step, within the stated
rounding bound of the single-process reference the driver computes.

The plan, the reference and the judging live in conformance.areas.workload.dp (pure), the
scenario in dp_run; this module reads the params, runs it on each device type the collective
block declares, records the figures (seconds per step) and fails on what training must not see.
"""
from __future__ import annotations

import pytest

from conformance.areas.workload import dp, dp_run, report
from conformance.areas.workload.dp_context import DataParallelCtx
from conformance.collective.context import CollectiveError
from conformance.rdt.device import is_host
from conformance.run.fixtures import not_applicable


@pytest.mark.check("WL-002")
def test_data_parallel_steps(workload_ctx: DataParallelCtx) -> None:
    ctx = workload_ctx
    cfg = ctx.config
    dtype = str(ctx.param("dtype"))
    if dtype not in cfg.dtypes:
        not_applicable(f"the collective block does not claim {dtype} (collective.dtypes: {', '.join(cfg.dtypes)}); "
                       "the data-parallel steps reduce gradients of that dtype")
    plan = dp.make_plan(int(ctx.param("workers")), int(ctx.param("features")), int(ctx.param("samples")),
                        int(ctx.param("steps")), dtype, int(ctx.param("seed")), float(ctx.param("step_fraction")))
    want, bound = dp.reference(plan)
    bound_s = float(ctx.param("step_bound_s"))
    problems: list[str] = []
    per_device = {}
    for device in cfg.devices:
        units = not is_host(device)
        resource = ctx.run.manifest.resource_name
        nodes = dp_run.placement(dp_run.cluster_nodes(resource), plan.workers, units)
        if len(set(nodes)) < 2 or len(nodes) < 2:
            not_applicable(f"the cluster has one node{' with ' + resource if units else ''} (or too few units for "
                           "two workers); the data-parallel steps need workers on at least two nodes")
        run_plan = plan if len(nodes) == plan.workers else dp.make_plan(
            len(nodes), plan.features, plan.samples, plan.steps, dtype, plan.seed, float(ctx.param("step_fraction")))
        run_want, run_bound = (want, bound) if run_plan is plan else dp.reference(run_plan)
        workers, pooled = dp_run.workers_for(ctx.backend, nodes, resource if units else None, bound_s)
        if not pooled:
            ctx.own(workers)
        try:
            record = dp_run.run_steps(ctx.backend, workers, run_plan, device, bound_s)
        except CollectiveError as exc:
            problems.append(f"{device}: {exc}")
            continue
        finally:
            if not pooled:
                ctx.backend.stop(workers)   # their units free before the next device type starts its workers
        found = dp.replica_problems(record) + dp.reference_problems(record, run_want, run_bound)
        problems += [f"{device}: {p}" for p in found]
        figures = record.figures(run_plan)
        figures.update(reference_bound=run_bound, step_size=run_plan.step_size,
                       nodes=len(set(nodes)))
        per_device[device] = figures
    report.publish_data_parallel(ctx.run, per_device)
    shown = " (WL-002: data-parallel replicas must stay identical and follow the single-process " \
        f"reference: {len(problems)} problem(s): " + "; ".join(problems[:4]) + ")"
    ctx.decide(detail=shown if problems else "", devices=per_device)
