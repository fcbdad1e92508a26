"""Bounded waits on Ray that stay interruptible by the suite's hard timeout.

A Python signal handler raised inside Ray's C++ `get` does not end the wait: Ray keeps waiting
until its own timeout and then reports "SystemError: ... returned a result with an exception
set". Waiting in short slices returns control to Python often, so the hard timeout (SIGALRM)
interrupts a hang within about a second, and a mangled SystemError is turned back into the
CheckTimeout it carries.
"""
from __future__ import annotations

import sys
import threading
import time
from typing import TYPE_CHECKING, Any, Callable, Sequence, TypeVar, Union

from conformance.timing.timeouts import CheckTimeout

if TYPE_CHECKING:
    from typing import TypeAlias

    from ray import ObjectRef

    # What ray.get and ray.wait take: one object ref or a list of them.
    Refs: TypeAlias = Union["ObjectRef[Any]", Sequence["ObjectRef[Any]"]]

SLICE_S = 0.5
# knob: polling interval of Ray's state API in a `polled` wait (a node registering, devices freed), not a bound
STATE_POLL_S = 0.2
T = TypeVar("T")


def carried_timeout(exc: BaseException) -> CheckTimeout | None:
    """The hard timeout behind `exc`, also when Ray's compiled code re-raised it as another error."""
    seen: BaseException | None = exc
    while seen is not None:
        if isinstance(seen, CheckTimeout):
            return seen
        seen = seen.__cause__ or seen.__context__
    return None


class BoundRanOut(TimeoutError):
    """The suite's own bound on a wait ran out (never one of Ray's timeouts, which Ray raises as
    its errors: conformance.run.machinery tells the two apart by this class)."""


def bounded_get(refs: Refs, timeout_s: float, what: str = "result") -> Any:
    """ray.get with a total bound, in slices; raises BoundRanOut (a TimeoutError) naming `what`
    when it runs out."""
    import ray
    from ray.exceptions import GetTimeoutError

    deadline = time.monotonic() + timeout_s
    while True:
        remaining = deadline - time.monotonic()
        if remaining <= 0:
            raise BoundRanOut(f"no {what} within {timeout_s:.0f}s")
        try:
            return ray.get(refs, timeout=min(SLICE_S, remaining))
        except GetTimeoutError:
            continue
        except SystemError as exc:
            carried = carried_timeout(exc)
            if carried is not None:
                raise carried from None
            raise


def polled(probe: Callable[[], T | None], what: str, *, begin: Callable[[], object] | None = None,
           explain: Callable[[], str] | None = None, poll_s: float = STATE_POLL_S) -> Callable[[float], T]:
    """A `wait(limit)` for a wait on Ray's machinery (conformance.run.budget.Budget.ray): `probe()`'s
    first truthy value, polled until `limit` runs out, then BoundRanOut naming `what` (and what
    `explain()` last saw).

    `begin` is what sets Ray's machinery going (a node started again): it runs on the first call
    only, inside that call's limit. The budget calls `wait` a second time when a fresh sample says
    the host got slower, and that call only waits longer: a node is never started twice for one wait."""
    pending = [begin] if begin is not None else []

    def wait(limit_s: float) -> T:
        deadline = time.monotonic() + limit_s
        while pending:
            pending.pop()()
        while True:
            got = probe()
            if got:
                return got
            if time.monotonic() >= deadline:
                seen = f"; last seen: {explain()}" if explain is not None else ""
                raise BoundRanOut(f"{what}: not within {limit_s:.0f}s{seen}")
            time.sleep(min(poll_s, max(deadline - time.monotonic(), 0.01)))

    return wait


class StillRunning(Exception):
    """A call on its own thread did not return within its bound; the thread is left running."""

    def __init__(self, what: str, bound_s: float, where: str) -> None:
        super().__init__(f"{what}: did not return within {bound_s:.0f}s" + (f" (stuck in {where})" if where else ""))
        self.what, self.bound_s, self.where = what, bound_s, where


def stuck_at(thread: threading.Thread, frames: int = 3) -> str:
    """Where a thread is now: its innermost Python frames, innermost first ("" if none)."""
    frame = sys._current_frames().get(thread.ident or -1)
    out: list[str] = []
    while frame is not None and len(out) < frames:
        out.append(f"{frame.f_code.co_filename.rsplit('/', 1)[-1]}:{frame.f_lineno} {frame.f_code.co_name}")
        frame = frame.f_back
    return " < ".join(out)


def call_on_thread(fn: Callable[[], Any], bound_s: float, what: str) -> Any:
    """`fn()` on a daemon thread, waited for at most `bound_s`; its value, or its own exception.

    For calls no signal can cut: a wait inside Ray's C++ code (a group call's unbounded ray.get)
    or on a lock (a deadlocked ray.shutdown). The caller's thread joins in short slices, so an
    enclosing hard timeout still lands; when the bound runs out, StillRunning says where the
    thread is stuck, and the thread is left to its fate (a daemon: it does not hold up the exit)."""
    result: dict[str, Any] = {}

    def target() -> None:
        try:
            result["value"] = fn()
        except BaseException as exc:  # noqa: BLE001 - handed back to the caller's thread
            result["error"] = exc

    worker = threading.Thread(target=target, name=what, daemon=True)
    worker.start()
    deadline = time.monotonic() + bound_s
    while worker.is_alive() and time.monotonic() < deadline:
        worker.join(min(SLICE_S, max(deadline - time.monotonic(), 0.01)))
    if worker.is_alive():
        raise StillRunning(what, bound_s, stuck_at(worker))
    if "error" in result:
        raise result["error"]
    return result.get("value")


NO_RESULT = "no result"


def finished_results(pending: dict[str, Any], timeout_s: float) -> dict[str, Any]:
    """node id -> the result of its probe task, or an error string for a probe that failed, for
    the probes in `pending` that finish within `timeout_s`; those leave `pending` (the rest stay,
    running)."""
    import ray

    out: dict[str, Any] = {}
    deadline = time.monotonic() + timeout_s
    while pending and time.monotonic() < deadline:
        ready, _ = ray.wait(list(pending.values()), num_returns=len(pending),
                            timeout=max(0.0, min(SLICE_S, deadline - time.monotonic())))
        for node_id, ref in list(pending.items()):
            if ref in ready:
                try:
                    out[node_id] = ray.get(ref, timeout=5)  # knob: hang guard of one probe call
                except Exception as exc:  # noqa: BLE001 - the probe itself failed on that node
                    text = str(exc).strip()
                    out[node_id] = f"probe failed: {exc.__class__.__name__}: {text.splitlines()[-1][:200] if text else ''}"
                del pending[node_id]
    return out


def cancel_pending(pending: dict[str, Any], reason: str) -> dict[str, str]:
    """Cancel the probes still running; node id -> `reason` for each."""
    import ray

    for ref in pending.values():
        ray.cancel(ref, force=True)
    return {node_id: reason for node_id in pending}


def per_node_results(refs: dict[str, Any], timeout_s: float) -> dict[str, Any]:
    """node id -> the result of its probe task, or an error string for probes that failed or did
    not finish within the one shared bound (those are cancelled). Used by the topology area, which
    sends one probe per node (the preflight waits on its probe as Ray's machinery)."""
    pending = dict(refs)
    out = finished_results(pending, timeout_s)
    return out | cancel_pending(pending, f"{NO_RESULT} within {timeout_s:.0f}s")
