"""Timing recovery scenarios against their bounds, and the report's Recovery section.

A *scenario* is one failure and what must follow it ("kill the actor; its device is free again
and a new actor can use it"). Each runs inside `scenario(...)`, which

* gives the scenario a clock and bounded waits (`Clock.wait_for`, `Clock.get`): every wait
  ends at its own bound or the scenario's, whichever comes first, and a wait that runs out
  fails the check with the scenario's name and the elapsed time, instead of hanging;
* records the scenario (bound, elapsed, outcome) in the check's metrics and in the report's
  "Recovery" section, also when the scenario fails or is cut off by the check's hard timeout,
  so a hang is visible as "which scenario, after how long".
"""
from __future__ import annotations

import time
from contextlib import contextmanager
from dataclasses import asdict, dataclass
from typing import Any, Callable, Iterator, TypeVar

from conformance.areas.recovery.area import AREA, STATE, RecoveryState
from conformance.run.state import stash_of
from conformance.run.timeouts import CheckTimeout

T = TypeVar("T")
POLL_S = 0.1  # knob: polling interval
SECTION = AREA.section


class ScenarioFailed(AssertionError):
    """A recovery scenario did not reach its expected state within its bound (or broke a rule)."""


@dataclass
class ScenarioRecord:
    check: str
    scenario: str
    bound_s: float
    elapsed_s: float
    outcome: str              # ok | fail | timeout (cut off by the check's hard timeout)
    detail: str | None = None


class Recorder:
    """Scenario records of one conformance run; publishes them as the report's Recovery section."""

    def __init__(self) -> None:
        self.records: list[ScenarioRecord] = []

    def add(self, run: Any, rec: ScenarioRecord) -> None:
        self.records.append(rec)
        if run is not None:
            run.publish(SECTION, self.section())

    def section(self) -> dict[str, Any]:
        return {"markdown": render_markdown(self.records), "data": section_data(self.records)}


_detached = Recorder()  # scenarios run without a conformance run (unit tests call with run=None)


def recorder_for(run: Any) -> Recorder:
    """The run's recorder (in its config's stash); the detached one when there is no run."""
    if run is None:
        return _detached
    state = stash_of(run).setdefault(STATE, RecoveryState())
    if state.recorder is None:
        state.recorder = Recorder()
    return state.recorder  # type: ignore[no-any-return]


def section_data(records: list[ScenarioRecord]) -> dict[str, Any]:
    return {"scenarios": [asdict(r) for r in records],
            "total_elapsed_s": round(sum(r.elapsed_s for r in records), 3),
            "failed": sum(1 for r in records if r.outcome != "ok")}


def render_markdown(records: list[ScenarioRecord]) -> str:
    lines = ["Every recovery scenario must end within the bound its requirement states.", "",
             "| check | scenario | bound s | elapsed s | outcome | detail |",
             "|---|---|---|---|---|---|"]
    for r in records:
        detail = (r.detail or "").replace("|", "/").replace("\n", " ")[:160]
        lines.append(f"| {r.check} | {r.scenario} | {r.bound_s:g} | {r.elapsed_s:.1f} | {r.outcome} | {detail} |")
    total = sum(r.elapsed_s for r in records)
    lines += ["", f"Total scenario time: {total:.1f} s over {len(records)} scenario(s)."]
    return "\n".join(lines)


class Clock:
    """A running scenario: its start, its bound, and bounded waits that name the scenario."""

    def __init__(self, check: str, name: str, bound_s: float) -> None:
        self.check, self.name, self.bound_s = check, name, float(bound_s)
        self.t0 = time.monotonic()
        self.marks: dict[str, float] = {}

    def elapsed(self) -> float:
        return time.monotonic() - self.t0

    def remaining(self) -> float:
        return self.bound_s - self.elapsed()

    def mark(self, label: str) -> float:
        """Remember when a step finished (seconds since the scenario began); lands in metrics."""
        self.marks[label] = round(self.elapsed(), 3)
        return self.marks[label]

    def fail(self, message: str) -> ScenarioFailed:
        return ScenarioFailed(f"[{self.name}] {message} (elapsed {self.elapsed():.1f}s of the "
                              f"{self.bound_s:g}s bound)")

    def _limit(self, bound_s: float | None) -> float:
        limit = self.remaining() if bound_s is None else min(float(bound_s), self.remaining())
        return max(limit, 0.0)

    def wait_for(self, predicate: Callable[[], T], what: str, bound_s: float | None = None,
                 poll_s: float = POLL_S, explain: Callable[[], str] | None = None) -> T:
        """Poll `predicate` until it returns something truthy; fail after the bound.

        `explain` adds what was last seen to the failure message (e.g. the last probe's error).
        """
        limit = self._limit(bound_s)
        start = time.monotonic()
        while True:
            value = predicate()
            if value:
                return value
            waited = time.monotonic() - start
            if waited >= limit:
                seen = f"; last seen: {explain()}" if explain else ""
                raise self.fail(f"{what}: not within {limit:.0f}s (waited {waited:.1f}s){seen}")
            time.sleep(min(poll_s, max(limit - waited, 0.01)))

    def get(self, refs: Any, what: str, bound_s: float | None = None) -> Any:
        """ray.get in short slices (interruptible), failing with the scenario's name at the bound."""
        from conformance.run.waits import bounded_get

        limit = self._limit(bound_s)
        try:
            return bounded_get(refs, max(limit, 0.01), what)
        except TimeoutError:
            raise self.fail(f"{what}: no result within {limit:.0f}s") from None


@contextmanager
def scenario(run: Any, metrics: dict[str, Any] | None, check: str, name: str,
             bound_s: float) -> Iterator[Clock]:
    """Run one scenario under its bound; record it whatever happens."""
    clock = Clock(check, name, bound_s)
    outcome, detail = "ok", None
    try:
        yield clock
        if clock.elapsed() > clock.bound_s:
            outcome, detail = "fail", f"took {clock.elapsed():.1f}s, over its {clock.bound_s:g}s bound"
            raise clock.fail("the scenario took longer than its bound")
    except BaseException as exc:
        from conformance.run.waits import carried_timeout

        carried = carried_timeout(exc)   # the hard timeout, possibly wrapped by Ray's C++ get
        if carried is not None:
            outcome, detail = "timeout", f"cut off by the check's hard timeout: {carried}"
            raise CheckTimeout(f"{check}: scenario {name!r} still running after {clock.elapsed():.1f}s "
                               f"(bound {clock.bound_s:g}s) when the hard timeout struck; treated as a hang"
                               ) from exc
        outcome = "fail"
        detail = detail or f"{type(exc).__name__}: {str(exc).strip().splitlines()[0] if str(exc).strip() else ''}"
        raise
    finally:
        rec = ScenarioRecord(check, name, clock.bound_s, round(clock.elapsed(), 3), outcome, detail)
        recorder_for(run).add(run, rec)
        if metrics is not None:
            metrics.setdefault("scenarios", {})[name] = {
                "bound_s": clock.bound_s, "elapsed_s": rec.elapsed_s, "outcome": outcome, "steps_s": dict(clock.marks)}
