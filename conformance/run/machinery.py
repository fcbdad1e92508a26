"""Waiting on Ray's own machinery: an actor or worker starting, work being placed.

One way for every such wait (conformance.timing.host_load says why): the bound stretches by what
the run measured of Ray's machinery; when it runs out, the run takes a FRESH sample of a bare
worker's start before it blames anyone (a host that got loaded after the preflight measured it
is judged against its machinery now), and, where the fresh sample says the host is slower than
the bound assumed, waits the difference. What still does not come is the host's failure
(HostNotReady: "not judged: host", never passed, never a failed check of the plugin), with both
measurements in its reason. An error Ray or the plugin raised while waiting is not a wait that
ran out: it reaches the caller unchanged.

Every function here takes the run's `MachineryRecord` (`machinery`): the measurements are the
run's (conformance.run.session.ConformanceRun.machinery, reached through a check's budget, the
run's contexts or the preflight), never this module's, so a fresh sample taken in one run stretches
only that run's bounds.
"""
from __future__ import annotations

import time
from typing import TYPE_CHECKING, Any, Callable, TypeVar

from conformance.timing.clock import Clock
from conformance.timing.host_load import MAX_FACTOR, NOMINAL_S, HostNotReady, MachineryRecord
from conformance.timing.owned import RAY_NOMINAL_S, RESAMPLE_S, Wait, record
from conformance.timing.timeouts import granted, stretch_assumed
from conformance.timing.waits import BoundRanOut, bounded_get

if TYPE_CHECKING:
    from conformance.timing.waits import Refs


T = TypeVar("T")
# knob: the hang guard of a new actor's first answer (a worker process that imports torch), before
# the run's stretch: the RDT endpoints, the collective members and the probes all start under it
ACTOR_START_S = RAY_NOMINAL_S["ACTOR_START_S"]   # 120 s: one named value verify holds such waits to
# knob: how often await_births reads Ray's actor table (one GCS call)
BIRTH_POLL_S = 0.5


def _noop() -> None:
    return None


def measure_worker_start(timeout_s: float, *, machinery: MachineryRecord) -> float | None:
    """Time one fresh worker (max_calls=1, nothing of the plugin) from submission to its result,
    and note it in the run's `machinery` record as a worker-start measurement
    (conformance.timing.host_load): the bounds that wait on Ray's machinery stretch by how slow this
    host starts workers. None: it did not finish within `timeout_s` (noted as that long)."""
    import ray

    t0 = time.monotonic()
    try:
        ray.get(ray.remote(max_calls=1)(_noop).options(num_cpus=0, max_retries=0).remote(), timeout=timeout_s)
    except Exception:  # noqa: BLE001 - a measurement; a worker that cannot start is the probe's to report
        machinery.note("worker_start", timeout_s)
        return None
    took = time.monotonic() - t0
    machinery.note("worker_start", took)
    return took


# knob: the longest description of what Ray did not do that a host's reason quotes: the measurements
# after it (the grant, the fresh sample) must fit the reason's line whole, since verify reads them
# back out of it (conformance.signing.host_verdict)
WHAT_CHARS = 240


def shortened(what: str, limit: int = WHAT_CHARS) -> str:
    """`what` on one line, cut to `limit` characters (an ellipsis ends a cut one) (pure)."""
    line = " ".join(what.split())
    return line if len(line) <= limit else line[:limit - 1] + "…"


def host_reason(what: str, waited_s: float, bound_s: float, factor: float, fresh_s: float | None,
                resample_s: float = RESAMPLE_S, *, slowest: float | None = None) -> str:
    """The reason of a host's failure: what Ray did not do, how long the run waited and why that
    long (`slowest`: the slowest worker start the run measured), and the fresh sample (pure)."""
    fresh = (f"a bare worker took {fresh_s:.1f}s to start just now" if fresh_s is not None
             else f"a bare worker did not start within {resample_s:.0f}s just now")
    return (f"{shortened(what)}: Ray's machinery did not do it within {waited_s:.0f}s (the {bound_s:g}s bound stretched "
            f"x{factor:.1f} by this run's measured worker start"
            + (f", slowest {slowest:.1f}s" if slowest is not None else "") + f"); {fresh}; "
            "the host was too slow for Ray, the plugin was not judged")


