"""Timing recovery scenarios against their bounds, and the report's Recovery section.

A *scenario* is one failure and what must follow it ("kill the actor; its device is free again
and a new actor can use it"). Each runs inside `scenario(...)`, which

* gives the scenario a clock and bounded waits (conformance.timing.clock: `Clock.wait_for`, `Clock.get`): every wait
  ends at its own bound or the scenario's, whichever comes first, and a wait that runs out
  fails the check with the scenario's name and the elapsed time, instead of hanging;
* records the scenario (bound, elapsed, outcome) in the check's metrics and in the report's
  "Recovery" section, also when the scenario fails or is cut off by the check's hard timeout,
  so a hang is visible as "which scenario, after how long".
"""
from __future__ import annotations

from contextlib import contextmanager
from dataclasses import asdict, dataclass
from typing import TYPE_CHECKING, Any, Iterator

from conformance.areas.recovery.area import AREA, STATE, RecoveryState
from conformance.run.state import stash_of
from conformance.timing.clock import Clock
from conformance.timing.timeouts import CheckTimeout

if TYPE_CHECKING:
    from conformance.run.budget import Budget
    from conformance.run.check_context import RunView

SECTION = AREA.section


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

    def add(self, run: RunView | None, rec: ScenarioRecord) -> None:
        self.records.append(rec)
        if run is not None:
            run.publish(SECTION, self.section())

    def section(self) -> dict[str, Any]:
        return {"markdown": render_markdown(self.records), "data": section_data(self.records)}


_detached = Recorder()  # scenarios run without a conformance run (unit tests call with run=None)


def recorder_for(run: RunView | None) -> Recorder:
    """The run's recorder (in its config's stash); the detached one when there is no run."""
    if run is None:
        return _detached
    state = stash_of(run).setdefault(STATE, RecoveryState())
    if state.recorder is None:
        state.recorder = Recorder()
    recorder: Recorder = state.recorder   # RecoveryState (area.py) cannot name this module's type: scenario imports it
    return recorder


def section_data(records: list[ScenarioRecord]) -> dict[str, Any]:
    return {"scenarios": [asdict(r) for r in records],
            "total_elapsed_s": round(sum(r.elapsed_s for r in records), 3),
            "failed": sum(1 for r in records if r.outcome in ("fail", "timeout")),
            "not_judged": sum(1 for r in records if r.outcome == "host")}


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


@contextmanager
def scenario(run: RunView | None, metrics: dict[str, Any] | None, check: str, name: str,
             bound_s: float, budget: Budget | None = None) -> Iterator[Clock]:
    """Run one scenario under its bound; record it whatever happens (and, given the check's
    budget, as one of the plugin's waits there)."""
    clock = budget.scenario(name, bound_s) if budget is not None else Clock(check, name, bound_s)
    outcome, detail = "ok", None
    try:
        yield clock
        if clock.elapsed() > clock.bound_s:
            outcome, detail = "fail", f"took {clock.elapsed():.1f}s, over its {clock.bound_s:g}s bound"
            raise clock.fail("the scenario took longer than its bound")
    except BaseException as exc:
        from conformance.timing.waits import carried_timeout

        carried = carried_timeout(exc)   # the hard timeout, possibly wrapped by Ray's C++ get
        if carried is not None:
            outcome, detail = "timeout", f"cut off by the check's hard timeout: {carried}"
            raise CheckTimeout(f"{check}: scenario {name!r} still running after {clock.elapsed():.1f}s "
                               f"(bound {clock.bound_s:g}s) when the hard timeout struck; treated as a hang"
                               ) from exc
        from conformance.timing.host_load import HostNotReady

        # Ray's machinery did not do its part on this host: the plugin was not judged, so the
        # scenario did not fail either (the check reads "not judged: host")
        outcome = "host" if isinstance(exc, HostNotReady) else "fail"
        detail = detail or f"{type(exc).__name__}: {str(exc).strip().splitlines()[0] if str(exc).strip() else ''}"
        raise
    finally:
        rec = ScenarioRecord(check, name, clock.bound_s, round(clock.elapsed(), 3), outcome, detail)
        recorder_for(run).add(run, rec)
        if metrics is not None:
            metrics.setdefault("scenarios", {})[name] = {
                "bound_s": clock.bound_s, "elapsed_s": rec.elapsed_s, "outcome": outcome, "steps_s": dict(clock.marks)}
