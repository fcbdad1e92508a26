"""Workload area, data-parallel steps (WL-002), pure parts: the plan, the single-process
reference and its rounding bound, the judging, the figures and the report (no Ray cluster)."""
from __future__ import annotations

import numpy as np
import pytest

from conformance.areas.workload import dp, model
from conformance.areas.workload.broadcast import BroadcastRecord, broadcast_entries
from conformance.areas.workload.dp_run import placement
from conformance.areas.workload.report import html_block, render
from conformance.collective.config import CollectiveConfig
from conformance.rdt import payloads
from signing_support import gated_by_diff


@pytest.fixture(scope="module")
def plan() -> dp.DpPlan:
    return dp.make_plan(3, 16, 8, 5, "float32", 7, 0.5)


def replicas(plan: dp.DpPlan, order_of: object) -> list[np.ndarray]:
    """What each rank holds after the plan's steps in float32, each summing the ranks' gradients
    in the order order_of(rank) gives (numpy float32: every addition rounded)."""
    data = [(x, y) for x, y in (dp.shard(plan.seed, r, plan.samples, plan.features) for r in range(plan.workers))]
    ws = [np.zeros(plan.features, dtype=np.float32) for _ in range(plan.workers)]
    c = np.float32(plan.step_size)
    for _ in range(plan.steps):
        grads = [x.T @ (x @ ws[r] - y) for r, (x, y) in enumerate(data)]
        new = []
        for r in range(plan.workers):
            order = order_of(r)   # type: ignore[operator]
            acc = grads[order[0]].copy()
            for o in order[1:]:
                acc = (acc + grads[o]).astype(np.float32)
            new.append((ws[r] - acc * c).astype(np.float32))
        ws = new
    return ws


def record_of(ws: list[np.ndarray], steps: int) -> dp.DpRecord:
    final = [w.astype(np.float64).tolist() for w in ws]
    return dp.DpRecord(digests=[[dp.digest(f) for f in final]] * steps, step_s=[0.01] * steps,
                       allreduce_s=[[0.002] * len(ws)] * steps, final=final)


def test_the_step_size_is_a_power_of_two_within_the_stable_range(plan: dp.DpPlan) -> None:
    h = sum(x.T @ x for x, _ in dp.shards(plan))
    lam = float(np.linalg.eigvalsh(h)[-1])
    assert plan.step_size * lam <= 0.5 < 2 * plan.step_size * lam
    assert np.log2(plan.step_size) == int(np.log2(plan.step_size))


def test_bad_params_are_named() -> None:
    with pytest.raises(ValueError, match="step_fraction"):
        dp.make_plan(3, 4, 4, 2, "float32", 1, 1.5)
    with pytest.raises(ValueError, match="dtype"):
        dp.make_plan(3, 4, 4, 2, "int64", 1, 0.5)
    with pytest.raises(ValueError, match="workers"):
        dp.make_plan(1, 4, 4, 2, "float32", 1, 0.5)


def test_one_order_on_every_rank_passes_whatever_the_order(plan: dp.DpPlan) -> None:
    want, bound = dp.reference(plan)
    for order in ([0, 1, 2], [2, 0, 1], [1, 2, 0]):
        rec = record_of(replicas(plan, lambda r, o=order: o), plan.steps)
        assert dp.replica_problems(rec) == []
        assert dp.reference_problems(rec, want, bound) == []


def test_ranks_reducing_in_their_own_order_drift_apart(plan: dp.DpPlan) -> None:
    ws = replicas(plan, lambda r: [(r + i) % plan.workers for i in range(plan.workers)])
    final = [w.astype(np.float64).tolist() for w in ws]
    rec = dp.DpRecord(digests=[[dp.digest(f) for f in final]], final=final)
    problems = dp.replica_problems(rec)
    assert problems and "replicas hold different parameters from step 1" in problems[0]
    want, bound = dp.reference(plan)
    assert dp.reference_problems(rec, want, bound) == []     # each within the rounding bound: only identity sees it


