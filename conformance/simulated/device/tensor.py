"""Tensors on the simulated device, and how torch's operators run on them.

A device tensor is a wrapper (`SimTensor`) with torch's own size, strides, storage offset, dtype
and device (`simacc:<index>`), holding a `DeviceBuffer` instead of host storage: views share
their base's buffer, `.numpy()` and `data_ptr()` give nothing usable, and the bytes leave the
device only by a copy.

Every operator reaches `SimTensor.__torch_dispatch__` (factories reach the `empty` kernels
registered for the device's dispatch key). One generic rule runs them all:

1. the result's geometry comes from running the operator on `meta` tensors of the same
   geometry; results the schema marks as aliases of an argument (views, in-place ops) share
   that argument's buffer, the others get a new buffer on the device;
2. the work itself goes on the device's stream: when it runs, it copies the buffers it reads to
   the host, runs torch's CPU kernel there, and copies what it wrote back;
3. an operator whose result is on the host (`.cpu()`, `.item()`, copy into a host tensor) first
   waits for the stream (a blocking device-to-host copy is stream-ordered), then runs at once.

Host tensors an operator reads are copied when it is enqueued (as a pageable host-to-device
copy is), so the host may reuse them at once.
"""
from __future__ import annotations

import sys
import threading
from typing import Any, Iterator, Sequence

import torch
from torch._ops import OpOverload
from torch.utils._pytree import tree_flatten, tree_map

from conformance.simulated.device import runtime

DEVICE_TYPE = "simacc"
_reducing = threading.local()   # inside a serializer's reducer for torch.Tensor (see __reduce_ex__)


class SimTensor(torch.Tensor):
    """A tensor whose bytes live in a DeviceBuffer."""

    _buffer: runtime.DeviceBuffer

    @staticmethod
    def __new__(cls, buffer: runtime.DeviceBuffer, size: Sequence[int], stride: Sequence[int], offset: int, dtype: torch.dtype) -> "SimTensor":
        t = torch.Tensor._make_wrapper_subclass(cls, size, strides=stride, storage_offset=offset, dtype=dtype,
                                                device=torch.device(DEVICE_TYPE, buffer.index))
        t._buffer = buffer
        return t

    def __repr__(self, *, tensor_contents: object = None) -> str:  # type: ignore[override]  # reads no device memory
        return f"SimTensor(shape={tuple(self.shape)}, dtype={self.dtype}, device={self.device})"

    def __reduce_ex__(self, protocol: int) -> Any:  # type: ignore[override]  # torch's hint says str | int; pickle passes an int
        """Pickle as a torch.Tensor does: through the reducer a serializer registered for
        torch.Tensor by type when there is one (Ray's RDT registers one in cloudpickle's dispatch
        table to take tensors out of band; a C++ backend's tensors are torch.Tensor and match it
        by type, this subclass would not), else through a host copy (what torch does for
        storage-less device tensors). That reducer may pickle the tensor itself in band (Ray's
        does outside RDT): the nested call takes the host copy."""
        cloudpickle = sys.modules.get("ray.cloudpickle")
        reducer = getattr(getattr(cloudpickle, "CloudPickler", None), "dispatch", {}).get(torch.Tensor)
        if reducer is not None and not getattr(_reducing, "active", False):
            _reducing.active = True
            try:
                return reducer(self)
            finally:
                _reducing.active = False
        return (_rebuild, (self.detach().to("cpu"), self.device.index))

    @classmethod
    def __torch_dispatch__(cls, func: OpOverload, types: Sequence[type], args: tuple[Any, ...] = (),  # type: ignore[override]  # torch.Tensor declares it narrower; a subclass's dispatch takes any op
                           kwargs: dict[str, Any] | None = None) -> Any:
        return run(func, args, kwargs or {})


def _rebuild(host: torch.Tensor, index: int) -> torch.Tensor:
    return host.to(torch.device(DEVICE_TYPE, index))


def contiguous_strides(size: Sequence[int]) -> list[int]:
    strides, acc = [], 1
    for n in reversed(list(size)):
        strides.append(acc)
        acc *= max(int(n), 1)
    return list(reversed(strides))


