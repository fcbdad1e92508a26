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


@pytest.fixture
def rec() -> MachineryRecord:
    """The record of Ray's machinery of this test's run (a run owns one; no module holds it)."""
    return MachineryRecord()


def sampler(monkeypatch: pytest.MonkeyPatch, seconds: float | None) -> list[float]:
    """A fake fresh sample of a bare worker's start that notes `seconds` (None: it did not start)."""
    taken: list[float] = []

    def sample(timeout_s: float, *, machinery: MachineryRecord) -> float | None:
        taken.append(timeout_s)
        machinery.note("worker_start", timeout_s if seconds is None else seconds)
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


def test_the_bound_is_stretched_by_the_measured_worker_start(monkeypatch: pytest.MonkeyPatch, rec: MachineryRecord) -> None:
    rec.note("worker_start", host_load.NOMINAL_S["worker_start"] * 2)
    taken = sampler(monkeypatch, 0.5)
    wait = FakeWait(0)
    assert machinery.await_machinery(wait, 10, "2 peer actor(s) to start", machinery=rec) == "answered"
    assert wait.limits == [pytest.approx(20)] and taken == []          # no sample when nothing ran out


def test_a_host_loaded_after_its_measurement_gets_the_difference(monkeypatch: pytest.MonkeyPatch, rec: MachineryRecord) -> None:
    taken = sampler(monkeypatch, host_load.NOMINAL_S["worker_start"] * 4)   # slower now than the preflight saw
    wait = FakeWait(1)
    assert machinery.await_machinery(wait, 10, "2 peer actor(s) to start", machinery=rec) == "answered"
    assert len(taken) == 1 and wait.limits[0] == pytest.approx(10) and 35 < wait.limits[1] <= 40


def test_what_still_does_not_start_is_the_hosts_failure_never_the_plugins(monkeypatch: pytest.MonkeyPatch, rec: MachineryRecord) -> None:
    sampler(monkeypatch, 0.4)                                  # the host is quick again: nothing more to wait
    wait = FakeWait(5)
    with pytest.raises(HostNotReady) as caught:
        machinery.await_machinery(wait, 10, "2 peer actor(s) to start", machinery=rec)
    assert len(wait.limits) == 1
    reason = host_failure(caught.value)
    assert reason is not None and reason.startswith("not judged: host")
    assert "2 peer actor(s) to start" in reason and "a bare worker took 0.4s to start just now" in reason

    sampler(monkeypatch, None)                                 # a bare worker does not start either
    with pytest.raises(HostNotReady, match="did not start within 60s just now"):
        machinery.await_machinery(FakeWait(5), 10, "starting the member actors", machinery=rec)


def test_a_long_description_keeps_the_measurements_verify_reads_back(monkeypatch: pytest.MonkeyPatch,
                                                                     rec: MachineryRecord) -> None:
    """What Ray did not do can be long (a wave's pending transfers, a line per node): the reason is
    one line of bounded length whose grant and fresh sample survive whole, so verify accepts the
    honest host's verdict (conformance.signing.host_verdict reads both back out of the line)."""
    from conformance.signing.host_verdict import carries_host_measurement

    rec.note("worker_start", 0.5)
    sampler(monkeypatch, 0.4)
    what = "node " + "\n".join(f"{i:02d}abcdef: 4 of 4 holders pending on their devices" for i in range(40))
    with pytest.raises(HostNotReady) as caught:
        machinery.await_machinery(FakeWait(5), 10, what, machinery=rec)
    assert "a bare worker took 0.4s to start just now" in str(host_failure(caught.value))
    # the form a wait that waited its grant out gives (the fake above waits no time)
    reason = host_failure(HostNotReady(machinery.host_reason(what, 10.0, 10.0, 1.0, 0.4, slowest=0.5)))
    assert reason is not None and "\n" not in reason and len(reason) < 600
    assert "…" in reason and "a bare worker took 0.4s to start just now" in reason
    assert "did not do it within" in reason and "bound stretched" in reason
    cluster = {"machinery": rec.as_json()}
    assert carries_host_measurement(reason, {}, "shared", cluster, {}), reason


