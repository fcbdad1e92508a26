"""Workload area, RL weight sync (WL-001): every inference worker holds exactly the trainer's
round k in round k, through the vendor's transport, across nodes, with memory flat over rounds.

The scenario and its judging live in conformance.areas.workload (rounds, sync); this module
reads the params, runs it on each device type the manifest's transport declares, records the
figures (per-round time beside the object store's) and fails on what the workload must not see.
"""
from __future__ import annotations

from typing import Any

import pytest

from conformance.areas.workload import broadcast, report, rounds
from conformance.areas.workload.context import WorkloadCtx
from conformance.areas.workload.sync import SyncPlan, problems_line
from conformance.collective.config import collective_config
from conformance.rdt.config import format_size, max_bytes, record_size_cap
from conformance.rdt.pool import Endpoints
from conformance.run.budget import Scenario


@pytest.mark.check("WL-001")
def test_rl_weight_sync(workload_ctx: WorkloadCtx) -> None:
    ctx = workload_ctx
    tctx = ctx.transport
    receivers = int(ctx.param("receivers"))
    size = min(int(ctx.param("state_bytes")), max_bytes())
    record_size_cap(ctx.metrics)   # the state is the param's, capped by the size knob: the judge reads it
    problems: list[str] = []           # the transport's rounds and memory
    broadcast_problems: list[str] = []   # the collective's broadcast rounds (named beside the others)
    per_device = {}
    for device in tctx.devices:
        nodes = rounds.receiver_nodes(tctx.resource, device, receivers)
        clock = ctx.scenario(f"weight sync on {device}", param="scenario_bound_s")
        eps = ctx.own(rounds.start(tctx.setup, tctx.resource, device, nodes, clock, ctx.budget))
        entries, not_held = rounds.state_layout(eps.actors[0], clock, size, int(ctx.param("blocks")))
        plan = SyncPlan(device=device, entries=entries, rounds=int(ctx.param("rounds")),
                        store_rounds=int(ctx.param("store_rounds")), receivers=receivers)
        record = rounds.run_sync(eps, plan, tctx.name, clock, float(ctx.param("round_bound_s")))
        problems += [f"{device}: {p}" for p in record.problems]
        problems += [f"{device}: {p}" for p in rounds.judge_memory(
            record, int(ctx.param("warmup_rounds")), int(ctx.param("max_memory_growth_bytes")),
            int(ctx.param("leak_per_round_bytes")))]
        figures = record.figures(plan)
        figures.update(dtypes=sorted({e["dtype"] for e in entries if "dtype" in e}), dtypes_not_held=not_held,
                       size=format_size(plan.state_bytes), notes=record.notes,
                       memory={label: [{k: s.get(k) for k in ("held_bytes", "device_used_bytes")} for s in snaps]
                               for label, snaps in record.memory.items()})
        broadcast_problems += [f"{device}: {p}" for p in through_broadcast(ctx, eps, plan, clock, figures)]
        per_device[device] = figures
        eps.shutdown()   # its devices free before the next device type starts its actors
    report.publish(ctx.run, {"devices": {d: {k: v for k, v in f.items() if k != "memory"} for d, f in per_device.items()}})
    shown = problems or broadcast_problems
    ctx.decide(detail=f" ({problems_line([problems, broadcast_problems])})" if shown else "", devices=per_device)


def through_broadcast(ctx: WorkloadCtx, eps: Endpoints, plan: SyncPlan, clock: Scenario, figures: dict[str, Any]) -> list[str]:
    """The rounds through the collective's broadcast, when a collective block is declared: their
    problems; their figures (or why none ran) into `figures`."""
    cfg = collective_config(ctx.run.manifest)
    entries, why = broadcast.broadcast_entries(cfg, plan.device, plan.entries)
    if cfg is None or not entries:
        if why:
            figures.setdefault("notes", []).append(why)
        return []
    labels = [f"receiver {i} (node {eps.node_of(i + 1)[:8]})" for i in range(len(eps.actors) - 1)]
    done = broadcast.run_broadcast(eps, cfg, list(ctx.run.manifest.python_path), entries,
                                   plan.rounds + plan.store_rounds + 1, int(ctx.param("broadcast_rounds")), labels,
                                   clock, float(ctx.param("round_bound_s")))
    figures.update(done.figures(entries))
    return done.problems
