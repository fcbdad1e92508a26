"""`torch.simacc`: the device module, named as torch.cuda names its functions.

Indices are per process, like CUDA's: index i is the i-th id in SIMACC_VISIBLE_DEVICES (the
variable Ray's visible-ids remapping sets through the SimAcc manager), or every device of the
node (SIMACC_NUM_DEVICES) when it is unset. So an actor Ray gave devices 2 and 3 sees
simacc:0 and simacc:1, and `physical_id(1)` is "3". The current device is process-wide (not
per thread as in CUDA: Ray runs transfers on its own threads) and starts at 0.
"""
from __future__ import annotations

import os
from typing import TYPE_CHECKING

from conformance.simulated.device import runtime

if TYPE_CHECKING:
    from torch.types import Device

_current = 0


def _visible() -> list[str]:
    from conformance.simulated.manager import DEFAULT_NUM_DEVICES, NUM_DEVICES_ENV_VAR, VISIBLE_DEVICES_ENV_VAR

    value = os.environ.get(VISIBLE_DEVICES_ENV_VAR)
    if value is None:
        return [str(i) for i in range(int(os.environ.get(NUM_DEVICES_ENV_VAR, DEFAULT_NUM_DEVICES)))]
    return [v.strip() for v in value.split(",") if v.strip()]


def is_available() -> bool:
    return device_count() > 0


def is_initialized() -> bool:
    return True


def _is_in_bad_fork() -> bool:
    return False


def manual_seed_all(seed: int) -> None:
    pass


def device_count() -> int:
    return len(_visible())


def physical_id(index: int | None = None) -> str:
    """The node's device id behind this process's index (what the manager enumerates)."""
    return _visible()[_index(index)]


def current_device() -> int:
    return _current


def set_device(device: Device) -> None:
    global _current
    index = _index(device)
    if not 0 <= index < device_count():
        raise RuntimeError(f"simacc: invalid device index {index}: {device_count()} visible")
    _current = index


def _index(device: Device) -> int:
    import torch

    if device is None:
        return _current
    if isinstance(device, int):
        return device
    d = torch.device(device)
    return d.index if d.index is not None else _current


def current_stream(device: Device = None) -> runtime.Stream:
    return runtime.default_stream(_index(device))


def synchronize(device: Device = None) -> None:
    """Wait for every enqueued copy and kernel of the device."""
    runtime.default_stream(_index(device)).synchronize()


Stream = runtime.Stream
Event = runtime.Event


# ---------------------------------------------------------------- memory, as torch.cuda names it
def memory_allocated(device: Device = None) -> int:
    return runtime.ALLOCATOR.allocated.get(_index(device), 0)


def max_memory_allocated(device: Device = None) -> int:
    return runtime.ALLOCATOR.peak.get(_index(device), 0)


def reset_peak_memory_stats(device: Device = None) -> None:
    runtime.ALLOCATOR.reset_peak(_index(device))


def mem_get_info(device: Device = None) -> tuple[int, int]:
    """(free, total) bytes of the device, as this process accounts them."""
    total = runtime.ALLOCATOR.capacity()
    return total - memory_allocated(device), total


def memory_stats(device: Device = None) -> dict[str, int]:
    return {"allocated_bytes.all.current": memory_allocated(device),
            "allocated_bytes.all.peak": max_memory_allocated(device)}
