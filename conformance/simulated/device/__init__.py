"""The simulated accelerator's torch device, `simacc` (SimAcc's counterpart of torch_npu or
PyTorch's OpenReg), written in Python so it runs on any machine.

What it models, and where:

* device memory that is not host memory: no `.numpy()`, explicit copies to and from the host,
  an allocator with per-device accounting (runtime.py: DeviceBuffer, Allocator);
* asynchronous completion: copies and kernels run on a stream, visible after a synchronize,
  an event or a stream-ordered use (runtime.py: Stream, Event);
* one index per visible device id, so Ray's visible-ids remapping decides which device a
  worker uses (module.py, which becomes `torch.simacc`);
* torch's operators on it (tensor.py: one generic kernel over torch's CPU kernels);
* the copy engine a transport uses to move device memory by address (`read_bytes`,
  `write_bytes` below): like RDMA, it waits for no stream.

`install()` registers the device in this process (idempotent). The suite imports this module
in every process it starts when the manifest names it (`accelerator.torch_device`), as
a vendor's device module is imported: conformance.cluster.injection.
"""
from __future__ import annotations

from typing import TYPE_CHECKING, Sequence

from conformance.simulated.device.torch_backend import DeviceSetupError, register_python_device

if TYPE_CHECKING:
    import torch
    from torch.types import Device

    from conformance.simulated.device.runtime import DeviceBuffer
    from conformance.simulated.device.tensor import SimTensor

DEVICE_TYPE = "simacc"
__all__ = ["DEVICE_TYPE", "DeviceSetupError", "install", "read_bytes", "write_bytes"]
_library: torch.library.Library | None = None


def install() -> None:
    """Make `simacc` a torch device type in this process (raises DeviceSetupError if torch cannot)."""
    global _library
    if _library is not None:
        return
    import torch

    from conformance.simulated.device import module, tensor

    register_python_device(DEVICE_TYPE, module)
    lib = torch.library.Library("aten", "IMPL")

    def empty_memory_format(size: Sequence[int], *, dtype: torch.dtype | None = None, layout: torch.layout | None = None,
                            device: Device = None, pin_memory: bool | None = None,
                            memory_format: torch.memory_format | None = None) -> SimTensor:
        return tensor.empty(size, None, dtype, _index(device))

    def empty_strided(size: Sequence[int], stride: Sequence[int], *, dtype: torch.dtype | None = None,
                      layout: torch.layout | None = None, device: Device = None, pin_memory: bool | None = None) -> SimTensor:
        return tensor.empty(size, stride, dtype, _index(device))

    def _index(device: Device) -> int:
        return module._index(device)

    lib.impl("empty.memory_format", empty_memory_format, "PrivateUse1")
    lib.impl("empty_strided", empty_strided, "PrivateUse1")
    _library = lib


def _buffer_of(t: torch.Tensor) -> DeviceBuffer:
    from conformance.simulated.device.tensor import SimTensor

    if not isinstance(t, SimTensor):
        raise TypeError(f"not a {DEVICE_TYPE} tensor: {t.device}")
    if not t.is_contiguous():
        raise ValueError("the copy engine moves contiguous tensors only")
    return t._buffer


def read_bytes(t: torch.Tensor) -> bytearray:
    """A contiguous device tensor's bytes as device memory holds them now (no stream waited for)."""
    # int(): torch types a storage offset int | SymInt; a simacc tensor's is a plain int
    return _buffer_of(t).read(int(t.storage_offset()) * t.element_size(), t.numel() * t.element_size())


def write_bytes(t: torch.Tensor, data: bytes | bytearray | memoryview) -> None:
    """Overwrite a contiguous device tensor's bytes now (no stream waited for)."""
    _buffer_of(t).write(data, int(t.storage_offset()) * t.element_size())
