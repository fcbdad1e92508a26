"""SIMCOLL: the reference collective backend for the simulated accelerator.

This is the `ray.util.collective` backend a vendor reads before writing their own (Ray 2.60,
`register_collective_backend(name, BaseGroup subclass)`). It moves tensors between the processes
of a group on one host through files in shared memory (/dev/shm), so it is real inter-process
communication with nothing hidden, and it needs no device.

How Ray drives a backend, and what SIMCOLL does at each step:

1. Every process that uses the backend registers the class under its name, the driver included
   (`register()` below; Ray ships nothing). Ray then calls the constructor with exactly
   `(world_size, rank, group_name)` inside each member actor, when the group is created (or, for
   `create_collective_group` on the driver, on the member's first op). The constructor does no
   communication; the first op is the rendezvous.
2. Each op gets the caller's tensors **wrapped in a list** (`allreduce([t], opts)`), and its
   options often as the options **class** rather than an instance: read them by attribute only.
   Results go **in place** into the caller's tensors (torch or numpy).
3. Collective op number k: every rank writes its contribution to the file `c<k>.r<rank>` (write
   to a temporary name, then rename: a reader never sees half a file), waits until every rank's
   file of op k exists, reads what it needs, and computes the result itself. When a rank has
   written its op-k file it has finished reading op k-1, so each rank deletes its own op-(k-1)
   file when op k completes. Point-to-point messages use their own numbering per (source,
   destination) pair: the sender writes `p<src>-<dst>.<n>` and returns; the receiver waits for
   it, reads it and deletes it, so messages between a pair arrive in the order they were sent.
4. Every wait is bounded (`SIMCOLL_TIMEOUT_S`, default 10 s, or the op's `timeout_ms` when Ray
   passes one): Ray never tells survivors that a member died, so a backend that waited forever
   would hang them. A timeout raises `TimeoutError` naming the op and the missing ranks.
5. `destroy_group` removes the group's folder, so a new group may reuse the name once every
   member's `destroy_collective_group` has returned, and the backend's own folder once no group
   is left in it: a backend leaves nothing on the host (an empty folder in /dev/shm included).

`check_backend_availability()` is True exactly where the simulated vendor library is usable
(`SIMACC_DRIVER` unset or "ok"), never raising: Ray calls it before every group creation.

Device tensors (the simulated device `simacc`, conformance/simulated/device) are staged through
the host: the contribution is copied back with the device's `.to("cpu")`, the result is written
into the caller's device tensor with `copy_`, in place, queued on the device's stream (the
caller's next use of the tensor is ordered after it). A real backend reduces on the device.

Limits: one host (every member must see the same /dev/shm: cluster_utils nodes do).
"""
from __future__ import annotations

import os
import re
import shutil
import tempfile
import time
import uuid
from datetime import timedelta
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable, List

from ray.util.collective.collective_group.base_collective_group import BaseGroup
from ray.util.collective.types import (
    AllGatherOptions,
    AllReduceOptions,
    BroadcastOptions,
    RecvOptions,
    ReduceOp,
    ReduceOptions,
    ReduceScatterOptions,
    SendOptions,
)

if TYPE_CHECKING:
    import numpy as np
    import torch

NAME = "SIMCOLL"
TIMEOUT_ENV_VAR = "SIMCOLL_TIMEOUT_S"
ROOT_ENV_VAR = "SIMCOLL_DIR"
DEFAULT_TIMEOUT_S = 10.0
POLL_S = 0.0005


def _torch(x: torch.Tensor | np.ndarray) -> torch.Tensor:
    """The caller's tensor as a torch tensor sharing its memory (numpy arrays included)."""
    import numpy as np
    import torch

    return torch.from_numpy(x) if isinstance(x, np.ndarray) else x


def _to_bytes(t: torch.Tensor) -> bytes:
    """The tensor's bytes on the host: a device tensor is copied back through the device's own
    `.to("cpu")`, which waits for the device's queued work (stream-ordered)."""
    import torch

    host = t.detach() if t.device.type == "cpu" else t.detach().to("cpu")
    data: bytes = host.contiguous().reshape(-1).view(torch.uint8).numpy().tobytes()
    return data


