"""A reading of what this run's processes hold, taken each time the suite kills an actor.

The "left on the host" line counts a /dev/shm segment (or a file) as this run's only when one of
the run's processes was seen holding it (conformance.cluster.process_owners.ShmWitness); the run
sampled at each check's end, after the scenarios had killed their actors. A source killed
before its transport freed its segment (TR-015..TR-019's sources, FR-012's, the pools' endpoints
at their end) left a segment no reading had seen held, and the run called it "creator unknown":
it disowned what its own scenarios left. Linux keeps no record of a segment's creator, so the
reading must come while the creator lives: just before the suite kills it. Every kill the suite
makes goes through `ray.kill` in the driver; `BeforeKill` runs the reading first (and, as Ray
may kill the peer of a killed actor itself, the reading covers every process of the run, not
only the one killed).

Like conformance.report.ray_logs.DriverNoise, it wraps a function of Ray's in this process while
the run lasts; a reading that fails costs only attribution, never the kill.
"""
from __future__ import annotations

import time
from typing import TYPE_CHECKING, Any, Callable, Protocol, cast

if TYPE_CHECKING:
    from ray.actor import ActorHandle


class _Killing(Protocol):
    """A module with Ray's `kill` (the `ray` module; a test's stand-in)."""

    kill: Callable[..., Any]


# A loop that kills a pool's actors one after another needs one reading, not one per actor: the
# first saw every process the loop then kills.
READING_INTERVAL_S = 0.2   # knob: readings closer together than this are skipped


class BeforeKill:
    """Calls `before()` each time this process calls `ray.kill` (at most once per `interval_s`),
    then kills as Ray would."""

    def __init__(self, before: Callable[[], None], interval_s: float = READING_INTERVAL_S,
                 clock: Callable[[], float] = time.monotonic) -> None:
        self.before = before
        self.interval_s = interval_s
        self.clock = clock
        self.count = 0          # readings taken
        self._last: float | None = None
        self._module: _Killing | None = None
        self._original: Callable[..., Any] | None = None

    def install(self, module: _Killing | None = None) -> None:
        """Wrap `module.kill` (default: the `ray` module); idempotent."""
        if self._original is not None:
            return
        target: _Killing
        if module is None:
            import ray

            target = cast(_Killing, ray)   # the module as the protocol: mypy narrows to it, which has no settable kill
        else:
            target = module
        original = target.kill
        self._module, self._original = target, original

        def kill(actor: ActorHandle[Any], *args: Any, **kwargs: Any) -> Any:  # ray.kill's own arguments, passed on
            now = self.clock()
            if self._last is None or now - self._last >= self.interval_s:
                self._last = now
                try:
                    self.before()
                    self.count += 1
                except Exception:  # noqa: BLE001 - a reading that fails loses attribution, never the kill
                    pass
            return original(actor, *args, **kwargs)

        kill.__wrapped__ = original    # type: ignore[attr-defined]  # what functools.wraps sets: inspect.unwrap reads it
        kill.__doc__ = original.__doc__
        target.kill = kill

    def uninstall(self) -> None:
        if self._original is not None:
            assert self._module is not None  # installed together with _original
            self._module.kill = self._original
            self._module, self._original = None, None