def await_machinery(wait: Callable[[float], T], bound_s: float, what: str, kind: str = "worker_start", *,
                    machinery: MachineryRecord, runs_plugin_code: bool = False, param: str | None = None,
                    finding: Callable[[], BaseException | None] | None = None) -> T:
    """`wait(limit)`'s value, waiting at most `bound_s` stretched by the run's factor for `kind`
    (what its `machinery` record measured); `wait` raises BoundRanOut when its limit runs out. At
    the bound: a fresh worker-start sample, the difference waited when it says the host is slower
    now, then HostNotReady.

    `runs_plugin_code`: what is awaited also runs the plugin's code (the preflight's probe imports
    it and calls the manager); when the fresh sample says the host is no slower than the bound
    assumed, the host did its part and the BoundRanOut reaches the caller (the plugin's to answer).
    The enclosing hard timeout (sized with the factor the check started with) is moved on by what
    this wait takes beyond that (conformance.timing.timeouts.granted): a stretch granted here is
    judged here, never cut as a hang. The wait is recorded in the running check's budget
    (conformance.timing.owned: owner "ray"; `param`: the checklist param its bound comes from).

    `finding`: asked once the wait has ended without what it waited for, before anyone is blamed:
    what Ray reports that makes the end no host's (an actor still alive holding the units a
    release waits for: a leak). What it returns is raised instead, the wait recorded as ran out."""
    factor = machinery.bound_factor(kind)
    entry = Wait("ray", what, float(bound_s), float(bound_s) * factor, None, "met", param, factor)
    t0 = time.monotonic()
    try:
        with granted(bound_s * MAX_FACTOR + RESAMPLE_S, assumed_s=bound_s * stretch_assumed()):
            try:
                return wait(bound_s * factor)
            except BoundRanOut as exc:
                ran_out = exc
            fresh = measure_worker_start(RESAMPLE_S, machinery=machinery)
            now = machinery.bound_factor(kind)
            more = bound_s * now - (time.monotonic() - t0)
            slower = now > factor and more > 0
            if slower:
                entry.granted_s, entry.factor = float(bound_s) * now, now
                try:
                    return wait(more)
                except BoundRanOut as exc:
                    ran_out = exc
            found = finding() if finding is not None else None
            if found is not None:
                entry.verdict = "ran out"
                raise found from ran_out
            if runs_plugin_code and not slower:
                entry.verdict = "ran out"
                raise ran_out
            entry.verdict = "host"
            raise HostNotReady(host_reason(what, time.monotonic() - t0, bound_s, max(now, factor), fresh,
                                           slowest=machinery.slowest_s.get("worker_start")))
    except (BoundRanOut, HostNotReady):
        raise
    except BaseException:
        if entry.verdict == "met":   # not the finding raised above
            entry.verdict = "error"
        raise
    finally:
        entry.took_s = time.monotonic() - t0
        record(entry)


def await_actors(refs: Refs, bound_s: float, what: str, *, machinery: MachineryRecord, param: str | None = None,
                 runs_plugin_code: bool = False) -> Any:
    """The first answers of new actors (their `info`/`ready` refs): await_machinery over a sliced,
    interruptible ray.get. An actor whose constructor raised reaches the caller as Ray's error.
    `runs_plugin_code`: the answer awaited also runs the plugin's code (a holder's `state` reads its
    devices through the vendor's manager): a host that did its part leaves the end to the plugin."""
    return await_machinery(lambda limit: bounded_get(refs, limit, what), bound_s, what, machinery=machinery, param=param,
                           runs_plugin_code=runs_plugin_code)