def test_an_error_raised_while_waiting_is_not_a_wait_that_ran_out(monkeypatch: pytest.MonkeyPatch, rec: MachineryRecord) -> None:
    taken = sampler(monkeypatch, 0.4)

    def constructor_raised(_limit: float) -> Any:
        raise RuntimeError("the vendor's actor constructor raised")
    with pytest.raises(RuntimeError, match="constructor raised"):
        machinery.await_machinery(constructor_raised, 10, "2 peer actor(s) to start", machinery=rec)
    assert taken == []


def test_a_scenario_does_not_count_an_actor_start_against_its_bound(monkeypatch: pytest.MonkeyPatch) -> None:
    clock = Clock("TR-019", "concurrent-transfers", 30)

    now = [1000.0]

    def slow_start(refs: Any, bound_s: float, what: str, *, machinery: MachineryRecord, runs_plugin_code: bool = False) -> Any:
        now[0] += 25             # the start took 25 s of the scenario's 30
        clock.t0 -= 25
        return ["info"]
    monkeypatch.setattr(machinery, "await_actors", slow_start)
    monkeypatch.setattr(machinery.time, "monotonic", lambda: now[0])
    assert machinery.clock_ready(clock, 120, MachineryRecord())([object()], "2 peer actor(s) to start") == ["info"]
    monkeypatch.undo()
    assert clock.marks["excluded_s"] == 25 and clock.bound_s == 55 and clock.remaining() > 29


def test_a_wait_that_starts_actors_leaves_their_start_out_once(monkeypatch: pytest.MonkeyPatch) -> None:
    """TR-019's reference wave starts its actors through clock_ready inside a wait left out as a
    whole: the 25 s start counts once, beside the wave's own 10 s (session 31's double count)."""
    clock = Clock("TR-019", "concurrent-transfers", 30)
    now = [1000.0]

    def slow_start(refs: Any, bound_s: float, what: str, *, machinery: MachineryRecord, runs_plugin_code: bool = False) -> Any:
        now[0] += 25
        return ["info"]
    monkeypatch.setattr(machinery, "await_actors", slow_start)
    monkeypatch.setattr(machinery.time, "monotonic", lambda: now[0])
    with clock.left_out():
        machinery.clock_ready(clock, 120, MachineryRecord())([object()], "4 async actor(s) to start")
        now[0] += 10   # the reference's wave
    monkeypatch.undo()
    assert clock.marks["excluded_s"] == 35 and clock.bound_s == 65


def test_before_blaming_the_plugin_a_fresh_sample_is_taken(monkeypatch: pytest.MonkeyPatch, rec: MachineryRecord) -> None:
    sampler(monkeypatch, 0.5)                                  # the host is as the bound assumed: judge
    machinery.before_blaming(60, 1.0, "3 of 100 concurrent transfers", machinery=rec)
    sampler(monkeypatch, host_load.NOMINAL_S["worker_start"] * 3)   # loaded since: the host's
    with pytest.raises(HostNotReady, match="3 of 100 concurrent transfers.*x3.0 now"):
        machinery.before_blaming(60, 1.0, "3 of 100 concurrent transfers", machinery=rec)


def test_a_bound_at_the_widest_stretch_blames_the_host_when_a_fresh_sample_is_as_slow(
        monkeypatch: pytest.MonkeyPatch, rec: MachineryRecord) -> None:
    cap, nominal = host_load.MAX_FACTOR, host_load.NOMINAL_S["worker_start"]
    rec.note("worker_start", nominal * cap * 2)          # measured past the cap already
    sampler(monkeypatch, nominal * cap)                                  # and still that slow now
    with pytest.raises(HostNotReady, match="past the x6 any bound stretches to"):
        machinery.before_blaming(60, cap, "100 of 100 concurrent transfers", machinery=rec)
    sampler(monkeypatch, nominal)                                        # quick again: the plugin is judged
    machinery.before_blaming(60, cap, "100 of 100 concurrent transfers", machinery=rec)
    sampler(monkeypatch, None)                                           # no bare worker starts at all
    with pytest.raises(HostNotReady):
        machinery.before_blaming(60, cap, "100 of 100 concurrent transfers", machinery=rec)


