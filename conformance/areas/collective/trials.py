"""CC-010's trials: one op at one size, timed in batches, adaptive as the transport sweep is
(conformance.measure: at least min_trials, then more until the median's CV is at most max_cv, or
max_trials or size_budget_s of its own trials are spent), and two implementations of the same op
and size timed in turn (pure, given their timers).

A timer(iters) runs iters ops on every member at once and returns each member's seconds per op;
a trial's time is the slowest member's. `param` reads the check's params (batch_s, max_batch,
warmup_batches, min_trials, max_trials, max_cv, size_budget_s).
"""
from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Any, Callable

from conformance.areas.collective.busbw import bus_factor, point_figures
from conformance.measure import batch_size, enough_trials, stats

Timer = Callable[[int], list[float]]
Param = Callable[[str], Any]


@dataclass
class Trials:
    """One op at one size by one implementation (the backend, or the star reference), a trial at
    a time; `done` once its trials are enough."""

    param: Param
    op: str
    nbytes: int
    world_size: int
    timer: Timer
    batch: int = 0
    times: list[float] = field(default_factory=list)
    spent_s: float = 0.0
    done: bool = False

    def begin(self) -> None:
        """The batch: as many ops as take about batch_s, from one op's time; then warmup_batches
        batches untimed, as nccl-tests warms up before it times: the first batch at a size pays what
        a first use costs (the star's first 16 MiB objects in Ray's object store: one trial 5-8
        times slower than the others in 3 of 4 runs, which left diff no usable spread)."""
        self.batch = batch_size(max(self.timer(1)), float(self.param("batch_s")), int(self.param("max_batch")))
        for _ in range(int(self.param("warmup_batches"))):
            self.timer(self.batch)

    def trial(self) -> None:
        t0 = time.monotonic()
        self.times.append(max(self.timer(self.batch)))
        self.spent_s += time.monotonic() - t0
        factor = bus_factor(self.op, self.world_size)
        self.done, _ = enough_trials([self.nbytes / t / 1e9 * factor for t in self.times], self.spent_s,
                                     min_trials=int(self.param("min_trials")), max_trials=int(self.param("max_trials")),
                                     max_cv=float(self.param("max_cv")), budget_s=float(self.param("size_budget_s")))

    def row(self) -> dict[str, Any]:
        """The row the report keeps (busbw.point_figures)."""
        st = stats(self.nbytes, self.times, batch=self.batch, max_cv=float(self.param("max_cv")))
        return point_figures(self.op, self.nbytes, self.world_size, st, self.batch)


def sweep_point(param: Param, op: str, nbytes: int, world_size: int, timer: Timer) -> dict[str, Any]:
    """One op at one size: its trials until they are enough; the row the report keeps."""
    trials = Trials(param, op, nbytes, world_size, timer)
    trials.begin()
    while not trials.done:
        trials.trial()
    return trials.row()


def paired_points(param: Param, op: str, nbytes: int, world_size: int, backend: Timer,
                  star: Timer) -> tuple[dict[str, Any], dict[str, Any], float]:
    """The backend's row and the star reference's for one op at one size, and the seconds the
    star's trials took: their trials taken in turn (a backend trial, a star trial, ...; each side
    stops when its own are enough), so the compared figures meet the same host. Measured one after
    the other, seconds apart, a load burst on a 2-core runner met one side only: make test read a
    correct star-design backend at 19.8 % of the star (0.057 against 0.289 GB/s; 86-126 % in
    other runs)."""
    sides = [Trials(param, op, nbytes, world_size, backend), Trials(param, op, nbytes, world_size, star)]
    for side in sides:
        side.begin()
    while not all(side.done for side in sides):
        for side in sides:
            if not side.done:
                side.trial()
    return sides[0].row(), sides[1].row(), sides[1].spent_s