def await_births(starting: Callable[[], list[str]], what: str, *, machinery: MachineryRecord) -> float:
    """Wait until Ray has started the actors a plugin's call asked for (`starting()`: what is still
    starting, empty when nothing is), as Ray's machinery: ACTOR_START_S stretched by the run's
    measurement, a fresh sample before blaming (await_machinery). Their constructors are the
    plugin's code, so when the fresh sample says the host was no slower than the bound assumed,
    BoundRanOut reaches the caller (the plugin's to answer); else HostNotReady. The seconds it took
    (the caller leaves them out of the plugin's own bound)."""
    t0 = time.monotonic()

    def wait(limit: float) -> None:
        deadline = time.monotonic() + limit
        while True:
            left = starting()
            if not left:
                return
            if time.monotonic() >= deadline:
                raise BoundRanOut(f"{what}: {', '.join(left[:3])} still starting after {limit:.0f}s")
            time.sleep(BIRTH_POLL_S)

    await_machinery(wait, ACTOR_START_S, what, machinery=machinery, runs_plugin_code=True)
    return time.monotonic() - t0


def clock_ready(clock: Clock, bound_s: float, machinery: MachineryRecord, *,
                runs_plugin_code: bool = False) -> Callable[[Any, str], Any]:
    """A `ready` for conformance.rdt.pool.start_endpoints inside a scenario: the actors' first
    answers awaited as Ray's machinery (await_actors, `bound_s`, the run's `machinery` record), the
    time it took left out of the scenario's own bound (a slow start is the host's, judged here, not
    the plugin's; `runs_plugin_code`: what is awaited also runs the plugin's code, await_actors)."""
    def ready(refs: Refs, what: str) -> Any:
        with clock.left_out():
            return await_actors(refs, bound_s, what, machinery=machinery, runs_plugin_code=runs_plugin_code)
    return ready


def _fresh_look(bound_s: float, factor_used: float, what: str, kind: str,
                machinery: MachineryRecord) -> tuple[float | None, float]:
    """A fresh worker-start sample and the factor for `kind` it makes now. HostNotReady when the host
    is past what any bound here stretches to: a bound already at the widest stretch cannot grow
    with the host, and a fresh sample that is itself at least that slow says the host, not the
    plugin, is past it (a CPU hog above the suite's priority: 100 of 100 transfers "never produced"
    in 360 s, make test-load)."""
    with granted(RESAMPLE_S):
        fresh = measure_worker_start(RESAMPLE_S, machinery=machinery)
    beyond = (RESAMPLE_S if fresh is None else fresh) / NOMINAL_S["worker_start"]
    if factor_used >= MAX_FACTOR and beyond >= MAX_FACTOR:
        raise HostNotReady(host_reason(what, bound_s * factor_used, bound_s, factor_used, fresh,
                                       slowest=machinery.slowest_s.get("worker_start"))
                           + f" (the fresh sample is x{beyond:.1f} a nominal worker start, past the "
                           f"x{MAX_FACTOR:g} any bound stretches to)")
    return fresh, machinery.bound_factor(kind)


def more_time(bound_s: float, factor_used: float, waited_s: float, what: str, kind: str = "worker_start", *,
              machinery: MachineryRecord) -> float:
    """Call when a wait that Ray's machinery is part of (a wave of transfers on fresh workers) ran
    out of `bound_s` stretched by `factor_used`, after `waited_s`, and can go on: the seconds it may
    still take when a fresh sample says the host is slower now than the bound assumed (the bound
    stretched by the factor now, less what was waited); 0 when the bound fitted the host, and the
    check judges the plugin. The caller waits it (inside `granted`, its scenario's clock told), so
    a host that got loaded meanwhile costs time, never a verdict."""
    _, now = _fresh_look(bound_s, factor_used, what, kind, machinery)
    return max(0.0, bound_s * now - waited_s) if now > factor_used else 0.0


def before_blaming(bound_s: float, factor_used: float, what: str, kind: str = "worker_start", *,
                   machinery: MachineryRecord) -> None:
    """Call before a check blames the plugin for a bound stretched by `factor_used` that ran out
    while Ray's machinery was part of a wait that cannot go on (Ray's own fetch timeout ran out):
    a fresh worker-start sample; when it says the host is slower now than the bound assumed (the
    run got loaded after it was measured), HostNotReady. Else it returns, and the check judges."""
    fresh, now = _fresh_look(bound_s, factor_used, what, kind, machinery)
    if now > factor_used:
        raise HostNotReady(host_reason(what, bound_s * factor_used, bound_s, factor_used, fresh,
                                       slowest=machinery.slowest_s.get("worker_start"))
                           + f" (the fresh sample stretches the bound x{now:.1f} now)")
