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

from typing import Any

from conformance.simulated.device.torch_backend import DeviceSetupError, register_python_device

DEVICE_TYPE = "simacc"
__all__ = ["DEVICE_TYPE", "DeviceSetupError", "install", "read_bytes", "write_bytes"]
_library: Any = None


def install() -> None:
    """Make `simacc` a torch device type in this process (raises DeviceSetupError if torch cannot)."""
    global _library
    if _library is not None:
        return
    import torch

    from conformance.simulated.device import module, tensor

    register_python_device(DEVICE_TYPE, module)
    lib = torch.library.Library("aten", "IMPL")

    def empty_memory_format(size: Any, *, dtype: Any = None, layout: Any = None, device: Any = None,
                            pin_memory: Any = None, memory_format: Any = None) -> Any:
        return tensor.empty(size, None, dtype, _index(device))

    def empty_strided(size: Any, stride: Any, *, dtype: Any = None, layout: Any = None, device: Any = None,
                      pin_memory: Any = None) -> Any:
        return tensor.empty(size, stride, dtype, _index(device))

    def _index(device: Any) -> int:
        return module._index(device)

    lib.impl("empty.memory_format", empty_memory_format, "PrivateUse1")
    lib.impl("empty_strided", empty_strided, "PrivateUse1")
    _library = lib


def _buffer_of(t: Any) -> Any:
    from conformance.simulated.device.tensor import SimTensor

    if not isinstance(t, SimTensor):
        raise TypeError(f"not a {DEVICE_TYPE} tensor: {t.device}")
    if not t.is_contiguous():
        raise ValueError("the copy engine moves contiguous tensors only")
    return t._buffer


def read_bytes(t: Any) -> bytearray:
    """A contiguous device tensor's bytes as device memory holds them now (no stream waited for)."""
    buf = _buffer_of(t)
    data: bytearray = buf.read(t.storage_offset() * t.element_size(), t.numel() * t.element_size())
    return data


def write_bytes(t: Any, data: Any) -> None:
    """Overwrite a contiguous device tensor's bytes now (no stream waited for)."""
    _buffer_of(t).write(data, t.storage_offset() * t.element_size())