def _from_bytes(data: bytes, like: torch.Tensor) -> torch.Tensor:
    import torch

    if not data:
        return torch.empty(like.shape, dtype=like.dtype)
    return torch.frombuffer(bytearray(data), dtype=like.dtype).reshape(like.shape)


def _combine(op: ReduceOp) -> Callable[[torch.Tensor, torch.Tensor], torch.Tensor]:
    import torch

    table: dict[ReduceOp, Callable[[torch.Tensor, torch.Tensor], torch.Tensor]] = {ReduceOp.SUM: torch.add, ReduceOp.PRODUCT: torch.mul,
             ReduceOp.MIN: torch.minimum, ReduceOp.MAX: torch.maximum}
    if op not in table:
        raise ValueError(f"SIMCOLL: unsupported reduce op {op!r}")
    return table[op]


def _reduce(op: ReduceOp, parts: List[torch.Tensor]) -> torch.Tensor:
    """Fold in rank order, keeping the dtype (torch.stack().sum() would widen integers)."""
    combine, acc = _combine(op), parts[0].clone()
    for p in parts[1:]:
        acc = combine(acc, p).to(acc.dtype)
    return acc


def _timeout_s(options: object) -> float:   # an options instance, its class, or None: read by attribute
    value = getattr(options, "timeout_ms", None)
    if isinstance(value, timedelta):
        value = value.total_seconds() * 1000
    if isinstance(value, (int, float)) and value > 0:
        return float(value) / 1000
    return float(os.environ.get(TIMEOUT_ENV_VAR, DEFAULT_TIMEOUT_S))


