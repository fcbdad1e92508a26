"""Running the pipeline scenario on a live cluster (WL-003): the stage actors, the waves.

What is wrong is judged by the pure helpers in conformance.areas.workload.pipeline (the outputs)
and conformance.areas.workload.sync (memory over waves, as WL-001 judges it over rounds).
"""
from __future__ import annotations

import dataclasses
import functools
import time
from typing import TYPE_CHECKING, Any

from conformance.areas.workload import pipeline
from conformance.areas.workload.actors import WorkloadActor
from conformance.areas.workload.pipeline import PipelinePlan, PipelineRecord
from conformance.areas.workload.sync import memory_problems, timed
from conformance.rdt import payloads
from conformance.rdt.device import is_host
from conformance.rdt.pool import Endpoints, alive_nodes, start_endpoints
from conformance.timing.clock import Clock, ScenarioFailed

if TYPE_CHECKING:
    from conformance.rdt.registration import TransportSetup
    from conformance.run.budget import Budget

# The failure a hung wave ends in (teeth rows name it): the requirement it breaks.
HUNG = "the pipeline hung with {n} activations in flight per stage (a transport MUST carry many in-flight objects)"


class StageActor(WorkloadActor):
    """One pipeline stage (its memory probe is WorkloadActor's); stage 0 also computes the
    sequential reference, in its one process."""

    def configure(self, plan: dict[str, Any], stage: int) -> int:
        self.plan = PipelinePlan(**plan)
        self.stage = stage
        self.stage_weights = pipeline.stage_weights(self.plan, stage)
        return stage

    def first(self, wave: int, index: int) -> dict[str, Any]:
        """Stage 0 on a new microbatch (called with tensor_transport=NAME)."""
        return pipeline.stage_forward(pipeline.microbatch(self.plan, wave, index), self.stage_weights, self.stage)

    def forward(self, act: dict[str, Any]) -> dict[str, Any]:
        """A middle stage: the previous stage's activation in (Ray moved it), this one's out."""
        return pipeline.stage_forward(act, self.stage_weights, self.stage)

    def finish(self, act: dict[str, Any]) -> Any:
        """The last stage: the digest of the pipeline's output."""
        return payloads.describe(pipeline.stage_forward(act, self.stage_weights, self.stage))

    def reference(self, waves: int, in_flight: int) -> list[list[Any]]:
        """Every microbatch's output computed sequentially in this process, by wave."""
        return [[payloads.describe(pipeline.sequential(self.plan, w, i)) for i in range(in_flight)]
                for w in range(waves)]


def placement(resource: str, device: str, stages: int) -> list[str]:
    """Node ids of the stages, alternating over the nodes (every hop crosses nodes when there are
    two); empty when fewer than two nodes offer what a stage needs."""
    nodes = [n["NodeID"] for n in alive_nodes(resource if not is_host(device) else None)]
    if len(nodes) < 2:
        return []
    return [nodes[s % len(nodes)] for s in range(stages)]


def start(setup: TransportSetup, resource: str, plan: PipelinePlan, nodes: list[str], clock: Clock,
          budget: Budget) -> Endpoints:
    """The stages, started (Ray's machinery, awaited through the check's budget and left out of the
    scenario's bound: Budget.started) and given their weights: setup, bounded by the scenario's own
    bound, never by wave_bound_s (a wave's hang bound: a twin's run shortens it, and a loaded host
    building the weights once took 15 s against its 10)."""
    eps = start_endpoints(setup, resource, device=plan.device, nodes=list(nodes), cls=StageActor,
                          ready=lambda refs, what: budget.started(clock, refs, what), what="pipeline stages to start")
    clock.get([a.configure.remote(dataclasses.asdict(plan), s) for s, a in enumerate(eps.actors)],
              "the stages to take their weights")
    return eps


def run_pipeline(eps: Endpoints, plan: PipelinePlan, transport: str, clock: Clock, wave_bound_s: float) -> PipelineRecord:
    """The reference on stage 0, then `waves` waves of `in_flight` microbatches through every
    stage; memory of every stage read before the first wave and after each. The reference is the
    stage's own computation, no transfer: bounded by the scenario, not by a wave's hang bound."""
    record = PipelineRecord()
    expect = clock.get(eps.actors[0].reference.remote(plan.waves, plan.in_flight),
                       "the sequential reference on stage 0")
    probe(eps, record, clock, wave_bound_s)
    for w in range(plan.waves):
        outs, seconds = timed(functools.partial(one_wave, eps.actors, plan, w, transport, clock, wave_bound_s))
        record.wave_s.append(seconds)
        before = len(record.problems)
        for i, got in enumerate(outs):
            record.problems += pipeline.output_problems(w, i, got, expect[w][i], plan.device)
        record.wave_wrong.append(len(record.problems) - before)
        probe(eps, record, clock, wave_bound_s)
    return record


def one_wave(stages: list[Any], plan: PipelinePlan, wave: int, transport: str, clock: Clock, bound_s: float) -> list[Any]:
    """Wave `wave`: every microbatch submitted to every stage at once; the driver holds each
    stage's activations until the last stage's outputs are read."""
    held: list[list[Any]] = []
    try:
        acts = [stages[0].first.options(tensor_transport=transport).remote(wave, i) for i in range(plan.in_flight)]
        held.append(acts)
        for stage in stages[1:-1]:
            acts = [stage.forward.options(tensor_transport=transport).remote(a) for a in acts]
            held.append(acts)
        outs = [stages[-1].finish.remote(a) for a in acts]
        try:
            return list(clock.get(outs, f"wave {wave}: {plan.in_flight} microbatches through {plan.stages} stages "
                                        f"via {transport}", bound_s))
        except ScenarioFailed as exc:
            raise ScenarioFailed(f"{exc}: {HUNG.format(n=plan.in_flight)}") from None
    finally:
        held.clear()


FREES_SETTLE_S = 10.0   # knob: the longest a probe waits for the wave's frees to reach the stages


def probe(eps: Endpoints, record: PipelineRecord, clock: Clock, bound_s: float) -> None:
    """Every stage's memory once the wave's activations are freed: the driver dropped its refs,
    and Ray frees their primary copies asynchronously, so a probe read at once on a loaded host saw
    the stages hold a backlog of frees that grew wave by wave (a correct transport called a leak).
    It waits, at most FREES_SETTLE_S, until no stage's RDT store holds an object; a store that keeps
    them is probed as it is (what it holds is then the finding's)."""
    settle_by = time.monotonic() + min(bound_s, FREES_SETTLE_S)
    while time.monotonic() < settle_by:
        held = clock.get([a.rdt_objects.remote() for a in eps.actors], "the stages' RDT stores", bound_s)
        if not any(held):
            break
        time.sleep(0.1)   # knob: poll slice of the frees' settling
    snaps = clock.get([a.probe_memory.remote() for a in eps.actors], "the stages' memory probes", bound_s)
    for s, snap in enumerate(snaps):
        record.memory.setdefault(f"stage {s}", []).append(snap)


def judge_memory(record: PipelineRecord, warmup: int, max_growth: int, leak_per_wave: int) -> list[str]:
    return [p.replace("rounds", "waves").replace("round", "wave").replace("published object", "wave of activations")
            for p in memory_problems(record.memory, warmup, max_growth, leak_per_wave)]
