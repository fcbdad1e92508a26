"""A bounded run of steps: one clock, and waits that each end at their own bound or the clock's.

A check that waits on Ray (a device coming back, a transfer ending, an actor answering) never
waits open-ended: every wait ends at its own bound or at the clock's overall bound, whichever
comes first, and a wait that runs out fails the check naming the step, the elapsed time and the
bound, instead of hanging. The recovery scenarios and the RDT harness's transfers both run on it.
"""
from __future__ import annotations

import time
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any, Callable, Iterator, TypeVar

if TYPE_CHECKING:
    from conformance.timing.waits import Refs


T = TypeVar("T")
POLL_S = 0.1  # knob: polling interval
# knob: hang guard of one control call on a started actor (arm a fault, a digest, a pid, a
# tracing record): no judged bound, so it is generous; 15 s ran out once on a loaded 2-core CI
CONTROL_CALL_S = 60.0
# knob: bound of ray.shutdown() when the suite stops a cluster (0.2-3 s when healthy); past it Ray
# is deadlocked and the run ends with its report written (conformance.cluster.manager.stop_cluster)
CLUSTER_STOP_S = 60.0


class ScenarioFailed(AssertionError):
    """A bounded run did not reach its expected state within its bound (or broke a rule)."""


class Clock:
    """A running scenario: its start, its bound, and bounded waits that name the scenario."""

    def __init__(self, check: str, name: str, bound_s: float,
                 on_step: Callable[["Clock"], None] | None = None) -> None:
        self.check, self.name, self.bound_s = check, name, float(bound_s)
        self.t0 = time.monotonic()
        self.marks: dict[str, float] = {}
        # told after every step that ends (a mark, a wait, a time left out): the check's budget
        # keeps the scenario's record current (conformance.run.budget)
        self._on_step = on_step

    def _stepped(self) -> None:
        if self._on_step is not None:
            self._on_step(self)

    def elapsed(self) -> float:
        return time.monotonic() - self.t0

    def remaining(self) -> float:
        return self.bound_s - self.elapsed()

    def mark(self, label: str) -> float:
        """Remember when a step finished (seconds since the scenario began); lands in metrics."""
        self.marks[label] = round(self.elapsed(), 3)
        self._stepped()
        return self.marks[label]

    def exclude(self, seconds: float) -> None:
        """Leave `seconds` out of the scenario's bound (they went to Ray's own machinery, e.g. an
        actor starting: conformance.run.machinery, which judges that wait by itself)."""
        self.bound_s += max(0.0, float(seconds))
        self.marks["excluded_s"] = round(self.marks.get("excluded_s", 0.0) + max(0.0, float(seconds)), 3)
        self._stepped()

    def count_again(self, seconds: float) -> None:
        """Count `seconds` an earlier `exclude` left out against the bound again: time left out
        ahead, for a wait granted more, that the wait did not use (a scenario leaves out no more
        than it spent: verify refuses one whose excluded_s exceeds its elapsed_s)."""
        back = min(max(0.0, float(seconds)), float(self.marks.get("excluded_s", 0.0)))
        self.bound_s -= back
        self.marks["excluded_s"] = round(self.marks.get("excluded_s", 0.0) - back, 3)
        self._stepped()

    @contextmanager
    def left_out(self) -> Iterator[None]:
        """Leave the block's time out of the scenario's bound (a wait on Ray's machinery), less
        what the block already left out itself: a wait that starts actors, whose start is left
        out as it happens, is not left out twice."""
        t0, before = time.monotonic(), float(self.marks.get("excluded_s", 0.0))
        try:
            yield
        finally:
            inside = float(self.marks.get("excluded_s", 0.0)) - before
            self.exclude(time.monotonic() - t0 - inside)

    def fail(self, message: str) -> ScenarioFailed:
        self._stepped()
        return ScenarioFailed(f"[{self.name}] {message} (elapsed {self.elapsed():.1f}s of the "
                              f"{self.bound_s:g}s bound)")

    def limit(self, bound_s: float | None) -> float:
        """How long a wait with its own bound may take now (never past the clock's bound)."""
        limit = self.remaining() if bound_s is None else min(float(bound_s), self.remaining())
        return max(limit, 0.0)

    def wait_for(self, predicate: Callable[[], T | None], what: str, bound_s: float | None = None,
                 poll_s: float = POLL_S, explain: Callable[[], str] | None = None) -> T:
        """Poll `predicate` until it returns something truthy; fail after the bound.

        `explain` adds what was last seen to the failure message (e.g. the last probe's error).
        """
        limit = self.limit(bound_s)
        start = time.monotonic()
        while True:
            value = predicate()
            if value:
                self._stepped()
                return value
            waited = time.monotonic() - start
            if waited >= limit:
                seen = f"; last seen: {explain()}" if explain else ""
                raise self.fail(f"{what}: not within {limit:.0f}s (waited {waited:.1f}s){seen}")
            time.sleep(min(poll_s, max(limit - waited, 0.01)))

    def get(self, refs: Refs, what: str, bound_s: float | None = None) -> Any:
        """ray.get in short slices (interruptible), failing with the scenario's name at the bound."""
        from conformance.timing.waits import bounded_get

        limit = self.limit(bound_s)
        try:
            value = bounded_get(refs, max(limit, 0.01), what)
            self._stepped()
            return value
        except TimeoutError:
            raise self.fail(f"{what}: no result within {limit:.0f}s") from None
