"""The pipeline scenario (WL-003): activations pass stage to stage across nodes, many in flight.

Each stage is an actor holding the transport's device; a microbatch's activation is one object
of two tensors (the hidden state and an integer trace of the stages it passed), published by a
stage with `tensor_transport=<the manifest's transport>` and taken by the next one. A wave puts
`in_flight` microbatches through every stage at once: the driver keeps every microbatch's
activations until the wave's outputs are read, as a GPipe schedule keeps them for the backward
pass, so each hop has that many activations in flight.

A stage's computation (`stage_forward`) is exact on any device: a roll, then an elementwise
multiply and an add in separate operations (each correctly rounded by IEEE 754, no fusion), and
integer arithmetic on the trace; so the output through the pipeline equals, bit for bit, the
same stages run one after the other in one process (`sequential`, on the first stage's device).

Pure parts (the stage, the plan, the figures) run without Ray; the live scenario is in
conformance.areas.workload.stages.
"""
from __future__ import annotations

import statistics
from dataclasses import dataclass, field
from typing import Any

from conformance.rdt import payloads

TRACE_BASE = 7           # the trace's per-stage factor (a stage skipped or repeated shows in it)


@dataclass
class PipelinePlan:
    """What one run of the scenario moves (from the check's params)."""

    device: str
    stages: int
    in_flight: int
    waves: int
    rows: int
    cols: int

    @property
    def activation_bytes(self) -> int:
        """The bytes of one activation (float32 hidden state and int64 trace)."""
        return self.rows * self.cols * 4 + self.rows * 8

    @property
    def hops(self) -> int:
        """Transfers per microbatch (stage to stage)."""
        return self.stages - 1


def plan_for(device: str, stages: int, in_flight: int, waves: int, activation_bytes: int) -> PipelinePlan:
    """A plan whose activations are about `activation_bytes` (rows x cols float32, cols 256)."""
    cols = 256
    rows = max(1, activation_bytes // (cols * 4 + 8))
    return PipelinePlan(device=device, stages=stages, in_flight=in_flight, waves=waves, rows=rows, cols=cols)


def microbatch(plan: PipelinePlan, wave: int, index: int) -> dict[str, Any]:
    """Microbatch `index` of wave `wave` on the plan's device: seeded normal values, and a trace
    of its number."""
    import torch

    gen = torch.Generator().manual_seed(payloads.seed_of("wl-pipe", wave, index))
    hidden = torch.randn(plan.rows, plan.cols, generator=gen, dtype=torch.float32)
    trace = torch.full((plan.rows,), wave * 1000 + index, dtype=torch.int64)
    return {"hidden": hidden.to(plan.device), "trace": trace.to(plan.device)}


def stage_weights(plan: PipelinePlan, stage: int) -> dict[str, Any]:
    """Stage `stage`'s parameters on the plan's device (seeded: every process derives the same)."""
    import torch

    gen = torch.Generator().manual_seed(payloads.seed_of("wl-pipe-stage", stage))
    scale = torch.rand(plan.cols, generator=gen, dtype=torch.float32) + 0.5
    shift = torch.randn(plan.cols, generator=gen, dtype=torch.float32)
    return {"scale": scale.to(plan.device), "shift": shift.to(plan.device)}


def stage_forward(act: dict[str, Any], weights: dict[str, Any], stage: int) -> dict[str, Any]:
    """Stage `stage` on one activation: new tensors (the input is left as it arrived)."""
    import torch

    rolled = torch.roll(act["hidden"], shifts=stage + 1, dims=1)
    hidden = torch.add(torch.mul(rolled, weights["scale"]), weights["shift"])
    trace = act["trace"] * TRACE_BASE + (stage + 1)
    return {"hidden": hidden, "trace": trace}


def sequential(plan: PipelinePlan, wave: int, index: int) -> dict[str, Any]:
    """The reference: every stage on microbatch (wave, index), one after the other, here."""
    act = microbatch(plan, wave, index)
    for s in range(plan.stages):
        act = stage_forward(act, stage_weights(plan, s), s)
    return act


def output_problems(wave: int, index: int, got: object, expect: object, device: str) -> list[str]:
    """What is wrong with one microbatch's output: other bytes than the sequential computation's,
    or tensors on another device type than the transport's."""
    problems = []
    diffs = payloads.compare(expect, got, payloads.EXACT_FIELDS)
    if diffs:
        problems.append(f"wave {wave}, microbatch {index}: the output differs from the sequential computation: "
                        + "; ".join(diffs[:2]) + (f" (+{len(diffs) - 2} more)" if len(diffs) > 2 else ""))
    wrong = sorted({str(t.get("device")) for _, t in payloads.tensors_in(got) if t.get("device") != device})
    if wrong:
        problems.append(f"wave {wave}, microbatch {index}: activations arrived on {', '.join(wrong)}, "
                        f"not on the transport's device {device!r}")
    return problems


@dataclass
class PipelineRecord:
    """What the scenario saw: per-wave seconds, problems, memory series by stage label."""

    wave_s: list[float] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)
    memory: dict[str, list[dict[str, Any]]] = field(default_factory=dict)
    wave_wrong: list[int] = field(default_factory=list)   # per wave: the outputs' problems (the judge's evidence)

    def figures(self, plan: PipelinePlan) -> dict[str, Any]:
        """The figures (diff gates `median_wave_s`, lower is better, and `pipeline_bytes_per_s`,
        higher is better; the per-wave series is named so diff leaves it alone)."""
        out: dict[str, Any] = {"stages": plan.stages, "in_flight": plan.in_flight, "waves": len(self.wave_s),
                               "activation_bytes": plan.activation_bytes,
                               "wave_seconds": [round(x, 4) for x in self.wave_s],
                               "wrong_per_wave": list(self.wave_wrong)}
        if self.wave_s:
            med = statistics.median(self.wave_s)
            out["median_wave_s"] = round(med, 4)
            moved = plan.activation_bytes * plan.in_flight * plan.hops
            out["pipeline_bytes_per_s"] = round(moved / med) if med > 0 else None
        return out
