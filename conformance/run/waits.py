"""Bounded waits on Ray that stay interruptible by the suite's hard timeout.

A Python signal handler raised inside Ray's C++ `get` does not end the wait: Ray keeps waiting
until its own timeout and then reports "SystemError: ... returned a result with an exception
set". Waiting in short slices returns control to Python often, so the hard timeout (SIGALRM)
interrupts a hang within about a second, and a mangled SystemError is turned back into the
CheckTimeout it carries.
"""
from __future__ import annotations

import time
from typing import Any

from conformance.run.timeouts import CheckTimeout

SLICE_S = 0.5


def carried_timeout(exc: BaseException) -> CheckTimeout | None:
    """The hard timeout behind `exc`, also when Ray's compiled code re-raised it as another error."""
    seen = exc
    while seen is not None:
        if isinstance(seen, CheckTimeout):
            return seen
        seen = seen.__cause__ or seen.__context__  # type: ignore[assignment]
    return None


def bounded_get(refs: Any, timeout_s: float, what: str = "result") -> Any:
    """ray.get with a total bound, in slices; raises TimeoutError naming `what` when it runs out."""
    import ray
    from ray.exceptions import GetTimeoutError

    deadline = time.monotonic() + timeout_s
    while True:
        remaining = deadline - time.monotonic()
        if remaining <= 0:
            raise TimeoutError(f"no {what} within {timeout_s:.0f}s")
        try:
            return ray.get(refs, timeout=min(SLICE_S, remaining))
        except GetTimeoutError:
            continue
        except SystemError as exc:
            carried = carried_timeout(exc)
            if carried is not None:
                raise carried from None
            raise
