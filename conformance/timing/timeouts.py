"""Hard timeouts for checks: a hang becomes a failure with a reason, never a stuck run.

First line: SIGALRM raises CheckTimeout in the main thread (Ray's blocking calls poll for
signals, so this interrupts `ray.get` and plugin code alike). Backstop: if the check still has
not returned `grace_s` after that, a watchdog thread calls `on_stuck` (which writes the report)
and ends the process, because nothing else can make an uninterruptible hang finish.
"""
from __future__ import annotations

import signal
import threading
import time
from contextlib import contextmanager
from types import FrameType
from typing import Callable, Iterator


class CheckTimeout(Exception):
    """Raised inside a check that ran past its hard timeout."""


@contextmanager
def hard_timeout(seconds: float, label: str, *, on_stuck: Callable[[str], None] | None = None,
                 grace_s: float = 75.0) -> Iterator[None]:
    """Raise CheckTimeout in the block after `seconds`. Nests: inside another hard timeout (a
    bounded vendor call within a check's setup) the one that runs out first raises its own, and
    the enclosing one keeps its deadline afterwards."""
    if seconds <= 0 or threading.current_thread() is not threading.main_thread():
        yield
        return
    started = time.monotonic()
    done = threading.Event()
    outer_left = signal.getitimer(signal.ITIMER_REAL)[0]
    outer_deadline = started + outer_left if outer_left > 0 else None
    outer_first = outer_deadline is not None and outer_deadline < started + seconds
    previous = signal.getsignal(signal.SIGALRM)

    def on_alarm(signum: int, frame: FrameType | None) -> None:
        if outer_first and callable(previous):
            previous(signum, frame)   # the enclosing timeout ran out first: it raises its own
            return
        raise CheckTimeout(f"{label}: no result within the hard timeout of {seconds:.0f}s "
                           f"(elapsed {time.monotonic() - started:.1f}s); treated as a hang")

    def watchdog() -> None:
        if not done.wait(seconds + grace_s) and on_stuck is not None:
            on_stuck(f"{label}: hung for {time.monotonic() - started:.0f}s and could not be interrupted")

    signal.signal(signal.SIGALRM, on_alarm)
    signal.setitimer(signal.ITIMER_REAL, outer_left if outer_first else seconds)
    thread = threading.Thread(target=watchdog, name="conformance-watchdog", daemon=True)
    thread.start()
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)
        done.set()
        if outer_deadline is not None:   # the enclosing timeout goes on (at once if it ran out meanwhile)
            signal.setitimer(signal.ITIMER_REAL, max(outer_deadline - time.monotonic(), 0.001))


def time_left() -> float | None:
    """Seconds until the enclosing hard timeout runs out (None outside one, or off the main
    thread, where none is armed). A check with several independent parts asks it before a part
    that may use its whole bound: a part it cannot finish is reported as not tried, and what the
    earlier parts found is kept, instead of all of it ending as one hang."""
    if threading.current_thread() is not threading.main_thread():
        return None
    left = signal.getitimer(signal.ITIMER_REAL)[0]
    return left if left > 0 else None