def storage_nbytes(size: Sequence[int], stride: Sequence[int], offset: int, itemsize: int) -> int:
    if any(int(n) == 0 for n in size):
        return offset * itemsize
    last = offset + sum((int(n) - 1) * int(s) for n, s in zip(size, stride))
    return (last + 1) * itemsize


def empty(size: Sequence[int], stride: Sequence[int] | None, dtype: torch.dtype | None, index: int) -> SimTensor:
    dtype = dtype or torch.get_default_dtype()
    stride = list(stride) if stride is not None else contiguous_strides(size)
    itemsize = torch.empty((), dtype=dtype).element_size()
    buffer = runtime.DeviceBuffer(index, storage_nbytes(size, stride, 0, itemsize))
    return SimTensor(buffer, size, stride, 0, dtype)


def host_view(base: torch.Tensor, t: torch.Tensor) -> torch.Tensor:
    """`t`'s geometry over `base`, a host uint8 tensor holding t's buffer."""
    return torch.empty(0, dtype=t.dtype).set_(base.untyped_storage(), t.storage_offset(), t.shape, t.stride())


def _host_base(buffer: runtime.DeviceBuffer) -> tuple[bytearray, torch.Tensor]:
    data = buffer.read()
    base = torch.frombuffer(data, dtype=torch.uint8) if data else torch.empty(0, dtype=torch.uint8)
    return data, base


