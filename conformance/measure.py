"""Pure statistics of the areas that measure (performance, collective): a robust coefficient of
variation, the median's relative standard error, trial batching and per-size summaries.

One home for them, so every bandwidth the suite reports is summarised the same way (the method
is described in conformance/areas/performance/bench.py). No Ray, no clock.
"""
from __future__ import annotations

import math
import statistics
from typing import Any

IQR_PER_SIGMA = 1.349  # knob: IQR of a normal distribution in standard deviations (robust CV)
MEDIAN_SE_FACTOR = math.sqrt(math.pi / 2)  # knob: SE of a median = 1.2533 sigma / sqrt(n) (normal theory)


def robust_cv(values: list[float]) -> float:
    """(IQR / 1.349) / median: a coefficient of variation one outlier cannot inflate
    (inf for fewer than 2 values or a zero median: no evidence of stability)."""
    if len(values) < 2:
        return math.inf
    med = statistics.median(values)
    if med <= 0:
        return math.inf
    q = statistics.quantiles(values, n=4)
    return (q[2] - q[0]) / IQR_PER_SIGMA / med


def median_cv(values: list[float]) -> float:
    """The median's coefficient of variation (relative standard error): 1.2533 x robust_cv / sqrt(n).
    This is what more trials drive down; inf below 2 values."""
    cv = robust_cv(values)
    return cv * MEDIAN_SE_FACTOR / math.sqrt(len(values)) if math.isfinite(cv) else math.inf


def batch_size(one_transfer_s: float, batch_s: float, max_batch: int) -> int:
    """Transfers per trial so a trial lasts about batch_s (1..max_batch)."""
    if one_transfer_s <= 0:
        return max_batch
    return max(1, min(max_batch, math.ceil(batch_s / one_transfer_s)))


def stats(nbytes: int, times: list[float], *, batch: int = 1, max_cv: float | None = None) -> dict[str, Any]:
    """Median/min/max time per transfer and bandwidth of the trials, the bandwidth IQR, the
    trials' robust CV and the median's CV (`times`: one per trial, each the mean of `batch`
    transfers), and every trial's bandwidth, sorted (`trials_gbps`: what `ray-conformance diff`'s
    significance test compares between runs)."""
    bw = sorted(nbytes / t / 1e9 for t in times)
    q = statistics.quantiles(bw, n=4) if len(bw) >= 2 else [bw[0]] * 3
    med = statistics.median(times)
    cv, trial_cv = median_cv(bw), robust_cv(bw)
    out = {"median_s": med, "min_s": min(times), "max_s": max(times), "median_gbps": nbytes / med / 1e9,
           "min_gbps": bw[0], "max_gbps": bw[-1], "iqr_gbps": [q[0], q[2]], "trials": len(times),
           "trials_gbps": bw,
           "batch": batch, "cv": cv if math.isfinite(cv) else None,
           "trial_cv": trial_cv if math.isfinite(trial_cv) else None}
    if max_cv is not None:
        out["cv_met"] = math.isfinite(cv) and cv <= max_cv
    return out


def enough_trials(values: list[float], elapsed_s: float, *, min_trials: int, max_trials: int, max_cv: float,
                  budget_s: float) -> tuple[bool, bool]:
    """(stop now, CV target met) after the trials so far: at least min_trials; then stop once the
    median's CV is at or below max_cv, or max_trials trials or budget_s seconds are spent."""
    if len(values) < min_trials:
        return False, False
    met = median_cv(values) <= max_cv
    return met or len(values) >= max_trials or elapsed_s >= budget_s, met
