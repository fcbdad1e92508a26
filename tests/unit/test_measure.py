"""The pure statistics every measured figure goes through (conformance/measure.py), and nccl-tests'
bus bandwidth (conformance/areas/collective/busbw.py)."""
from __future__ import annotations

import pytest

from conformance import measure
from conformance.areas.collective.busbw import bus_factor, busbw_gbps


def test_robust_cv_ignores_one_outlier_and_needs_two_values() -> None:
    steady = [1.0, 1.01, 0.99, 1.0, 1.02, 0.98, 1.0]
    assert measure.robust_cv(steady) < 0.02
    assert measure.robust_cv(steady + [10.0]) < 0.03       # one GC pause does not make a size noisy
    assert measure.robust_cv([1.0, 2.0, 0.5, 1.5, 0.7]) > 0.3
    assert measure.robust_cv([1.0]) == float("inf") and measure.robust_cv([0.0, 0.0]) == float("inf")


def test_the_medians_cv_shrinks_with_trials_the_trials_spread_does_not() -> None:
    noisy = [1.0, 1.2, 0.85, 1.1, 0.9]
    assert measure.robust_cv(noisy * 8) == pytest.approx(measure.robust_cv(noisy), rel=0.35)
    assert measure.median_cv(noisy * 8) < measure.median_cv(noisy) / 2
    assert measure.median_cv(noisy) == pytest.approx(measure.robust_cv(noisy) * 1.2533 / 5 ** 0.5, rel=1e-3)


def test_batch_size_makes_tiny_transfers_last_a_trial() -> None:
    assert measure.batch_size(0.005, 0.05, 16) == 10        # 5 ms transfers: 10 per 50 ms trial
    assert measure.batch_size(0.001, 0.05, 16) == 16        # capped
    assert measure.batch_size(0.4, 0.05, 16) == 1           # a large transfer is its own trial
    assert measure.batch_size(0.0, 0.05, 16) == 16


def test_stats_record_cv_trials_and_batch() -> None:
    s = measure.stats(1_000_000, [0.001, 0.00101, 0.00099, 0.001, 0.001], batch=8, max_cv=0.05)
    assert s["trials"] == 5 and s["batch"] == 8 and s["cv_met"] and s["cv"] < 0.05
    assert abs(s["median_gbps"] - 1.0) < 1e-9
    noisy = measure.stats(1_000_000, [0.001, 0.002, 0.0005, 0.0015, 0.0007], max_cv=0.05)
    assert not noisy["cv_met"] and noisy["cv"] > 0.05
    assert measure.stats(1000, [0.001])["cv"] is None


def test_enough_trials_never_stops_below_the_minimum() -> None:
    kw = {"min_trials": 3, "max_trials": 6, "max_cv": 0.05, "budget_s": 1.0}
    assert measure.enough_trials([1.0, 1.0], 0.1, **kw) == (False, False)
    assert measure.enough_trials([1.0] * 3, 0.1, **kw) == (True, True)
    assert measure.enough_trials([1.0, 2.0, 0.5], 2.0, **kw) == (True, False)


def test_bus_factors_are_nccl_tests() -> None:
    assert bus_factor("allreduce", 2) == 1.0 and bus_factor("allreduce", 4) == 1.5
    assert bus_factor("broadcast", 8) == 1.0 and bus_factor("allgather", 4) == 0.75
    assert busbw_gbps("allreduce", 3, 10**9, 1.0) == pytest.approx(4 / 3)
    with pytest.raises(ValueError, match="no bus factor"):
        bus_factor("alltoall", 2)
