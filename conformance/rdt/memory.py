"""Memory probes for the leak check (TR-013).

The transport's own accounting cannot be trusted (a leaking transport usually does not know it
leaks), so the check looks at what the operating system and the device report:

* the host memory the source and destination actors hold (conformance.host_memory: anonymous
  memory plus shared memory outside Ray's object store): a buffer the transport keeps mapped or
  referenced shows here once its pages were written, while pages of Ray's object store a
  zero-copy read touched do not (they are Ray's, and its store reuses them);
* the cluster's shared memory on this node (conformance.cluster.process_owners): the /dev/shm segments
  the cluster's own processes hold open or mapped, plus those nobody holds (a segment unmapped
  but never unlinked shows only there). Segments another job's processes hold, or another user
  owns, are not the cluster's and never count: the host's Shmem total is not read, since other
  jobs' object stores and segments move it by tens of MiB a round;
* device memory in use (torch.<device>.memory_allocated, else mem_get_info, when the device module
  has them: conformance.rdt.device.used_bytes): what a device transport leaks (registered or
  staging buffers), which host RSS does not see.

An unheld segment's creator is unknown, so the check looks for growth that repeats in every
round (a leak of one buffer per transfer does) rather than one jump.

Before reading process memory the probe runs the garbage collector and asks glibc to return free
heap pages (host_memory.release_free_memory): memory the allocator merely caches after a
transport's temporary copies is not a leak, and without the trim it shows as steady growth.
"""
from __future__ import annotations

import os
from typing import Any

from conformance import host_memory

# what TR-013 judges; earlier reports named the host probe rss_bytes (VmRSS, Ray's object store
# included): the judge reads whatever probes a report recorded, so they are judged as recorded
GROWTH_PROBES = ("held_bytes", "cluster_shm_bytes", "device_used_bytes")


def device_used_bytes(device: str) -> int | None:
    """Bytes in use on this process's devices (conformance.rdt.device.used_bytes)."""
    from conformance.rdt.device import used_bytes
    return used_bytes(device)


def cluster_processes() -> set[int]:
    """This node's processes of the cluster this worker belongs to: the daemons naming its session
    folder and everything below them (workers); the worker's parent's tree when it has none."""
    from conformance.cluster import process_owners

    session = None
    try:
        import ray

        node = ray._private.worker.global_worker.node
        session = node.get_session_dir_path() if node is not None else None
    except Exception:  # noqa: BLE001 - outside a Ray worker: fall back to the parent's tree
        session = None
    found = process_owners.session_processes([session]) if session else set()
    if os.getpid() not in found:
        found |= process_owners.descendants([os.getppid()], process_owners.parents())
    return found


def cluster_shm(ours: set[int] | None = None) -> dict[str, Any]:
    """The cluster's /dev/shm use on this node: bytes its processes hold plus unheld segments."""
    from conformance.cluster import process_owners

    att = process_owners.attribute_now(cluster_processes() if ours is None else ours)
    return {"cluster_shm_bytes": sum(att.ours.values()) + sum(att.orphan.values()),
            "foreign_shm_bytes": sum(att.foreign.values())}


def snapshot(device: str = "cpu", shm: bool = False) -> dict[str, Any]:
    """The host memory this process holds and the device memory in use; with `shm`, the cluster's shared memory
    on this node too (one endpoint per node reads it: it is the node's, not the process's)."""
    host = host_memory.snapshot()
    out = {"pid": os.getpid(), "held_bytes": host["held"], "host_memory": host,
           "device_used_bytes": device_used_bytes(device)}
    if shm:
        out.update(cluster_shm())
    return out


def growth(before: dict[str, Any], after: dict[str, Any]) -> dict[str, int]:
    """Per-probe growth in bytes (probes that are None on either side are left out)."""
    out = {}
    for key in GROWTH_PROBES:
        a, b = before.get(key), after.get(key)
        if a is not None and b is not None:
            out[key] = int(b) - int(a)
    return out
