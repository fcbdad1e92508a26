"""The one owner of a check's time: every wait a check makes goes through its `Budget`.

A check receives its budget with its context (`ctx.budget`). Each wait says whose time it is
(conformance.timing.owned explains the two owners):

    clock = ctx.budget.scenario("restart", ctx.param("restart_s"), param="restart_s")  # the plugin's
    clock.wait_for(lambda: ..., "the holder to answer")          # ends at the checklist's bound
    infos = ctx.budget.actors([a.info.remote() for a in actors], "the holders to start")  # Ray's
    ctx.budget.released(ctx.resource, "every device free after the check")               # Ray's
    back = ctx.budget.restarted(clock, actor, old_pid, "the holder to restart")          # Ray's

The plugin's waits are judged against the bound the release gives them and never stretched; the
waits on Ray's machinery stretch by what the run measured (timing/host_load), take a fresh sample
before blaming anyone and end "not judged: host" (HostNotReady) with both measurements when the
host, not the plugin, ran out. Every wait lands in the check's `metrics.waits`, which
`verify` judges with the same rule (timing/owned.wait_problems). A check body imports nothing of
conformance.timing: the names it needs (the exceptions it catches, the scenario type) are here.
"""
from __future__ import annotations

import time
from contextlib import contextmanager, nullcontext
from typing import TYPE_CHECKING, Any, Callable, Iterator, NoReturn, TypeVar

from conformance.run import machinery, release
from conformance.timing.clock import CONTROL_CALL_S, Clock, ScenarioFailed
from conformance.timing.host_load import MAX_FACTOR, HostNotReady, MachineryRecord
from conformance.timing.owned import MAX_RECORDED, RECORDER, RESAMPLE_S, Owner, Wait
from conformance.timing.timeouts import CheckTimeout, granted, time_left
from conformance.timing.waits import BoundRanOut, bounded_get

if TYPE_CHECKING:
    from ray.actor import ActorHandle

    from conformance.catalog.data import Check
    from conformance.timing.waits import Refs

T = TypeVar("T")

# What a check may name of time, from here (its body imports nothing of conformance.timing).
__all__ = ["CONTROL_CALL_S", "Budget", "CheckTimeout", "HostNotReady", "Scenario", "ScenarioFailed"]
Scenario = Clock   # a bounded run of the plugin's steps (conformance.timing.clock)
# knob: one probe's slice of a restart wait (a call on a restarting actor may hang until Ray answers)
RESTART_PROBE_S = 2.0