class SimCollGroup(BaseGroup):
    """One member's view of a SIMCOLL group."""

    def __init__(self, world_size: int, rank: int, group_name: str) -> None:
        super().__init__(world_size, rank, group_name)
        root = Path(os.environ.get(ROOT_ENV_VAR) or ("/dev/shm" if os.path.isdir("/dev/shm") else tempfile.gettempdir()))
        self._dir = root / "simcoll" / re.sub(r"[^A-Za-z0-9_.-]", "_", group_name)
        self._dir.mkdir(parents=True, exist_ok=True)
        self._seq = 0
        self._sent: dict[int, int] = {}
        self._received: dict[int, int] = {}

    @classmethod
    def backend(cls) -> str:
        return NAME

    @classmethod
    def check_backend_availability(cls) -> bool:
        return os.environ.get("SIMACC_DRIVER", "ok") == "ok"

    # ------------------------------------------------------------------ the two primitives
    def _write(self, name: str, data: bytes) -> None:
        tmp = self._dir / f".{name}.{uuid.uuid4().hex}"
        tmp.write_bytes(data)
        os.replace(tmp, self._dir / name)

    def _wait(self, names: List[str], what: str, options: object) -> List[bytes]:
        deadline = time.monotonic() + _timeout_s(options)
        paths = [self._dir / n for n in names]
        while True:
            missing = [p.name for p in paths if not p.exists()]
            if not missing:
                return [p.read_bytes() for p in paths]
            if time.monotonic() > deadline:
                raise TimeoutError(f"SIMCOLL {what} in group {self.group_name!r} (rank {self.rank}): "
                                   f"no data from {', '.join(missing)} within {_timeout_s(options):.1f}s "
                                   "(a member died or never called the op)")
            time.sleep(POLL_S)

    def _exchange(self, data: bytes, what: str, options: object) -> List[bytes]:
        """Op number k: publish this rank's part, return every rank's part (rank order)."""
        k = self._seq
        self._seq += 1
        self._write(f"c{k}.r{self.rank}", data)
        parts = self._wait([f"c{k}.r{r}" for r in range(self.world_size)], what, options)
        if k > 0:
            (self._dir / f"c{k - 1}.r{self.rank}").unlink(missing_ok=True)
        return parts

    # ------------------------------------------------------------------ collectives
    def allreduce(self, tensors: List[Any], allreduce_options: AllReduceOptions | None = None) -> None:
        allreduce_options = allreduce_options or AllReduceOptions()   # Ray's default
        t = _torch(tensors[0])
        parts = self._exchange(_to_bytes(t), "allreduce", allreduce_options)
        t.copy_(_reduce(allreduce_options.reduceOp, [_from_bytes(p, t) for p in parts]))

    def barrier(self, barrier_options: object = None) -> None:
        self._exchange(b"", "barrier", barrier_options)

    def reduce(self, tensors: List[Any], reduce_options: ReduceOptions | None = None) -> None:
        reduce_options = reduce_options or ReduceOptions()   # Ray's default
        t = _torch(tensors[0])
        parts = self._exchange(_to_bytes(t), "reduce", reduce_options)
        if self.rank == reduce_options.root_rank:
            t.copy_(_reduce(reduce_options.reduceOp, [_from_bytes(p, t) for p in parts]))

    def broadcast(self, tensors: List[Any], broadcast_options: BroadcastOptions | None = None) -> None:
        broadcast_options = broadcast_options or BroadcastOptions()   # Ray's default
        t, root = _torch(tensors[0]), broadcast_options.root_rank
        parts = self._exchange(_to_bytes(t) if self.rank == root else b"", "broadcast", broadcast_options)
        if self.rank != root:
            t.copy_(_from_bytes(parts[root], t))

    def allgather(self, tensor_lists: List[List[Any]], tensors: List[Any], allgather_options: AllGatherOptions | None = None) -> None:
        mine, out = _torch(tensors[0]), [_torch(x) for x in tensor_lists[0]]
        parts = self._exchange(_to_bytes(mine), "allgather", allgather_options)
        for dst, part in zip(out, parts):
            dst.copy_(_from_bytes(part, dst))

    def reducescatter(self, tensors: List[Any], tensor_lists: List[List[Any]],
                      reducescatter_options: ReduceScatterOptions | None = None) -> None:
        reducescatter_options = reducescatter_options or ReduceScatterOptions()   # Ray's default
        out, inputs = _torch(tensors[0]), [_torch(x) for x in tensor_lists[0]]
        parts = self._exchange(b"".join(_to_bytes(x) for x in inputs), "reducescatter", reducescatter_options)
        size = len(_to_bytes(out))
        chunks = [_from_bytes(p[self.rank * size:(self.rank + 1) * size], out) for p in parts]
        out.copy_(_reduce(reducescatter_options.reduceOp, chunks))

    # ------------------------------------------------------------------ point to point
    def send(self, tensors: List[Any], send_options: SendOptions) -> None:
        dst = send_options.dst_rank
        n = self._sent.get(dst, 0)
        self._sent[dst] = n + 1
        self._write(f"p{self.rank}-{dst}.{n}", _to_bytes(_torch(tensors[0])))

    def recv(self, tensors: List[Any], recv_options: RecvOptions) -> None:
        t, src = _torch(tensors[0]), recv_options.src_rank
        n = self._received.get(src, 0)
        self._received[src] = n + 1
        name = f"p{src}-{self.rank}.{n}"
        data = self._wait([name], f"recv from rank {src}", recv_options)[0]
        (self._dir / name).unlink(missing_ok=True)
        t.copy_(_from_bytes(data, t))

    def destroy_group(self) -> None:
        shutil.rmtree(self._dir, ignore_errors=True)
        try:
            self._dir.parent.rmdir()   # only when empty: another group's member may still use it
        except OSError:
            pass


def register() -> None:
    """Register SIMCOLL in this process; safe to call again (also as a worker_process_setup_hook)."""
    from ray.util.collective.backend_registry import _global_registry, register_collective_backend

    if not _global_registry.is_registered(NAME):
        register_collective_backend(NAME, SimCollGroup)
