"""The simulated device's runtime: device memory, streams and events (what OpenReg's runtime models).

Device memory is not this process's memory. Each allocation is an anonymous memory file
(memfd) that is never mapped: bytes enter and leave it only through explicit copies
(`DeviceBuffer.read`/`write`, the copy engine), so host RSS does not see device memory, and a
leak of it shows only in the device's own accounting (`Allocator`: allocated, peak, capacity
per device index, read as torch.cuda names them by the device module).

Work is asynchronous. Every kernel and copy the tensor layer enqueues goes on a `Stream`; it
runs when something waits for it: `Stream.synchronize`, `Event.synchronize`, a stream that
waits on an event and then runs, or a host read of a tensor (a blocking device-to-host copy is
stream-ordered). Until then device memory holds what it held before: a reader that skips the
synchronization (a transport reading a buffer by its address, as RDMA does) gets stale bytes,
as on a GPU. Execution is lazy rather than on a thread, so a missing synchronization is caught
every time, never by luck of timing. A device does finish its work without being asked, though:
when a stream holds more than MAX_PENDING works or MAX_PENDING_BYTES of staged host data, it
runs everything but the newest work (so work nobody waits for, e.g. a received tensor a consumer
never reads, cannot pile up).

Accounting is per process (as torch.cuda.memory_allocated is); `mem_get_info` reports this
process's view of the device's capacity (SIMACC_MEMORY_BYTES, default 16 GiB).
"""
from __future__ import annotations

import os
import threading
import weakref
from collections import deque
from typing import Callable

CAPACITY_ENV_VAR = "SIMACC_MEMORY_BYTES"
DEFAULT_CAPACITY = 16 * 1024 ** 3
MAX_PENDING = 64                     # knob: works a stream holds before it catches up
MAX_PENDING_BYTES = 16 * 1024 ** 2   # knob: staged host bytes a stream holds before it catches up


class DeviceOutOfMemory(RuntimeError):
    """An allocation above the device's free memory."""


class Allocator:
    """Per-device-index accounting of live allocations (bytes in use, peak, capacity)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self.allocated: dict[int, int] = {}
        self.peak: dict[int, int] = {}

    @staticmethod
    def capacity() -> int:
        return int(os.environ.get(CAPACITY_ENV_VAR, DEFAULT_CAPACITY))

    def take(self, index: int, nbytes: int) -> None:
        with self._lock:
            used = self.allocated.get(index, 0) + nbytes
            if used > self.capacity():
                raise DeviceOutOfMemory(f"simacc:{index}: out of memory allocating {nbytes} bytes "
                                        f"({self.allocated.get(index, 0)} of {self.capacity()} in use)")
            self.allocated[index] = used
            self.peak[index] = max(self.peak.get(index, 0), used)

    def give(self, index: int, nbytes: int) -> None:
        with self._lock:
            self.allocated[index] = self.allocated.get(index, 0) - nbytes

    def reset_peak(self, index: int) -> None:
        with self._lock:
            self.peak[index] = self.allocated.get(index, 0)


ALLOCATOR = Allocator()


def _release(fd: int, index: int, nbytes: int) -> None:
    os.close(fd)
    ALLOCATOR.give(index, nbytes)


class DeviceBuffer:
    """One allocation on one device index: nbytes of device memory, zero-filled when made."""

    def __init__(self, index: int, nbytes: int) -> None:
        ALLOCATOR.take(index, nbytes)
        self.index, self.nbytes = index, nbytes
        self._fd = os.memfd_create(f"simacc{index}", os.MFD_CLOEXEC)
        os.ftruncate(self._fd, nbytes)
        self._finalizer = weakref.finalize(self, _release, self._fd, index, nbytes)

    def read(self, offset: int = 0, nbytes: int | None = None) -> bytearray:
        """Copy device bytes to the host, as they are now (no stream is waited for)."""
        n = self.nbytes - offset if nbytes is None else nbytes
        out = bytearray(n)
        got = os.preadv(self._fd, [out], offset) if n else 0
        if got != n:
            raise OSError(f"simacc:{self.index}: short device read ({got} of {n} bytes)")
        return out

    def write(self, data: bytes | bytearray | memoryview, offset: int = 0) -> None:
        """Copy host bytes into device memory now (no stream is waited for)."""
        view = memoryview(data).cast("B")
        if offset + len(view) > self.nbytes:
            raise ValueError(f"simacc:{self.index}: write of {len(view)} bytes at {offset} past the end ({self.nbytes})")
        done = 0
        while done < len(view):
            done += os.pwrite(self._fd, view[done:], offset + done)


class Stream:
    """An in-order queue of device work; it runs when something waits for it."""

    def __init__(self, index: int) -> None:
        self.index = index
        self._queue: deque[tuple[int, Callable[[], None], int]] = deque()
        self._enqueued = 0      # sequence number of the last enqueued work
        self._completed = 0     # sequence number of the last work that ran
        self._staged = 0        # host bytes the queued works hold
        self._lock = threading.RLock()

    def enqueue(self, work: Callable[[], None], staged_bytes: int = 0) -> int:
        with self._lock:
            self._enqueued += 1
            self._queue.append((self._enqueued, work, staged_bytes))
            self._staged += staged_bytes
            if len(self._queue) > MAX_PENDING or self._staged > MAX_PENDING_BYTES:
                self.run_until(self._enqueued - 1)      # the device catches up, the newest stays queued
            return self._enqueued

    def run_until(self, seq: int) -> None:
        """Run queued work up to and including sequence number `seq`."""
        with self._lock:
            while self._queue and self._queue[0][0] <= seq:
                n, work, staged = self._queue.popleft()
                self._staged -= staged
                work()
                self._completed = n

    def synchronize(self) -> None:
        with self._lock:
            self.run_until(self._enqueued)

    def query(self) -> bool:
        """True when every enqueued work has run (as torch.cuda.Stream.query)."""
        return not self._queue

    @property
    def last(self) -> int:
        return self._enqueued

    def wait_event(self, event: "Event") -> None:
        """Later work on this stream runs only after the event's work (stream-ordered)."""
        recorded = event.recorded
        if recorded is not None:
            stream, seq = recorded
            if stream is not self:
                self.enqueue(lambda: stream.run_until(seq))

    def wait_stream(self, other: "Stream") -> None:
        event = Event()
        event.record(other)
        self.wait_event(event)


class Event:
    """A point in a stream's work (torch.Event's record / synchronize / query / wait)."""

    def __init__(self) -> None:
        self.recorded: tuple[Stream, int] | None = None

    def record(self, stream: Stream) -> None:
        self.recorded = (stream, stream.last)

    def synchronize(self) -> None:
        if self.recorded is not None:
            stream, seq = self.recorded
            stream.run_until(seq)

    def query(self) -> bool:
        if self.recorded is None:
            return True
        stream, seq = self.recorded
        return stream._completed >= seq

    def wait(self, stream: Stream) -> None:
        stream.wait_event(self)


_streams: dict[int, Stream] = {}
_streams_lock = threading.Lock()


def default_stream(index: int) -> Stream:
    with _streams_lock:
        if index not in _streams:
            _streams[index] = Stream(index)
        return _streams[index]


def synchronize_all() -> None:
    for stream in list(_streams.values()):
        stream.synchronize()
