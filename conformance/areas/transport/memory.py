"""Memory probes for the leak check (TR-013).

The transport's own accounting cannot be trusted (a leaking transport usually does not know it
leaks), so the check looks at what the operating system and the device report:

* process RSS of the source and destination actors (/proc/self/status VmRSS): a buffer the
  transport keeps mapped or referenced shows here once its pages were written;
* host shared memory (/proc/meminfo Shmem, system-wide): a segment that is unmapped but never
  unlinked shows only here (it is owned by no process);
* device memory in use (torch.<device>.mem_get_info, when the device module has it): what a
  device transport leaks (registered or staging buffers).

Shmem is system-wide, so other processes add noise; the check therefore looks for growth that
repeats in every round (a leak of one buffer per transfer does) rather than one jump.

Before reading RSS the probe runs the garbage collector and asks glibc to return free heap
pages (malloc_trim): memory the allocator merely caches after a transport's temporary copies is
not a leak, and without the trim it shows as steady growth.
"""
from __future__ import annotations

import os
from typing import Any


def _read_kib(path: str, key: str) -> int | None:
    try:
        with open(path) as f:
            for line in f:
                if line.startswith(key + ":"):
                    return int(line.split()[1]) * 1024
    except OSError:
        return None
    return None


def device_used_bytes(device: str) -> int | None:
    """Bytes in use on this process's current device, or None when the device cannot say."""
    if device == "cpu":
        return None
    try:
        import torch

        mod = getattr(torch, device, None)
        info = getattr(mod, "mem_get_info", None)
        if info is None:
            return None
        free, total = info()
        return int(total - free)
    except Exception:  # noqa: BLE001 - a device that cannot report is reported as None
        return None


def release_free_memory() -> None:
    """Collect garbage and hand free heap pages back to the OS (glibc only; else a no-op)."""
    import ctypes
    import gc

    gc.collect()
    try:
        ctypes.CDLL("libc.so.6").malloc_trim(0)
    except (OSError, AttributeError):
        pass


def snapshot(device: str = "cpu") -> dict[str, Any]:
    """This process's RSS, the host's shared memory in use, and the device memory in use."""
    release_free_memory()
    return {"pid": os.getpid(),
            "rss_bytes": _read_kib("/proc/self/status", "VmRSS"),
            "host_shmem_bytes": _read_kib("/proc/meminfo", "Shmem"),
            "device_used_bytes": device_used_bytes(device)}


def growth(before: dict[str, Any], after: dict[str, Any]) -> dict[str, int]:
    """Per-probe growth in bytes (probes that are None on either side are left out)."""
    out = {}
    for key in ("rss_bytes", "host_shmem_bytes", "device_used_bytes"):
        a, b = before.get(key), after.get(key)
        if a is not None and b is not None:
            out[key] = int(b) - int(a)
    return out
