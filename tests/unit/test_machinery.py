"""Waits on Ray's own machinery (conformance.run.machinery): stretched by the run's measured
worker start, a fresh sample before blaming, and the host's failure (HostNotReady, "not judged:
host") when Ray still does not do its part; an error raised while waiting reaches the caller.
Fake waits and fake samples: no Ray."""
from __future__ import annotations

from typing import Any

import pytest

from conformance.run import machinery
from conformance.run.outcomes import host_failure
from conformance.timing import host_load
from conformance.timing.clock import Clock
from conformance.timing.host_load import HostNotReady, MachineryRecord
from conformance.timing.waits import BoundRanOut


@pytest.fixture(autouse=True)
def fresh_record(monkeypatch: pytest.MonkeyPatch) -> MachineryRecord:
    rec = MachineryRecord()
    monkeypatch.setattr(host_load, "RECORD", rec)
    return rec


def sampler(monkeypatch: pytest.MonkeyPatch, seconds: float | None) -> list[float]:
    """A fake fresh sample of a bare worker's start that notes `seconds` (None: it did not start)."""
    taken: list[float] = []

    def sample(timeout_s: float) -> float | None:
        taken.append(timeout_s)
        host_load.note_machinery("worker_start", timeout_s if seconds is None else seconds)
        return seconds
    monkeypatch.setattr(machinery, "measure_worker_start", sample)
    return taken


class FakeWait:
    """A wait that runs out `outs` times, then answers; records the limits it was given."""

    def __init__(self, outs: int) -> None:
        self.outs, self.limits = outs, []   # type: ignore[var-annotated]

    def __call__(self, limit: float) -> str:
        self.limits.append(limit)
        if len(self.limits) <= self.outs:
            raise BoundRanOut(f"nothing within {limit:.0f}s")
        return "answered"


def test_the_bound_is_stretched_by_the_measured_worker_start(monkeypatch: pytest.MonkeyPatch) -> None:
    host_load.note_machinery("worker_start", host_load.NOMINAL_S["worker_start"] * 2)
    taken = sampler(monkeypatch, 0.5)
    wait = FakeWait(0)
    assert machinery.await_machinery(wait, 10, "2 peer actor(s) to start") == "answered"
    assert wait.limits == [pytest.approx(20)] and taken == []          # no sample when nothing ran out


def test_a_host_loaded_after_its_measurement_gets_the_difference(monkeypatch: pytest.MonkeyPatch) -> None:
    taken = sampler(monkeypatch, host_load.NOMINAL_S["worker_start"] * 4)   # slower now than the preflight saw
    wait = FakeWait(1)
    assert machinery.await_machinery(wait, 10, "2 peer actor(s) to start") == "answered"
    assert len(taken) == 1 and wait.limits[0] == pytest.approx(10) and 35 < wait.limits[1] <= 40


def test_what_still_does_not_start_is_the_hosts_failure_never_the_plugins(monkeypatch: pytest.MonkeyPatch) -> None:
    sampler(monkeypatch, 0.4)                                  # the host is quick again: nothing more to wait
    wait = FakeWait(5)
    with pytest.raises(HostNotReady) as caught:
        machinery.await_machinery(wait, 10, "2 peer actor(s) to start")
    assert len(wait.limits) == 1
    reason = host_failure(caught.value)
    assert reason is not None and reason.startswith("not judged: host")
    assert "2 peer actor(s) to start" in reason and "a bare worker took 0.4s to start just now" in reason

    sampler(monkeypatch, None)                                 # a bare worker does not start either
    with pytest.raises(HostNotReady, match="did not start within 60s just now"):
        machinery.await_machinery(FakeWait(5), 10, "starting the member actors")


def test_an_error_raised_while_waiting_is_not_a_wait_that_ran_out(monkeypatch: pytest.MonkeyPatch) -> None:
    taken = sampler(monkeypatch, 0.4)

    def constructor_raised(_limit: float) -> Any:
        raise RuntimeError("the vendor's actor constructor raised")
    with pytest.raises(RuntimeError, match="constructor raised"):
        machinery.await_machinery(constructor_raised, 10, "2 peer actor(s) to start")
    assert taken == []


def test_a_scenario_does_not_count_an_actor_start_against_its_bound(monkeypatch: pytest.MonkeyPatch) -> None:
    clock = Clock("TR-019", "concurrent-transfers", 30)

    now = [1000.0]

    def slow_start(refs: Any, bound_s: float, what: str) -> Any:
        now[0] += 25             # the start took 25 s of the scenario's 30
        clock.t0 -= 25
        return ["info"]
    monkeypatch.setattr(machinery, "await_actors", slow_start)
    monkeypatch.setattr(machinery.time, "monotonic", lambda: now[0])
    assert machinery.clock_ready(clock, 120)([object()], "2 peer actor(s) to start") == ["info"]
    monkeypatch.undo()
    assert clock.marks["excluded_s"] == 25 and clock.bound_s == 55 and clock.remaining() > 29


def test_before_blaming_the_plugin_a_fresh_sample_is_taken(monkeypatch: pytest.MonkeyPatch) -> None:
    sampler(monkeypatch, 0.5)                                  # the host is as the bound assumed: judge
    machinery.before_blaming(60, 1.0, "3 of 100 concurrent transfers")
    sampler(monkeypatch, host_load.NOMINAL_S["worker_start"] * 3)   # loaded since: the host's
    with pytest.raises(HostNotReady, match="3 of 100 concurrent transfers.*x3.0 now"):
        machinery.before_blaming(60, 1.0, "3 of 100 concurrent transfers")
