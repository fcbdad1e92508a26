"""Workload area, a pipeline (WL-003): activations pass stage to stage across nodes through the
vendor's transport with many in flight; the output equals the sequential computation; no
stage's memory grows; a hang fails, bounded, naming the requirement.

The scenario lives in conformance.areas.workload (pipeline: the stages' computation and the
figures, pure; stages: the live run); this module reads the params, runs it on each device type
the manifest's transport declares and records the figures.
"""
from __future__ import annotations

import pytest

from conformance.areas.workload import pipeline, stages
from conformance.areas.workload.context import WorkloadCtx
from conformance.rdt.config import format_size, max_bytes, record_size_cap
from conformance.rdt.device import is_host
from conformance.run.fixtures import not_applicable


@pytest.mark.check("WL-003")
def test_pipeline_many_in_flight(workload_ctx: WorkloadCtx) -> None:
    ctx = workload_ctx
    tctx = ctx.transport
    problems: list[str] = []
    per_device = {}
    for device in tctx.devices:
        plan = pipeline.plan_for(device, int(ctx.param("stages")), int(ctx.param("in_flight")), int(ctx.param("waves")),
                                 min(int(ctx.param("activation_bytes")), max_bytes()))
        nodes = stages.placement(tctx.resource, device, plan.stages)
        if not nodes:
            not_applicable(f"the cluster has one node{' with ' + tctx.resource if not is_host(device) else ''}; "
                           "the pipeline needs its stages on at least two nodes")
        clock = ctx.scenario(f"pipeline on {device}", param="scenario_bound_s")
        wave_bound_s = float(ctx.param("wave_bound_s"))
        eps = ctx.own(stages.start(tctx.setup, tctx.resource, plan, nodes, clock, ctx.budget))
        record = stages.run_pipeline(eps, plan, tctx.name, clock, wave_bound_s)
        problems += [f"{device}: {p}" for p in record.problems]
        problems += [f"{device}: {p}" for p in stages.judge_memory(
            record, int(ctx.param("warmup_waves")), int(ctx.param("max_memory_growth_bytes")),
            int(ctx.param("leak_per_wave_bytes")))]
        figures = record.figures(plan)
        figures.update(size=format_size(plan.activation_bytes), nodes=len(set(nodes)),
                       memory={label: [{k: s.get(k) for k in ("held_bytes", "device_used_bytes")} for s in snaps]
                               for label, snaps in record.memory.items()})
        per_device[device] = figures
        eps.shutdown()   # its devices free before the next device type starts its stages
    shown = f" ({len(problems)} problem(s): " + "; ".join(problems[:4]) + \
        (f" (+{len(problems) - 4} more))" if len(problems) > 4 else ")")
    record_size_cap(ctx.metrics)   # an activation is the param's, capped by the size knob: the judge reads it
    ctx.decide(detail=shown if problems else "", devices=per_device)