def test_a_wait_that_runs_the_plugins_code_is_the_plugins_while_the_host_is_as_fast_as_assumed(
        monkeypatch: pytest.MonkeyPatch, rec: MachineryRecord) -> None:
    sampler(monkeypatch, 0.4)                                  # a bare worker starts at once: the probe's own
    with pytest.raises(BoundRanOut):
        machinery.await_machinery(FakeWait(5), 40, "the preflight task on 1 node(s)", runs_plugin_code=True, machinery=rec)
    sampler(monkeypatch, host_load.NOMINAL_S["worker_start"] * 4)   # slower now: the difference, then the host's
    wait = FakeWait(5)
    with pytest.raises(HostNotReady, match="the preflight task on 1 node"):
        machinery.await_machinery(wait, 40, "the preflight task on 1 node(s)", runs_plugin_code=True, machinery=rec)
    assert len(wait.limits) == 2 and wait.limits[1] > 100


def test_the_preflights_probe_that_a_slow_host_did_not_run_is_the_hosts(monkeypatch: pytest.MonkeyPatch, rec: MachineryRecord) -> None:
    """Under a CPU hog the probe task (a fresh worker on each node) took longer than its 40 s: the
    whole run said "not run: the preflight failed", as if the plugin had. Now: stretched, a fresh
    sample, and every check "not judged: host: the preflight: ..."."""
    from conformance.run import preflight
    from conformance.timing import waits

    monkeypatch.setattr(waits, "finished_results", lambda pending, limit: {})    # no probe answers
    monkeypatch.setattr(waits, "cancel_pending", lambda pending, reason: {n: reason for n in pending})
    sampler(monkeypatch, host_load.NOMINAL_S["worker_start"] * 5)
    results = preflight.probe_results({"n1": object(), "n2": object()}, 40, rec)
    assert set(results) == {"n1", "n2"} and all(isinstance(r, HostNotReady) for r in results.values())
    findings = preflight.judge_node("node n1", results["n1"], ray_count=1, expected=None, preload_expected=False)
    assert [f.level for f in findings] == ["error"] and findings[0].message.startswith("not judged: host: ")
    result = preflight.PreflightResult(findings=findings)
    reason = result.host_reason()
    assert reason is not None and reason.startswith("not judged: host: the preflight: node n1: the preflight task")
    assert "plugin was not judged" in reason

    sampler(monkeypatch, 0.4)                                  # the host is fast: the probe's own failure
    results = preflight.probe_results({"n1": object()}, 40, MachineryRecord())   # another run's record
    assert results == {"n1": "no result within 40s"}
    findings = preflight.judge_node("node n1", results["n1"], ray_count=1, expected=None, preload_expected=False)
    assert preflight.PreflightResult(findings=findings).host_reason() is None


def test_a_stretch_granted_inside_a_check_moves_its_hard_timeout(monkeypatch: pytest.MonkeyPatch, rec: MachineryRecord) -> None:
    """The check's hard timeout was sized with the factor measured when it started; the host got
    slower while it waited on Ray's machinery. The stretch granted then must not be cut as a hang."""
    import time

    from conformance.timing.timeouts import CheckTimeout, hard_timeout, time_left

    sampler(monkeypatch, host_load.NOMINAL_S["worker_start"] * 4)

    def machinery_answers_late(limit: float) -> str:
        if limit <= 0.2:
            time.sleep(limit)
            raise BoundRanOut(f"nothing within {limit:.1f}s")
        time.sleep(0.4)                                        # in the stretch the fresh sample granted
        return "answered"

    with pytest.raises(CheckTimeout, match=r"granted to waits on Ray's machinery"):
        with hard_timeout(0.5, "TR-019"):
            assert machinery.await_machinery(machinery_answers_late, 0.2, "2 peer actor(s) to start", machinery=rec) == "answered"
            left = time_left()           # the deadline moved by what the wait took beyond its 0.2 s
            assert left is not None and 0.1 < left < 0.45
            time.sleep(2)                # the check's own work past its deadline is still a hang


def test_the_watchdog_waits_out_a_grant() -> None:
    import time

    from conformance.timing.timeouts import granted, hard_timeout

    stuck: list[str] = []
    with hard_timeout(0.1, "FR-010", on_stuck=stuck.append, grace_s=0.1):
        with granted(1.0):
            time.sleep(0.35)
    assert stuck == []