class Budget:
    """One check's time: the bounds its checklist entry gives, what Ray's machinery is granted,
    the fresh sample before blaming, and the record of every wait (metrics.waits).

    `machinery` is the run's record of Ray's machinery (conformance.run.session.ConformanceRun
    .machinery), shared by every check of that run and by nothing outside it: what one check
    measured stretches the next one's bounds, never another run's."""

    def __init__(self, check: "Check", metrics: dict[str, Any], machinery: MachineryRecord) -> None:
        self.check = check
        self.metrics = metrics
        self.machinery = machinery
        self._each: list[dict[str, Any]] = []
        self._count = 0

    # ------------------------------------------------------------------ the record
    def note(self, wait: Wait) -> dict[str, Any]:
        """Record `wait` (the first MAX_RECORDED in full, then only counted); the dict returned is
        the one in metrics, for a wait still running to update."""
        entry = wait.as_json()
        self._count += 1
        if len(self._each) < MAX_RECORDED:
            self._each.append(entry)
        self.metrics["waits"] = {"each": self._each, "count": self._count}
        return entry

    def _keep(self, wait: Wait) -> None:
        self.note(wait)

    @contextmanager
    def active(self) -> Iterator["Budget"]:
        """While the check's body runs: the waits the areas' helpers make for it are its own."""
        token = RECORDER.set(self._keep)
        try:
            yield self
        finally:
            RECORDER.reset(token)

    def _bound(self, bound_s: float | None, param: str | None) -> float:
        if bound_s is None:
            if param is None:
                raise ValueError("a wait needs a bound or the param that gives it")
            return float(self.check.param(param))
        return float(bound_s)

    # ------------------------------------------------------------------ the plugin's time
    def scenario(self, name: str, bound_s: float | None = None, *, param: str | None = None) -> Clock:
        """A bounded run of the plugin's steps: every wait on it ends at the checklist's bound
        (`param`'s value, or `bound_s`), never stretched; what it leaves to Ray's machinery
        (Clock.exclude) is recorded beside it."""
        bound = self._bound(bound_s, param)
        entry = self.note(Wait("plugin", name, bound, bound, 0.0, "met", param))

        def on_step(clock: Clock) -> None:
            took = clock.elapsed()
            excluded = clock.marks.get("excluded_s", 0.0)
            entry.update(took_s=round(took, 3), granted_s=round(clock.bound_s, 3),
                         verdict="met" if took <= clock.bound_s + 0.001 else "ran out")
            if excluded:
                entry["excluded_s"] = round(float(excluded), 3)

        return Clock(self.check.id, name, bound, on_step=on_step)

    # ------------------------------------------------------------------ Ray's and the host's time
    def factor(self, kind: str | None = "worker_start") -> float:
        """How far this run stretches a bound on Ray's `kind` of machinery (its measurement)."""
        return self.machinery.bound_factor(kind)

    def measured(self, kind: str = "worker_start") -> float | None:
        """The slowest this run measured Ray's `kind` of machinery (None: not measured)."""
        return self.machinery.slowest_s.get(kind)

    def ray(self, wait: Callable[[float], T], what: str, bound_s: float | None = None, *, param: str | None = None,
            kind: str = "worker_start", runs_plugin_code: bool = False) -> T:
        """`wait(limit)`'s value, a wait on Ray's machinery (conformance.run.machinery.await_machinery:
        stretched, resampled, HostNotReady when the host ran out); `wait` raises BoundRanOut
        (conformance.timing.waits.polled makes one of a probe). Recorded in this budget wherever it
        runs: a fixture's setup waits before the check's body makes the budget `active`."""
        with self.active():
            return machinery.await_machinery(wait, self._bound(bound_s, param), what, kind, machinery=self.machinery,
                                             runs_plugin_code=runs_plugin_code, param=param)

    def actors(self, refs: Refs, what: str, bound_s: float | None = None, *, param: str | None = None,
               runs_plugin_code: bool = False) -> Any:
        """New actors' first answers (their info/ready refs), awaited as Ray's machinery (recorded
        in this budget, as `ray`'s waits); `runs_plugin_code` when the answer also runs the
        plugin's code (machinery.await_actors)."""
        bound = machinery.ACTOR_START_S if bound_s is None and param is None else self._bound(bound_s, param)
        with self.active():
            return machinery.await_actors(refs, bound, what, machinery=self.machinery, param=param,
                                          runs_plugin_code=runs_plugin_code)

    def released(self, resource: str, what: str, bound_s: float | None = None, *, param: str | None = None,
                 node_id: str | None = None, units: float | None = None, clock: Clock | None = None) -> None:
        """Every unit of `resource` (on `node_id`; `units` of them) free again after the suite's
        actors ended: Ray's accounting, awaited as Ray's machinery (conformance.run.release: a leak,
        a unit Ray reports still held by an ALIVE actor or group, fails as NotReleased; the host
        running out is HostNotReady). Bounded by `param` or `bound_s` (neither: release.RELEASE_S),
        recorded in this budget wherever it runs (setup, body, teardown); inside a scenario
        (`clock`), its time is left out of the scenario's bound."""
        bound = release.RELEASE_S if bound_s is None and param is None else self._bound(bound_s, param)
        with self.active(), clock.left_out() if clock is not None else nullcontext():
            release.await_released(resource, what, bound, machinery=self.machinery, param=param,
                                   node_id=node_id, units=units)

    def started(self, clock: Clock, refs: Refs, what: str, bound_s: float | None = None, *,
                param: str | None = None, runs_plugin_code: bool = False) -> Any:
        """Inside a scenario: new actors' first answers, or a placement group Ray can place by its
        own accounting (`pg.ready()`), awaited as Ray's machinery (`actors`); the time it took is
        left out of the scenario's own bound (a slow start is the host's, judged here)."""
        with clock.left_out():
            return self.actors(refs, what, bound_s, param=param, runs_plugin_code=runs_plugin_code)

    def get(self, refs: Refs, bound_s: float, what: str, owner: Owner = "ray") -> Any:
        """A hang guard on a result (a task or a call whose time no check judges): at most
        `bound_s`, never stretched; BoundRanOut (a TimeoutError) naming `what` when it runs out."""
        t0 = time.monotonic()
        verdict = "met"
        try:
            return bounded_get(refs, bound_s, what)
        except BoundRanOut:
            verdict = "ran out"
            raise
        except BaseException:
            verdict = "error"
            raise
        finally:
            self.note(Wait(owner, what, float(bound_s), float(bound_s), time.monotonic() - t0, verdict))

    @contextmanager
    def ray_window(self, what: str, bound_s: float | None = None, *, param: str | None = None,
                   kind: str = "worker_start") -> Iterator[float]:
        """A window in which Ray's machinery places or starts work that a helper waits for itself
        (a placement group, a label selector's tasks): yields the bound stretched by the run's
        measurement; the window's time and end are recorded. A helper that finds Ray did not do its
        part within it calls `host_failed`."""
        bound = self._bound(bound_s, param)
        factor = self.factor(kind)
        t0 = time.monotonic()
        entry = self.note(Wait("ray", what, bound, bound * factor, None, "met", param, factor))
        try:
            yield bound * factor
        except HostNotReady:
            entry["verdict"] = "host"
            raise
        except AssertionError:
            raise         # the plugin's finding within the window: the window itself ended
        except BaseException:
            entry["verdict"] = "error"
            raise
        finally:
            entry["took_s"] = round(time.monotonic() - t0, 3)

    def ray_bound(self, what: str, bound_s: float | None = None, *, param: str | None = None,
                  kind: str = "worker_start") -> float:
        """The bound of a wait on Ray's machinery that a helper makes itself with a number (a
        placement group's `wait(timeout)`): stretched by the run's measurement, and recorded."""
        bound = self._bound(bound_s, param)
        factor = self.factor(kind)
        self.note(Wait("ray", what, bound, bound * factor, None, "met", param, factor))
        return bound * factor

    def host_failed(self, reason: str) -> NoReturn:
        """Ray's machinery did not do its part while the plugin's was right: "not judged: host",
        with both measurements: the slowest worker start this run saw before, and a fresh sample
        taken now (conformance.run.machinery.measure_worker_start)."""
        before = self.measured("worker_start")
        with granted(RESAMPLE_S):
            fresh = machinery.measure_worker_start(RESAMPLE_S, machinery=self.machinery)
        now = (f"a bare worker took {fresh:.1f}s to start just now" if fresh is not None
               else f"a bare worker did not start within {RESAMPLE_S:.0f}s just now")
        raise HostNotReady(f"{machinery.shortened(reason)} (" + (f"the slowest worker start before: {before:.1f}s; " if before else "")
                           + f"{now})")

    def restarted(self, clock: Clock, actor: ActorHandle[Any], old_pid: int, what: str, bound_s: float | None = None, *,
                  method: str = "state", param: str | None = None) -> dict[str, Any]:
        """An actor Ray restarts (a kill with restarts left, a crash, a node lost) answering from a
        new process: `method` returns a dict with its "pid" (a call right after the kill may still
        reach the old process, or fail while Ray restarts it).

        The plugin's time: the restarted actor's constructor claims its devices through the
        vendor's manager (a manager that never finishes opening a device hangs here), so the wait
        is judged on the scenario's clock against the checklist's bound (`param`'s value, or
        `bound_s`; None: the clock's own), never stretched. Those bounds are tens of nominal
        worker starts; the scenario records the wait."""
        import ray
        from ray.exceptions import GetTimeoutError, RayActorError

        bound = self._bound(bound_s, param) if (bound_s is not None or param is not None) else None
        last: list[str] = []

        def probe() -> dict[str, Any] | None:
            try:
                state: dict[str, Any] = ray.get(getattr(actor, method).remote(), timeout=RESTART_PROBE_S)
            except (RayActorError, GetTimeoutError) as exc:
                last[:] = [type(exc).__name__]
                return None
            if int(state["pid"]) == int(old_pid):
                last[:] = ["the old process still answers"]
                return None
            return state

        return clock.wait_for(probe, what, bound, poll_s=0.2, explain=lambda: last[0] if last else "nothing")

    @contextmanager
    def wave(self, what: str, bound_s: float | None = None, *, param: str | None = None,
             clock: Clock | None = None) -> Iterator["Wave"]:
        """A wait of the plugin's work that Ray's machinery is part of throughout (a wave of
        transfers on fresh workers, their scheduling and fetches): its bound stretches by the run's
        measurement; when it runs out with work pending, `Wave.more(waited)` takes a fresh sample
        and gives what a host loaded since adds (0: the bound fitted the host, judge the plugin)."""
        bound = self._bound(bound_s, param)
        w = Wave(self, what, bound, self.factor(None), clock, param)
        with granted(bound * MAX_FACTOR + RESAMPLE_S, assumed_s=w.limit_s):
            try:
                yield w
            except HostNotReady:
                w.entry["verdict"] = "host"
                raise
            finally:
                w.entry["took_s"] = round(time.monotonic() - w.t0, 3)
                w.settle()

    @contextmanager
    def granted(self, seconds: float, assumed_s: float = 0.0) -> Iterator[None]:
        """A block that waits on Ray's machinery in another process (a second job): the check's
        hard timeout moves on by what it takes beyond `assumed_s`, up to `seconds`."""
        with granted(seconds, assumed_s=assumed_s):
            yield

    @staticmethod
    def time_left() -> float | None:
        """Seconds until the check's hard timeout (None outside one): a check with independent
        parts asks before a part that may use its whole bound, so it keeps what it found."""
        return time_left()