def _meta(t: SimTensor) -> torch.Tensor:
    n = -(-t._buffer.nbytes // t.element_size())
    return torch.empty(n, dtype=t.dtype, device="meta").as_strided(t.shape, t.stride(), t.storage_offset())


def _sim_tensors(tree: object) -> Iterator[SimTensor]:
    return (x for x in tree_flatten(tree)[0] if isinstance(x, SimTensor))


def _alias_of_returns(func: OpOverload) -> list[int | None]:
    """For each result, the position of the argument it aliases (views, in-place ops), else None."""
    schema = func._schema
    out: list[int | None] = []
    for ret in schema.returns:
        found = None
        if ret.alias_info is not None:
            for i, arg in enumerate(schema.arguments):
                if arg.alias_info is not None and arg.alias_info.before_set == ret.alias_info.before_set:
                    found = i
                    break
        out.append(found)
    return out


def _mutated_args(func: OpOverload, args: tuple[Any, ...], kwargs: dict[str, Any]) -> list[Any]:
    found: list[Any] = []
    for i, arg in enumerate(func._schema.arguments):
        if arg.alias_info is not None and arg.alias_info.is_write:
            value = args[i] if i < len(args) else kwargs.get(arg.name)
            found.extend(v for v in tree_flatten(value)[0] if isinstance(v, torch.Tensor))
    return found


def _bound_arg(func: OpOverload, args: tuple[Any, ...], kwargs: dict[str, Any], position: int) -> Any:
    arg = func._schema.arguments[position]
    return args[position] if position < len(args) else kwargs.get(arg.name)


def _execute(func: OpOverload, args: tuple[Any, ...], kwargs: dict[str, Any], results: list[Any]) -> Any:
    """Run func on the host over the current bytes of every device buffer involved; write back
    the buffers it wrote (mutated arguments) and the results' buffers. Returns func's result."""
    bases: dict[int, tuple[runtime.DeviceBuffer, bytearray, torch.Tensor]] = {}

    def to_host(x: object) -> object:
        if not isinstance(x, SimTensor):
            return x
        key = id(x._buffer)
        if key not in bases:
            data, base = _host_base(x._buffer)
            bases[key] = (x._buffer, data, base)
        return host_view(bases[key][2], x)

    def buffer_id(t: SimTensor) -> int:
        return id(t._buffer)

    out = func(*tree_map(to_host, args), **tree_map(to_host, kwargs))
    written = {buffer_id(t) for t in _mutated_args(func, args, kwargs) if isinstance(t, SimTensor)}
    for buffer_key in written:
        buffer, data, _ = bases[buffer_key]
        buffer.write(data)
    for dev, host in zip(results, tree_flatten(out)[0]):
        if isinstance(dev, SimTensor) and id(dev._buffer) not in bases:
            data, base = _host_base(dev._buffer)
            host_view(base, dev).copy_(host)
            dev._buffer.write(data)
    return out


def _target_index(args: tuple[Any, ...], kwargs: dict[str, Any]) -> int | None:
    device = kwargs.get("device")
    if device is not None:
        device = torch.device(device)
        if device.type != DEVICE_TYPE:
            return None                         # the result is on the host
        return device.index if device.index is not None else current_index()
    first = next(_sim_tensors((args, kwargs)), None)
    return first.device.index if first is not None else current_index()


def current_index() -> int:
    from conformance.simulated.device import module
    return module.current_device()


def _capture_host(x: object) -> object:
    """A private copy of a host tensor an enqueued operator reads (pageable memory is staged)."""
    if isinstance(x, torch.Tensor) and not isinstance(x, SimTensor) and x.device.type == "cpu":
        return x.clone()
    return x


def _sync_inputs(args: tuple[Any, ...], kwargs: dict[str, Any]) -> None:
    for index in {t.device.index for t in _sim_tensors((args, kwargs))}:
        runtime.default_stream(index).synchronize()


def run(func: OpOverload, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
    if func is torch.ops.aten.detach.default or func is torch.ops.aten.alias.default:
        t = args[0]
        return SimTensor(t._buffer, t.shape, t.stride(), t.storage_offset(), t.dtype)
    index = _target_index(args, kwargs)
    host_mutated = any(not isinstance(t, SimTensor) for t in _mutated_args(func, args, kwargs))
    returns_tensors = any("Tensor" in str(r.type) for r in func._schema.returns)
    if index is None or host_mutated or not returns_tensors:
        _sync_inputs(args, kwargs)              # a blocking device-to-host copy: stream-ordered
        return _execute(func, args, kwargs, [])
    meta_kwargs = dict(kwargs)
    if "device" in meta_kwargs:
        meta_kwargs["device"] = "meta"
    meta_out = func(*tree_map(lambda x: _meta(x) if isinstance(x, SimTensor) else _capture_meta(x), args),
                    **tree_map(lambda x: _meta(x) if isinstance(x, SimTensor) else _capture_meta(x), meta_kwargs))
    flat_meta, spec = tree_flatten(meta_out)
    if not any(isinstance(m, torch.Tensor) for m in flat_meta):
        _sync_inputs(args, kwargs)              # a host value (a shape, a bool): read it now
        return _execute(func, args, kwargs, [])
    aliases = _alias_of_returns(func)
    results: list[Any] = []
    for i, m in enumerate(flat_meta):
        if not isinstance(m, torch.Tensor):
            results.append(m)
            continue
        position = aliases[i] if i < len(aliases) else None
        source = _bound_arg(func, args, kwargs, position) if position is not None else None
        if isinstance(source, SimTensor):
            alias = func._schema.returns[i].alias_info   # set: `position` came from it (_alias_of_returns)
            results.append(source if alias is not None and alias.is_write else
                           SimTensor(source._buffer, m.shape, m.stride(), int(m.storage_offset()), m.dtype))
        else:
            results.append(empty(m.shape, m.stride(), m.dtype, index))
    host_args = tree_map(_capture_host, args)
    host_kwargs = tree_map(_capture_host, {k: v for k, v in kwargs.items() if k != "device"})
    fresh = [r if isinstance(r, SimTensor) and not any(r._buffer is s._buffer for s in _sim_tensors((args, kwargs)))
             else None for r in results]
    for other in {t.device.index for t in _sim_tensors((args, kwargs))} - {index}:
        runtime.default_stream(other).synchronize()    # reads another device: its work first
    staged = sum(x.numel() * x.element_size() for x in tree_flatten((host_args, host_kwargs))[0]
                 if isinstance(x, torch.Tensor) and not isinstance(x, SimTensor))
    runtime.default_stream(index).enqueue(lambda: _execute(func, host_args, host_kwargs, fresh), staged)
    return spec.unflatten(results) if len(results) != 1 or not isinstance(meta_out, torch.Tensor) else results[0]


def _capture_meta(x: object) -> object:
    if isinstance(x, torch.Tensor) and x.device.type == "cpu" and x.dim() > 0:
        return x.to("meta")
    return x
