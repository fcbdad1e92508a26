"""CC-010's trials (conformance.areas.collective.trials) on timers that record when they ran."""
from __future__ import annotations

from typing import Any, Callable

from conformance.areas.collective.trials import paired_points, sweep_point

PARAMS = {"batch_s": 0.05, "max_batch": 16, "warmup_batches": 1, "min_trials": 3, "max_trials": 10, "max_cv": 0.1, "size_budget_s": 60.0}


def timer(name: str, calls: list[str], seconds: Callable[[int], float]) -> Callable[[int], list[float]]:
    """A timer of three members whose slowest takes seconds(call number) per op."""
    def run(iters: int) -> list[float]:
        calls.append(name)
        s = seconds(len([c for c in calls if c == name]))
        return [s / 2, s, s / 3]
    return run


def test_the_backend_and_the_star_take_their_trials_in_turn_each_until_its_own_are_enough() -> None:
    calls: list[str] = []
    steady = timer("backend", calls, lambda k: 0.01)
    noisy = timer("star", calls, lambda k: 0.01 * (1 + (k % 2)))   # 10 ms, 20 ms, ...: its CV never met
    backend, star, star_s = paired_points(PARAMS.get, "allreduce", 16 * 2**20, 3, steady, noisy)
    # each side's batch from one op and one untimed batch, then trials alternately; the steady side
    # stops at min_trials
    assert calls[:4] == ["backend", "backend", "star", "star"]
    assert calls[4:10] == ["backend", "star"] * 3
    assert calls[10:] == ["star"] * (PARAMS["max_trials"] - 3)
    assert backend["trials"] == 3 and star["trials"] == PARAMS["max_trials"]
    assert backend["op"] == star["op"] == "allreduce" and backend["bytes"] == star["bytes"] == 16 * 2**20
    assert backend["busbw_gbps"] > star["busbw_gbps"] and star_s >= 0


def test_a_sweep_point_is_one_side_of_it() -> None:
    calls: list[str] = []
    row: dict[str, Any] = sweep_point(PARAMS.get, "broadcast", 2**20, 3, timer("backend", calls, lambda k: 0.002))
    assert calls == ["backend"] * 5 and row["trials"] == 3 and row["batch"] == 16   # 50 ms of 2 ms ops: the cap


def test_the_first_batch_at_a_size_warms_up_untimed() -> None:
    """A first use that costs more (the star's first objects of a size in Ray's object store) is
    not a trial: its batch runs once before the trials, as nccl-tests warms up."""
    calls: list[str] = []
    cold = timer("backend", calls, lambda k: 0.02 if k == 2 else 0.002)   # the first batch: 10 times slower
    row: dict[str, Any] = sweep_point(PARAMS.get, "broadcast", 2**20, 3, cold)
    assert row["trials"] == 3 and max(row["busbw_trials_gbps"]) == min(row["busbw_trials_gbps"])
