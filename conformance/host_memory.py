"""The host memory a process holds: what every "memory left behind" judgement reads (CC-008, TR-013).

A process's resident total (statm, VmRSS) counts every page it has touched in every mapping,
including Ray's object store: a worker maps the plasma store whole, and a zero-copy `ray.get`
of a large object touches that object's pages, which stay resident in the reader's total after
the object is released (measured, Ray 2.60: a correct collective backend returning 40 MiB
payloads through the object store grew by exactly one payload of RssShmem in some cycles,
RssAnon flat, depending on where plasma placed each object). Those pages belong to Ray's store,
which frees and reuses them; the reader holds nothing. So the memory a backend *holds* is

* its anonymous memory (RssAnon: heap, malloc'd and mmap'd buffers, torch's allocations), plus
* its resident shared memory outside Ray's object store (RssShmem minus the resident pages of
  plasma's mappings): segments it created or mapped in /dev/shm, memfds, SysV segments.

File-backed pages (RssFile: shared libraries, read-only mmaps of files) are left out: the
kernel drops them under pressure, and they do not grow with buffers kept per transfer or group.

Plasma's mappings are told apart by file name: Ray's store creates its backing files as
`plasmaXXXXXX` in the object store directory (/dev/shm by default, else /tmp; Ray 2.60
`plasma_allocator`/`dlmalloc`, fallback allocations `plasma-fallback…` under the spill folder)
and unlinks them at once, so a worker's /proc/<pid>/smaps shows them as
`/dev/shm/plasmaXXXXXX (deleted)`. Only Ray's own store is excluded: a vendor's segment of any
other name counts.

`held` is pure (it parses texts); `read_held` reads /proc for one process. Device memory is
another module's business (conformance/rdt/memory.device_used_bytes): this one is the host's.
"""
from __future__ import annotations

import os
from dataclasses import asdict, dataclass
from typing import Any

PLASMA_PREFIXES = ("plasma",)   # basenames of Ray's object-store backing files (see the docstring)


@dataclass(frozen=True)
class HostMemory:
    """One process's resident host memory by kind, in bytes."""

    anon: int           # RssAnon
    shmem: int          # RssShmem: every resident shared page, plasma's included
    file: int           # RssFile (not judged)
    object_store: int   # the resident pages of Ray's object-store mappings (part of shmem, or of file)

    @property
    def held(self) -> int:
        """Anonymous memory plus shared memory outside Ray's object store."""
        return self.anon + max(0, self.shmem - self.object_store)

    def as_dict(self) -> dict[str, int]:
        return asdict(self) | {"held": self.held}


def _kib_field(status: str, key: str) -> int | None:
    for line in status.splitlines():
        if line.startswith(key + ":"):
            return int(line.split()[1]) * 1024
    return None


def is_object_store_mapping(path: str) -> bool:
    """Whether a mapping's path (as /proc/<pid>/smaps writes it) is one of Ray's object-store files."""
    name = os.path.basename(path.removesuffix(" (deleted)").strip())
    return name.startswith(PLASMA_PREFIXES)


def object_store_resident(smaps: str) -> int:
    """Resident bytes of the object-store mappings in a /proc/<pid>/smaps text (pure)."""
    total, in_store = 0, False
    for line in smaps.splitlines():
        head = line.split(None, 5)
        if head and "-" in head[0] and len(head) >= 5 and ":" not in head[0]:   # a mapping's header line
            in_store = len(head) == 6 and is_object_store_mapping(head[5])
        elif in_store and line.startswith("Rss:"):
            total += int(line.split()[1]) * 1024
    return total


def held(status: str, smaps: str) -> HostMemory:
    """The host memory one process holds, from its /proc/<pid>/status and /proc/<pid>/smaps (pure)."""
    anon, shmem, file = (_kib_field(status, k) for k in ("RssAnon", "RssShmem", "RssFile"))
    if anon is None or shmem is None or file is None:
        raise ValueError("/proc/<pid>/status has no RssAnon/RssShmem/RssFile (Linux 4.5 or later has them)")
    return HostMemory(anon=anon, shmem=shmem, file=file, object_store=object_store_resident(smaps))


def read_held(pid: int | str = "self") -> HostMemory:
    """What process `pid` holds now (Linux: /proc)."""
    with open(f"/proc/{pid}/status") as f:
        status = f.read()
    with open(f"/proc/{pid}/smaps") as f:
        smaps = f.read()
    return held(status, smaps)


def release_free_memory() -> None:
    """Collect garbage and hand free heap pages back to the OS (glibc only; else a no-op): memory
    the allocator merely caches after temporary copies is not held by anyone."""
    import ctypes
    import gc

    gc.collect()
    try:
        ctypes.CDLL("libc.so.6").malloc_trim(0)
    except (OSError, AttributeError):
        pass


def snapshot() -> dict[str, Any]:
    """This process's host memory after releasing what the allocators merely cache."""
    release_free_memory()
    return read_held().as_dict()
