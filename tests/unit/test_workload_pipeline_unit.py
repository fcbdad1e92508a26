"""Workload area, pure parts of WL-003 (the pipeline's stages, its judging, its figures) and
WL-004's figures and report block (no Ray cluster)."""
from __future__ import annotations

from conformance.areas.workload import pipeline
from conformance.areas.workload.lost_worker import LostRecord
from conformance.areas.workload.pipeline import PipelineRecord
from conformance.areas.workload.report_pipeline import html_block
from conformance.areas.workload.stages import judge_memory
from conformance.areas.workload.sync import SyncPlan
from conformance.rdt import payloads
from signing_support import gated_by_diff

PLAN = pipeline.plan_for("cpu", stages=3, in_flight=4, waves=2, activation_bytes=16 * 1024)


def test_the_stages_in_turn_equal_the_sequential_reference_bit_for_bit() -> None:
    act = pipeline.microbatch(PLAN, 1, 2)
    for s in range(PLAN.stages):   # as the stage actors do, each from its own seeded weights
        act = pipeline.stage_forward(act, pipeline.stage_weights(PLAN, s), s)
    expect = payloads.describe(pipeline.sequential(PLAN, 1, 2))
    assert pipeline.output_problems(1, 2, payloads.describe(act), expect, "cpu") == []
    assert int(act["trace"][0]) == ((1002 * 7 + 1) * 7 + 2) * 7 + 3   # every stage once, in order


def test_a_skipped_stage_or_another_microbatch_or_device_is_named() -> None:
    expect = payloads.describe(pipeline.sequential(PLAN, 0, 0))
    skipped = pipeline.microbatch(PLAN, 0, 0)
    for s in (0, 2):
        skipped = pipeline.stage_forward(skipped, pipeline.stage_weights(PLAN, s), s)
    assert "differs from the sequential computation" in pipeline.output_problems(0, 0, payloads.describe(skipped),
                                                                                  expect, "cpu")[0]
    other = payloads.describe(pipeline.sequential(PLAN, 0, 1))
    assert pipeline.output_problems(0, 0, other, expect, "cpu")
    assert any("not on the transport's device 'simacc'" in p
               for p in pipeline.output_problems(0, 0, expect, expect, "simacc"))


def test_the_plan_sizes_its_activations() -> None:
    plan = pipeline.plan_for("cpu", 3, 8, 5, 256 * 1024)
    assert 0.9 * 256 * 1024 <= plan.activation_bytes <= 256 * 1024 and plan.hops == 2


def test_memory_over_waves_speaks_of_waves() -> None:
    mib = 1 << 20
    rec = PipelineRecord(memory={"stage 1": [{"held_bytes": 100 * mib + i * mib, "device_used_bytes": None}
                                             for i in range(6)]})
    problems = judge_memory(rec, 2, 32 * mib, mib // 4)
    assert problems and "every wave" in problems[0] and "round" not in problems[0]


def test_figures_are_named_for_diff_and_drawn() -> None:
    fig = PipelineRecord(wave_s=[0.3, 0.1, 0.2]).figures(PLAN)
    assert fig["median_wave_s"] == 0.2
    assert fig["pipeline_bytes_per_s"] == round(PLAN.activation_bytes * 4 * 2 / 0.2)
    assert gated_by_diff("WL-003", fig) == {"median_wave_s": ("lower", "wave_seconds")}
    fig["memory"] = {"stage 0": [{"held_bytes": 1 << 26, "device_used_bytes": None}] * 3}
    lost = LostRecord(round_s=[0.2, 0.4], kill_round_s=0.5, restart_s=3.0, killed_take="ActorUnavailableError: <x>")
    lost_fig = lost.figures(SyncPlan("cpu", [{"name": "w", "dtype": "float32", "shape": [4]}], 4, 0, 2), 2)
    # the kill round and the restart are single events: diff gates the median round, tested on the rounds
    assert gated_by_diff("WL-004", lost_fig) == {"median_round_s": ("lower", "round_seconds")}
    report = {"checks": [{"id": "WL-003", "outcome": "pass", "metrics": {"devices": {"cpu": fig}}},
                         {"id": "WL-004", "outcome": "pass", "metrics": {"devices": {"cpu": lost_fig}}}]}
    block = html_block(report)
    assert len(block["charts"]) == 2 and "memory over waves" in block["charts"][1]["svg"]
    assert [t["caption"] for t in block["tables"]][-1].endswith("(WL-004)")
    assert html_block({"checks": []}) == {}