class Wave:
    """A running `Budget.wave`: its stretched bound now (`limit_s`), and `more(waited)`."""

    def __init__(self, budget: Budget, what: str, bound_s: float, factor: float, clock: Clock | None,
                 param: str | None) -> None:
        self.what, self.bound_s, self.factor, self.clock = what, bound_s, factor, clock
        self.machinery = budget.machinery
        self.limit_s = bound_s * factor
        self.t0 = time.monotonic()
        self._lent: tuple[float, float] | None = None   # (when, seconds) the clock left out ahead for `more`
        self.entry = budget.note(Wait("ray", what, bound_s, self.limit_s, None, "met", param, factor))

    def more(self, waited_s: float) -> float:
        """What a host loaded since the bound was stretched adds (a fresh sample; 0: none). The
        scenario's clock leaves it out of its own bound while the wave may use it, and counts
        what the wave did not use against it again when the wave ends (`settle`)."""
        extra = machinery.more_time(self.bound_s, self.factor, waited_s, f"{self.what} pending after {waited_s:.0f}s",
                                    machinery=self.machinery)
        if self.clock is not None and extra > 0:
            self.clock.exclude(extra)
            self._lent = (time.monotonic(), extra)
        self.limit_s = waited_s + extra
        self.entry["granted_s"] = round(max(self.entry["granted_s"], self.limit_s), 3)
        return extra

    def settle(self) -> None:
        """The wave ended: of the more it was given, the part it did not use counts against the
        scenario's bound again (make test-load: a wave given 300 s more ended 87 s later, and its
        scenario recorded 415 s left out of 248 s spent)."""
        if self.clock is not None and self._lent is not None:
            since, extra = self._lent
            self.clock.count_again(extra - min(extra, time.monotonic() - since))
            self._lent = None

    def ran_out(self) -> None:
        """The wave ended with work pending past its bound: the plugin's finding."""
        self.entry["verdict"] = "ran out"