def test_rays_own_fetch_timeout_seen_by_fr015_is_judged_against_a_fresh_sample(monkeypatch: pytest.MonkeyPatch, rec: MachineryRecord) -> None:
    """FR-015 saw Ray's "not found in RDT object store after 5.0s" instead of the injected receive
    error: the lowered fetch timeout, stretched once at the cluster's start, ran out before Ray ran
    the receive. A host slower now than that stretch assumed is the host's, never the plugin's."""
    from conformance.areas.recovery import transfers

    assert transfers.fetch_scale(rec) == 1.0                   # the run's, fixed at its first use: an idle host's
    seen = ("TimeoutError: ObjectRef(00ffab) not found in RDT object store after 5.0s, transfer may have failed. "
            "Please report this issue on GitHub")
    taken = sampler(monkeypatch, 0.5)                         # as fast as assumed: the check judges the plugin
    transfers.judge_fetch_ran_out(seen, "the receiver's task whose receive raised", rec)
    assert len(taken) == 1
    sampler(monkeypatch, host_load.NOMINAL_S["worker_start"] * 3)   # slower now: the host's
    with pytest.raises(HostNotReady, match="Ray's RDT fetch timeout ran out before the receive ran") as caught:
        transfers.judge_fetch_ran_out(seen, "the receiver's task whose receive raised", rec)
    reason = host_failure(caught.value)
    assert reason is not None and reason.startswith("not judged: host: ")
    taken = sampler(monkeypatch, host_load.NOMINAL_S["worker_start"] * 3)
    transfers.judge_fetch_ran_out("RuntimeError: the receiver's own error", "the receiver's task", rec)
    assert taken == []                                         # any other text: the plugin's to answer, no sample


def test_a_wait_that_can_go_on_is_given_what_a_host_loaded_since_adds(monkeypatch: pytest.MonkeyPatch, rec: MachineryRecord) -> None:
    nominal = host_load.NOMINAL_S["worker_start"]
    sampler(monkeypatch, 0.5)                                  # as the bound assumed: judge now
    assert machinery.more_time(25, 1.0, 26, "3 of 100 concurrent transfers", machinery=rec) == 0
    sampler(monkeypatch, nominal * 3)                          # loaded since: 25 s x3, less the 26 waited
    assert machinery.more_time(25, 1.0, 26, "3 of 100 concurrent transfers", machinery=rec) == pytest.approx(49)
    cap = host_load.MAX_FACTOR                                 # at the widest stretch and still as slow
    rec.note("worker_start", nominal * cap * 2)
    sampler(monkeypatch, nominal * cap)
    with pytest.raises(HostNotReady, match="past the x6"):
        machinery.more_time(25, cap, 150, "100 of 100 concurrent transfers", machinery=rec)


def test_births_the_plugin_asked_for_are_awaited_as_rays_machinery(monkeypatch: pytest.MonkeyPatch,
                                                                   rec: MachineryRecord) -> None:
    """A backend's own actor still starting when its call's bound ran out: the wait until Ray has
    started it is Ray's (returned, for the caller to leave out of the plugin's bound)."""
    monkeypatch.setattr(machinery, "BIRTH_POLL_S", 0.01)
    reads = iter([["_Hub 'star-g'"], ["_Hub 'star-g'"], []])
    took = machinery.await_births(lambda: next(reads), "Ray to start the backend's actor", machinery=rec)
    assert 0 <= took < 5


def test_a_birth_that_never_ends_on_a_host_that_was_not_slower_is_the_plugins(monkeypatch: pytest.MonkeyPatch,
                                                                              rec: MachineryRecord) -> None:
    """The actor's constructor is the plugin's code: when the fresh sample says the host is no
    slower than the bound assumed, BoundRanOut reaches the caller (a hang of the plugin), naming
    what was still starting; a slower host makes it the host's failure."""
    monkeypatch.setattr(machinery, "BIRTH_POLL_S", 0.01)
    monkeypatch.setattr(machinery, "ACTOR_START_S", 0.05)
    sampler(monkeypatch, 0.5)
    with pytest.raises(BoundRanOut, match="_Hub 'star-g' still starting"):
        machinery.await_births(lambda: ["_Hub 'star-g'"], "Ray to start the backend's actor", machinery=rec)
    sampler(monkeypatch, host_load.NOMINAL_S["worker_start"] * 4)
    with pytest.raises(HostNotReady):
        machinery.await_births(lambda: ["_Hub 'star-g'"], "Ray to start the backend's actor", machinery=rec)
