"""Workload area, pure parts: the model-shaped state and the weight-sync judging (no Ray cluster)."""
from __future__ import annotations

import pytest

from conformance.areas.workload import model
from conformance.areas.workload.report import html_block, render
from conformance.areas.workload.sync import SyncPlan, SyncRecord, memory_problems, problems_line, round_problems
from conformance.rdt import payloads
from signing_support import gated_by_diff

DTYPES = list(model.BASE_DTYPES) + ["bfloat16", "float8_e4m3fn"]


@pytest.fixture(scope="module")
def entries() -> list:
    return model.layout(256 * 1024, 4, DTYPES)


def test_layout_is_model_shaped(entries: list) -> None:
    views = [e for e in entries if "of" in e]
    assert len(entries) >= 30 and len(views) >= 4 * model.VIEWS_PER_BLOCK
    assert {e["dtype"] for e in entries if "dtype" in e} == set(DTYPES)
    assert 0.5 * 256 * 1024 <= model.nbytes(entries) <= 1.5 * 256 * 1024


def test_a_round_rewrites_the_storage_in_place_and_views_follow(entries: list) -> None:
    state = model.build(entries, "cpu")
    qkv, q = state["block0.qkv"], state["block0.q"]
    model.fill_round(state, entries, 5)
    assert q.data_ptr() == qkv.data_ptr() and state["lm_head"] is state["embed"]
    assert payloads.same_bytes(payloads.describe(state), model.expected(entries, 5))
    assert not payloads.same_bytes(model.expected(entries, 4), model.expected(entries, 5))


def test_round_problems_name_stale_mixed_and_wrong_device(entries: list) -> None:
    r4, r5 = model.expected(entries, 4), model.expected(entries, 5)
    assert round_problems(5, "w", r5, r5, r4, "cpu") == []
    assert "served an older version" in round_problems(5, "w", r4, r5, r4, "cpu")[0]
    mixed = {"map": dict(r5["map"], **{"block1.qkv": r4["map"]["block1.qkv"]})}
    assert "mixed versions: 1 tensor(s) of round 4" in round_problems(5, "w", mixed, r5, r4, "cpu")[0]
    assert any("not on the transport's device 'simacc'" in p for p in round_problems(5, "w", r5, r5, r4, "simacc"))


def test_a_second_defect_is_named_beside_many_findings_of_a_first() -> None:
    """WL-001's reason shows at most four problems, taken from the transport's rounds and the
    broadcast's in turn: five stale transport rounds do not hide a stale broadcast round."""
    transport = [f"round {k}: stale (the transport served an older version)" for k in range(2, 7)]
    line = problems_line([transport, ["round 11: stale (the broadcast served an older version)"]])
    assert line.startswith("6 problem(s): ") and "the broadcast served" in line and line.endswith("(+2 more)")
    assert problems_line([transport[:2], []]) == "2 problem(s): " + "; ".join(transport[:2])


def snaps(values: list[int]) -> list[dict]:
    return [{"held_bytes": v, "device_used_bytes": None} for v in values]


def test_memory_flat_noise_and_leaks() -> None:
    mib = 1 << 20
    flat = {"a": snaps([100 * mib, 130 * mib, 101 * mib, 100 * mib, 102 * mib, 101 * mib])}
    assert memory_problems(flat, 1, 32 * mib, mib // 4) == []
    leak = {"a": snaps([100 * mib + i * mib for i in range(7)])}
    assert "a leak per published object" in memory_problems(leak, 2, 32 * mib, mib // 4)[0]
    jump = {"a": snaps([100 * mib, 100 * mib, 100 * mib, 200 * mib])}
    assert "memory is not flat" in memory_problems(jump, 1, 32 * mib, mib // 4)[0]


def test_figures_are_named_for_diff(entries: list) -> None:
    rec = SyncRecord(round_s=[0.2, 0.1, 0.3], store_round_s=[0.4, 0.4])
    fig = rec.figures(SyncPlan("cpu", entries, 3, 2, 2))
    assert fig["median_round_s"] == 0.2 and fig["object_store_speedup"] == 2.0
    assert fig["sync_bytes_per_s"] == round(model.nbytes(entries) * 2 / 0.2)
    # diff gates the round time per object-store round, tested on the rounds (one round is too noisy
    # to gate alone); the object store's own median is Ray's figure, a reference, never gated
    assert gated_by_diff("WL-001", fig) == {"object_store_speedup": ("higher", "round_seconds")}


def test_report_block_draws_time_and_memory_over_rounds(entries: list) -> None:
    rec = SyncRecord(round_s=[0.2, 0.1, 0.3], store_round_s=[0.4, 0.4],
                     memory={"trainer": snaps([1 << 26] * 4), "receiver 0": snaps([1 << 25] * 4)})
    fig = rec.figures(SyncPlan("cpu", entries, 3, 2, 2))
    fig["memory"] = rec.memory
    report = {"checks": [{"id": "WL-001", "outcome": "pass", "metrics": {"devices": {"cpu": fig}}}]}
    block = html_block(report)
    assert len(block["charts"]) == 2 and "<svg" in block["charts"][0]["svg"]
    assert "memory over rounds" in block["charts"][1]["svg"]
    assert html_block({"checks": []}) == {}
    assert "| cpu |" in render({"devices": {"cpu": fig}})


def test_a_failed_broadcast_round_names_the_backends_error() -> None:
    """WL-001 through a backend that cannot broadcast a 0-d tensor: the reason carries the tensor
    and the error the backend raised, not only that the round failed (issue 45)."""
    import torch

    from conformance.areas.workload.actors import _named_broadcast
    from conformance.areas.workload.broadcast import broadcast_failure

    class Refuses0d:
        @staticmethod
        def broadcast(tensor: torch.Tensor, root: int, group: str) -> None:
            if tensor.dim() == 0:
                raise ValueError("cannot broadcast a 0-d tensor\nsecond line")

    _named_broadcast(Refuses0d, torch.ones(3), "w", "g")
    with pytest.raises(RuntimeError) as raised:
        _named_broadcast(Refuses0d, torch.tensor(1.5), "block0.scale", "g")
    said = str(raised.value)
    assert said == "broadcast of block0.scale (shape (), torch.float32) raised ValueError: cannot broadcast a 0-d tensor"
    line = broadcast_failure(4, "TCPMESH", [("receiver 0 (node ab)", f"RuntimeError: {said}")] * 5, "no result")
    assert line.startswith("round 4: broadcast through TCPMESH failed: receiver 0 (node ab) raised RuntimeError: "
                           "broadcast of block0.scale") and "0-d tensor" in line and line.endswith("(and 2 more)")
    assert broadcast_failure(4, "TCPMESH", [], "round 4: no result within 60s").endswith("no result within 60s")
