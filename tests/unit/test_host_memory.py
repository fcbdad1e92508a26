"""The host memory a process holds (conformance.host_memory): anonymous memory plus shared memory
outside Ray's object store. Pure parsing of /proc texts, and this process's own /dev/shm segment."""
from __future__ import annotations

import os
import uuid
from multiprocessing import shared_memory

from conformance import host_memory

MiB = 1 << 20
STATUS = "Name:\tpython\nVmRSS:\t  200000 kB\nRssAnon:\t   50000 kB\nRssFile:\t   20000 kB\nRssShmem:\t  130000 kB\n"
SMAPS = """\
7f0000000000-7f0008000000 rw-s 00000000 00:1a 123 /dev/shm/plasmaEYdbQ4 (deleted)
Size:             131072 kB
Rss:               81920 kB
Pss:               81920 kB
7f1000000000-7f1003000000 rw-s 00000000 00:1a 124 /dev/shm/vendor-staging-7
Size:              49152 kB
Rss:               48080 kB
7f2000000000-7f2000100000 rw-p 00000000 00:00 0
Rss:                1024 kB
7f3000000000-7f3000100000 r-xp 00000000 08:01 99 /usr/lib/libc.so.6
Rss:                 900 kB
"""


def test_pages_of_rays_object_store_are_not_held_other_shared_memory_is() -> None:
    mem = host_memory.held(STATUS, SMAPS)
    assert mem.object_store == 81920 * 1024                      # the plasma mapping only
    assert mem.held == (50000 + 130000 - 81920) * 1024            # anon + the vendor's segment
    assert mem.as_dict()["held"] == mem.held


def test_a_zero_copy_read_that_grows_the_resident_total_does_not_grow_what_is_held() -> None:
    """One 40 MiB object read through Ray's store: the resident total (statm) grows by the payload,
    what the process holds does not (the false alarm CC-008 had)."""
    before = host_memory.held(STATUS, SMAPS)
    status = STATUS.replace("130000", str(130000 + 40960))
    smaps = SMAPS.replace("Rss:               81920 kB", f"Rss:               {81920 + 40960} kB")
    after = host_memory.held(status, smaps)
    assert after.shmem - before.shmem == 40 * MiB and after.held == before.held


def test_the_object_store_is_recognised_by_rays_file_names_only() -> None:
    assert host_memory.is_object_store_mapping("/dev/shm/plasmaAbC123 (deleted)")
    assert host_memory.is_object_store_mapping("/tmp/ray/session_x/plasma-fallback-1")
    assert not host_memory.is_object_store_mapping("/dev/shm/simxfer-12-abc")
    assert not host_memory.is_object_store_mapping("/dev/shm/vendor/plasma/buf")   # a vendor's folder named so


def test_a_status_without_the_split_fields_is_an_error() -> None:
    try:
        host_memory.held("VmRSS:\t1 kB\n", "")
    except ValueError as exc:
        assert "RssAnon" in str(exc)
    else:
        raise AssertionError("no error")


def test_a_segment_this_process_maps_and_writes_is_held() -> None:
    before = host_memory.read_held()
    seg = shared_memory.SharedMemory(name=f"rc-held-{os.getpid()}-{uuid.uuid4().hex[:6]}", create=True, size=8 * MiB)
    try:
        seg.buf[:] = b"z" * len(seg.buf)
        after = host_memory.read_held()
        assert after.held - before.held >= 7 * MiB and after.object_store == before.object_store
    finally:
        seg.close()
        seg.unlink()
