"""Hard timeouts for checks: a hang becomes a failure with a reason, never a stuck run.

First line: SIGALRM raises CheckTimeout in the main thread (Ray's blocking calls poll for
signals, so this interrupts `ray.get` and plugin code alike). Backstop: if the check still has
not returned `grace_s` after that, a watchdog thread calls `on_stuck` (which writes the report)
and ends the process, because nothing else can make an uninterruptible hang finish.

A check's timeout is sized when it starts, stretched by what the run had measured of Ray's
machinery then. A wait on that machinery may be granted more time later (a fresh sample says the
host got slower: conformance.run.machinery); `granted` moves every armed deadline (and its
watchdog) on by what such a wait took beyond what the timeout assumed, so the hard timeout never
cuts a stretch the host was granted: its failure is then judged as the host's, not as a hang.
"""
from __future__ import annotations

import signal
import threading
import time
from contextlib import contextmanager
from dataclasses import dataclass
from types import FrameType
from typing import Callable, Iterator


class CheckTimeout(Exception):
    """Raised inside a check that ran past its hard timeout."""


@dataclass
class _Deadline:
    """One armed hard timeout: when it runs out (monotonic), and the factor its size was stretched
    by (the machinery factor the caller sized it with)."""
    at: float
    stretched_by: float = 1.0


_ARMED: list[_Deadline] = []   # the main thread's armed hard timeouts, outermost first


def _rearm() -> None:
    """Point SIGALRM at the nearest armed deadline."""
    if _ARMED:
        signal.setitimer(signal.ITIMER_REAL, max(min(d.at for d in _ARMED) - time.monotonic(), 0.001))


def stretch_assumed() -> float:
    """The machinery factor the innermost armed hard timeout was sized with (1.0: none armed)."""
    return _ARMED[-1].stretched_by if _ARMED and threading.current_thread() is threading.main_thread() else 1.0


@contextmanager
def granted(seconds: float, assumed_s: float = 0.0) -> Iterator[None]:
    """A wait on Ray's machinery that may be granted more than its check's hard timeout assumed:
    the block may take `assumed_s` within the armed deadlines as they are; what it takes beyond
    that, up to `seconds`, moves every armed deadline (and its watchdog) on. The deadlines move
    by `seconds` while the block runs (so no timer cuts the grant) and back by what it did not use."""
    if seconds <= 0 or not _ARMED or threading.current_thread() is not threading.main_thread():
        yield
        return
    armed = list(_ARMED)
    t0 = time.monotonic()
    for d in armed:
        d.at += seconds
    _rearm()
    try:
        yield
    finally:
        used = min(seconds, max(0.0, time.monotonic() - t0 - assumed_s))
        for d in armed:
            d.at -= seconds - used
        _rearm()


@contextmanager
def hard_timeout(seconds: float, label: str, *, on_stuck: Callable[[str], None] | None = None,
                 grace_s: float = 75.0, stretched_by: float = 1.0) -> Iterator[None]:
    """Raise CheckTimeout in the block after `seconds` (plus what `granted` adds meanwhile).
    Nests: inside another hard timeout (a bounded vendor call within a check's setup) the one that
    runs out first raises its own, and the enclosing one keeps its deadline afterwards.
    `stretched_by`: the machinery factor `seconds` was stretched by (stretch_assumed)."""
    if seconds <= 0 or threading.current_thread() is not threading.main_thread():
        yield
        return
    started = time.monotonic()
    done = threading.Event()
    mine = _Deadline(started + seconds, stretched_by)
    previous = signal.getsignal(signal.SIGALRM)

    def on_alarm(signum: int, frame: FrameType | None) -> None:
        now = time.monotonic()
        if mine.at > now + 0.001:
            if mine is not _ARMED[0] and callable(previous):
                previous(signum, frame)   # an enclosing timeout ran out first: it raises its own
                return
            _rearm()                      # a grant moved this deadline on meanwhile
            return
        extra = mine.at - started - seconds
        raise CheckTimeout(f"{label}: no result within the hard timeout of {seconds:.0f}s"
                           + (f" (+{extra:.1f}s granted to waits on Ray's machinery)" if extra >= 0.05 else "")
                           + f" (elapsed {now - started:.1f}s); treated as a hang")

    def watchdog() -> None:
        while not done.wait(max(mine.at + grace_s - time.monotonic(), 0.0) + 0.01):
            if time.monotonic() >= mine.at + grace_s:
                if on_stuck is not None:
                    on_stuck(f"{label}: hung for {time.monotonic() - started:.0f}s and could not be interrupted")
                return

    _ARMED.append(mine)
    signal.signal(signal.SIGALRM, on_alarm)
    _rearm()
    thread = threading.Thread(target=watchdog, name="conformance-watchdog", daemon=True)
    thread.start()
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)
        _ARMED.remove(mine)
        done.set()
        _rearm()   # the enclosing timeout goes on (at once if it ran out meanwhile)


def time_left() -> float | None:
    """Seconds until the enclosing hard timeout runs out (None outside one, or off the main
    thread, where none is armed). A check with several independent parts asks it before a part
    that may use its whole bound: a part it cannot finish is reported as not tried, and what the
    earlier parts found is kept, instead of all of it ending as one hang."""
    if threading.current_thread() is not threading.main_thread():
        return None
    left = signal.getitimer(signal.ITIMER_REAL)[0]
    return left if left > 0 else None
