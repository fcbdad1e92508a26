"""Tensors on the vendor's device, by its torch device type only: the helpers every check that
allocates or moves tensors uses, so no check names a device type (the manifest's `devices` and
the torch device module `torch.<type>` are the only source).

* `module(device)`: torch.<type> (torch.cuda, torch.npu, the simulated torch.simacc);
* `synchronize(device)`: wait for the device's queued work (no-op on the host);
* `warm_up(device)`: pay the device's first-use costs now (a context, lazily loaded kernels);
* `to_device(obj, device)` / `to_host(t)`: move every tensor of a tree there, copy one back
  through the device's own `.to("cpu")` (stream-ordered: it waits for the device's queued work);
* `current(device)` / `to_current(t, device)`: the process's current device of that type, with
  its index (`torch.<type>.current_device()`: the first Ray made visible), and a tensor moved there;
* `used_bytes(device)`: device memory in use in this process, through the device module's
  accounting as torch.cuda names it (memory_allocated, else mem_get_info), None when it cannot say.

Payloads and their digests (build on a device, digest through a host copy) are
conformance.rdt.payloads (`build`, `build_with_digest`, `describe`).
"""
from __future__ import annotations

from typing import TYPE_CHECKING, Any, Callable

if TYPE_CHECKING:
    import torch

HOST = "cpu"


def is_host(device: str) -> bool:
    return device == HOST


def module(device: str) -> Any:
    """torch.<device>: the device module a vendor's torch backend registers."""
    import torch

    mod = getattr(torch, device, None)
    if mod is None:
        raise RuntimeError(f"torch has no device module torch.{device} in this process (is the vendor's torch "
                           "device registered here? manifest accelerator.torch_device)")
    return mod


def synchronize(device: str) -> None:
    """Wait for every queued copy and kernel of this process's current device (host: nothing)."""
    if is_host(device):
        return
    sync = getattr(module(device), "synchronize", None)
    if callable(sync):
        sync()


def synchronizer(device: str) -> Callable[[], None]:
    return lambda: synchronize(device)


def warm_up(device: str) -> None:
    """Run one small op on the device and copy it back: its first-use costs (seconds of CPU for
    a context or lazily loaded modules) are paid now, not inside the first thing a check times."""
    if not is_host(device):
        import torch

        torch.zeros(1, device=device).to(HOST)


def to_device(obj: object, device: str) -> Any:
    """obj with every tensor (in lists, tuples, dicts) moved to `device`; the host's obj as is."""
    if is_host(device):
        return obj
    return map_tensors(obj, lambda t: t.to(device))


def current(device: str) -> torch.device:
    """This process's current device of type `device` as a torch.device with its index, read
    through the device module (`torch.<type>.current_device()`): the first of the devices Ray
    made visible to the process, unless it chose another. The host: torch.device("cpu")."""
    import torch

    if is_host(device):
        return torch.device(HOST)
    return torch.device(device, int(module(device).current_device()))


def to_current(t: torch.Tensor, device: str) -> torch.Tensor:
    """A tensor on this process's current device of type `device` (see current)."""
    return t if is_host(device) else t.to(current(device))


def to_host(t: torch.Tensor) -> torch.Tensor:
    """A tensor's host copy through the device's own API (the tensor itself on the host)."""
    return t if t.device.type == HOST else t.to(HOST)


def map_tensors(obj: object, fn: Callable[[torch.Tensor], Any]) -> Any:
    import torch

    if isinstance(obj, torch.Tensor):
        return fn(obj)
    if isinstance(obj, list):
        return [map_tensors(x, fn) for x in obj]
    if isinstance(obj, tuple):
        return tuple(map_tensors(x, fn) for x in obj)
    if isinstance(obj, dict):
        return {k: map_tensors(v, fn) for k, v in obj.items()}
    return obj


def used_bytes(device: str) -> int | None:
    """Bytes in use on this process's devices, read through the torch device module's accounting
    as torch.cuda names it: memory_allocated summed over the process's device indices, else
    mem_get_info's total - free of the current device; None when the device cannot say. Device
    memory is not host memory: host RSS does not see it."""
    if is_host(device):
        return None
    try:
        mod = module(device)
        allocated = getattr(mod, "memory_allocated", None)
        if allocated is not None:
            count = int(getattr(mod, "device_count", lambda: 1)())
            return sum(int(allocated(i)) for i in range(max(count, 1)))
        info = getattr(mod, "mem_get_info", None)
        if info is None:
            return None
        free, total = info()
        return int(total - free)
    except Exception:  # noqa: BLE001 - a device that cannot report is reported as None
        return None