def test_a_wrong_sum_misses_the_bound(plan: dp.DpPlan) -> None:
    want, bound = dp.reference(plan)
    dropped = replicas(plan, lambda r: [0, 1])               # rank 2's gradient never summed
    problems = dp.reference_problems(record_of(dropped, plan.steps), want, bound)
    assert len(problems) == 3 and "beyond the rounding bound" in problems[0]
    nan = record_of([np.full(plan.features, np.nan, dtype=np.float32)] * 3, plan.steps)
    assert dp.reference_problems(nan, want, bound)
    short = dp.DpRecord(final=[[0.0]])
    assert "parameters, the model has" in dp.reference_problems(short, want, bound)[0]


def test_the_bound_covers_float32_rounding_with_margin(plan: dp.DpPlan) -> None:
    want, bound = dp.reference(plan)
    dist = max(float(np.linalg.norm(w.astype(np.float64) - want)) for w in replicas(plan, lambda r: [0, 1, 2]))
    assert 0 < dist < bound / 10
    assert bound < 1e-3 * max(1.0, float(np.linalg.norm(want)))     # and is still tight enough to mean something


def test_bfloat16_cast_rounds_to_nearest_even() -> None:
    import torch

    v = np.random.default_rng(3).standard_normal(1000).astype(np.float32)
    want = torch.from_numpy(v).to(torch.bfloat16).to(torch.float64).numpy()
    assert np.array_equal(dp.cast(v, "bfloat16"), want)


def test_placement_spans_nodes_within_their_units() -> None:
    assert placement([("a", 2), ("b", 2)], 3, True) == ["a", "b", "a"]
    assert placement([("a", 1), ("b", 0)], 3, True) == ["a"]
    assert placement([("a", 0), ("b", 0)], 3, False) == ["a", "b", "a"]


def test_figures_are_gated_and_drawn(plan: dp.DpPlan) -> None:
    rec = record_of(replicas(plan, lambda r: [0, 1, 2]), plan.steps)
    fig = rec.figures(plan)
    assert gated_by_diff("WL-002", fig) == {"median_step_s": ("lower", "step_seconds")}   # one step is too noisy alone
    fig["nodes"] = 2
    report = {"checks": [{"id": "WL-002", "outcome": "pass", "metrics": {"devices": {"simacc": fig}}}]}
    block = html_block(report)
    assert len(block["charts"]) == 1 and "data-parallel step" in block["charts"][0]["svg"]
    assert block["notes"] == ["WL-002: pass"]
    assert "| simacc | 3 | 2 | 16 | float32 |" in render({"data_parallel": {"simacc": fig}})


def cfg(**kw: object) -> CollectiveConfig:
    base = dict(backend="SIMCOLL", group_class="x:Y", register=None, dtypes=("float32", "int64"),
                ops=("broadcast",), nominal_link_gbps=None)
    base.update(kw)
    return CollectiveConfig(**base)  # type: ignore[arg-type]


def test_broadcast_rounds_carry_the_claimed_dtypes_on_a_declared_device() -> None:
    entries = model.layout(64 * 1024, 2, ["float32", "float16", "int64"])
    sub, why = broadcast_entries(cfg(), "cpu", entries)
    assert why == "" and {e["dtype"] for e in sub if "dtype" in e} == {"float32", "int64"}
    bases = {e["name"] for e in sub if "of" not in e}
    assert all(e["of"] in bases for e in sub if "of" in e)
    part, whole = (dict(payloads.tensors_in(model.expected(x, 3))) for x in (sub, entries))
    assert part["embed"]["sha256"] == whole["embed"]["sha256"]       # the same bytes by name
    assert broadcast_entries(None, "cpu", entries) == ([], "")
    assert "does not declare simacc" in broadcast_entries(cfg(), "simacc", entries)[1]
    assert "does not claim broadcast" in broadcast_entries(cfg(ops=("allreduce",)), "cpu", entries)[1]
    assert "none of the state's dtypes" in broadcast_entries(cfg(dtypes=("uint8",)), "cpu", entries)[1]
    fig = BroadcastRecord(round_s=[0.3, 0.1]).figures(sub)
    assert fig["median_broadcast_round_s"] == 0.2 and fig["broadcast_round_seconds"] == [0.3, 0.1]
