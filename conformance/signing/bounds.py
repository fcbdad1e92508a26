"""What one submission may cost `review`: its size and its time (tiers/review.yaml).

Why a child process: a bound kept by a signal in the reviewing process (SIGALRM) ends only Python
code between two bytecodes; a long call in C (a parser, a regular expression, a drawing library)
runs on past it, and a bound per phase (verify, then the page) let one submission cost twice the
bound. So each submission is reviewed in a forked worker (BoundedWorker) that the review ends at
the bound, its page drawn in what is left of the same bound, and a submission whose files are over
the size cap is not read at all. Either way it is one row that says so ("too large", "took too long"); every
other submission is still reviewed.
"""
from __future__ import annotations

import functools
import multiprocessing
import os
import pickle
import time
from dataclasses import dataclass
from multiprocessing.connection import Connection
from pathlib import Path
from typing import Any, Callable, Generic, TypeVar, cast

from conformance.catalog import datafiles
from conformance.errors import UserError
from conformance.signing import attestation as att

A = TypeVar("A")
T = TypeVar("T")
READ_FILES = (*att.REPORT_FILES, att.ENVELOPE_NAME, att.BUNDLE_NAME)  # what review reads of a submission
_GRACE_S = 2.0  # after the bound, how long a child that was told to end gets before it is killed


class SubmissionTimeout(Exception):
    """One submission took longer than its time bound."""


class SubmissionTooLarge(Exception):
    """One submission's files are over the size cap."""


@dataclass(frozen=True)
class ReviewBounds:
    max_bytes: int
    timeout_s: float


def bounds_path() -> Path:
    """tiers/review.yaml; the packaged one when an override folder (CONFORMANCE_DATA_DIR) lacks it."""
    path = datafiles.data_root() / "tiers" / "review.yaml"
    return path if path.exists() else datafiles.packaged_data_root() / "tiers" / "review.yaml"


@functools.lru_cache(maxsize=2)
def _bounds_at(path: str) -> ReviewBounds:
    doc = datafiles.read_yaml_or_json(Path(path), what="review bounds")
    datafiles.validate(doc, "review", what=f"review bounds ({Path(path).name})")
    return ReviewBounds(int(doc["submission"]["max_bytes"]), float(doc["submission"]["timeout_s"]))


def load_bounds() -> ReviewBounds:
    return _bounds_at(str(bounds_path()))


def too_large(folder: Path, max_bytes: int) -> str | None:
    """Why `folder` is over the size cap (its files review reads, together), or None. Sizes from
    lstat: nothing is read, and a symlink counts as itself (the reader refuses it anyway)."""
    sizes = {}
    for name in READ_FILES:
        try:
            sizes[name] = os.lstat(Path(folder) / name).st_size
        except OSError:
            continue
    total = sum(sizes.values())
    if total <= max_bytes:
        return None
    biggest = max(sizes, key=lambda n: sizes[n])
    return (f"too large: {total} bytes in its report files (the largest {biggest}, {sizes[biggest]} bytes), over "
            f"the cap of {max_bytes} bytes per submission (tiers/review.yaml); not read")


def took_too_long(timeout_s: float, what: str = "its review") -> str:
    return (f"took too long: {what} ran past the bound of {timeout_s:g} s per submission "
            f"(tiers/review.yaml submission.timeout_s, or --submission-timeout)")


def _answer(fn: Callable[[], Any]) -> tuple[str, Any]:
    """What the child sends back: ("ok", value), ("user", message) or ("error", 'Type: message')."""
    try:
        value = fn()
        pickle.dumps(value)
        return "ok", value
    except UserError as exc:
        return "user", str(exc)
    except BaseException as exc:  # noqa: BLE001 - whatever the child raises is its answer, never a hang
        return "error", f"{exc.__class__.__name__}: {exc}"[:500]


class BoundedWorker(Generic[A, T]):
    """Calls `fn(arg)` in a forked worker process, each call ended at its own time bound.

    One worker serves call after call, so what the first call loaded (modules, release data,
    parsed schemas) serves the next; a call over its bound ends the worker (terminate, then kill)
    and the next call forks a fresh one. `fn` and what it closes over are the parent's, inherited by
    fork; only `arg` and the answer cross the pipe (pickled). Where fork is not available, `fn`
    runs in this process, unbounded by time (its inputs are still capped). Use as a context manager."""

    def __init__(self, fn: Callable[[A], T]) -> None:
        self._fn = fn
        self._process: Any = None
        self._conn: Any = None

    def __enter__(self) -> BoundedWorker[A, T]:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _serve(self, conn: Connection, parents_end: Connection) -> None:
        # the fork copied the parent's end of the pipe too: closed here, so the parent closing its
        # own is this worker's EOF (else it waits for a call that never comes until terminated)
        parents_end.close()
        while True:
            try:
                arg = conn.recv()
            except (EOFError, OSError):
                return
            conn.send(_answer(functools.partial(self._fn, arg)))

    def _start(self) -> None:
        ctx = multiprocessing.get_context("fork")
        mine, theirs = ctx.Pipe()
        self._process = ctx.Process(target=self._serve, args=(theirs, mine), daemon=True)
        self._process.start()
        theirs.close()
        self._conn = mine

    def close(self) -> None:
        """End the worker (if any): its pipe closed, then terminate, then kill."""
        if self._conn is not None:
            self._conn.close()
        process, self._process, self._conn = self._process, None, None
        if process is None:
            return
        process.join(0.5)
        if process.is_alive():
            process.terminate()
            process.join(_GRACE_S)
        if process.is_alive():
            process.kill()
            process.join(_GRACE_S)

    def __call__(self, arg: A, timeout_s: float) -> T:
        """`fn(arg)` within `timeout_s` (SubmissionTimeout); a UserError in it is raised here as one,
        any other exception as RuntimeError with its type and message."""
        if "fork" not in multiprocessing.get_all_start_methods():
            return self._fn(arg)
        if self._process is None or not self._process.is_alive():
            self.close()
            self._start()
        deadline = time.monotonic() + timeout_s
        try:
            self._conn.send(arg)
            if not self._conn.poll(max(0.0, deadline - time.monotonic())):
                self.close()
                raise SubmissionTimeout(took_too_long(timeout_s))
            kind, value = self._conn.recv()
        except (EOFError, OSError, BrokenPipeError):
            code = self._process.exitcode if self._process is not None else None
            self.close()
            raise RuntimeError(f"the review process ended without an answer (exit code {code})") from None
        if kind == "user":
            raise UserError(value)
        if kind == "error":
            raise RuntimeError(value)
        return cast(T, value)   # what self._fn returned in the child, pickled back
