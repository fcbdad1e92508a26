"""SIMXFER: the reference Ray Direct Transport (RDT) for the simulated accelerator.

This is the tensor transport a vendor reads before writing their own. It moves tensors between
processes on one host through POSIX shared memory, and it is *one-sided*: the receiver pulls the
data without the sender taking part, like NIXL (RDMA read) or CUDA IPC.

How Ray drives a transport (Ray 2.60, `ray.experimental.rdt`), and what SIMXFER does at each step:

1. A task returns tensors with ``.options(tensor_transport="SIMXFER")``. On the **source**
   process Ray keeps the tensors and calls `extract_tensor_transport_metadata`. We copy the
   tensors into a fresh shared-memory segment named after the object, and return metadata
   (shape, dtype, device of each tensor plus where each one sits in the segment). A real
   transport registers the memory with its NIC/driver here instead of copying.
2. The object ref reaches another actor as a task argument. On the **owner** Ray calls
   `get_communicator_metadata` (nothing to say for shared memory), then, because we are
   one-sided, only `recv_multiple_tensors` on the **destination**: it maps the segment and
   copies the bytes into new tensors. `send_multiple_tensors` is never called.
   `ray.get(ref)` in the driver goes through `fetch_multiple_tensors`, whose default calls
   `recv_multiple_tensors` too.
3. When the last reference is gone, Ray calls `garbage_collect` on the **source**: we unmap
   and unlink the segment. Nothing is freed on receivers; their tensors are ordinary memory.
4. If a transfer fails or times out, Ray calls `abort_transport` on the destination (we say
   `can_abort_transport() is True`); a receive in progress notices between chunks and raises.
   Had we said False, Ray would kill both actors instead.

If the source process dies, Ray never calls `garbage_collect` for its objects (Ray kills
workers outright, so neither Python's resource tracker nor atexit runs). Segment names carry
the creating process's pid, and SIMXFER removes the segments of processes that no longer exist
(`reap_orphaned_segments`) whenever it starts in a process, creates a segment, or finds a
receive's segment left by a dead source (after reading it: nobody else will free it). So a
dead source's memory comes back at the next use of the transport on that host, also in
processes that started the transport before the source died, and a run whose last transfer
read from a killed source leaves nothing in /dev/shm.

Device tensors (`simacc`, conformance/simulated/device) move the way a GPU transport moves them:
the source waits for the device's queued work (`torch.simacc.synchronize`) and then reads device
memory with the device's copy engine (`read_bytes`, which waits for nothing: skip the
synchronization and it reads what the memory held before the producer's kernels ran); the
receiver allocates on its *current* device (`torch.empty(..., device=tensor_device)`, the type
only, as Ray's own receive buffers are) and copies in on that device's stream, which the
consumer's use of the tensor is ordered after.

Limits: one host only (every process must see the same /dev/shm); devices: "cpu", "simacc".
"""
from __future__ import annotations

import os
import threading
from dataclasses import dataclass, field
from multiprocessing import resource_tracker, shared_memory
from typing import Any, Dict, List, Optional, Set, Tuple

import torch
from ray.actor import ActorHandle
from ray.experimental.rdt import CommunicatorMetadata, TensorTransportManager, TensorTransportMetadata

from conformance.simulated import device as simdev

TRANSPORT_NAME = "SIMXFER"
ALIGN = 64                 # start every tensor on a 64-byte boundary (any dtype can be viewed there)
CHUNK = 8 * 1024 * 1024    # receive in 8 MiB chunks, checking for an abort between chunks


@dataclass
class SimXferMetadata(TensorTransportMetadata):
    """What a receiver needs: Ray's `tensor_meta` (shape, dtype) plus where the bytes are."""

    segment: str = ""
    offsets: List[int] = field(default_factory=list)   # byte offset of each tensor in the segment


def _segment_name(obj_id: str) -> str:
    # Object ids are unique within one Ray cluster only (two clusters on a host both number
    # their driver's puts from the same id), so the creating process's pid is part of the name.
    return f"simxfer-{os.getpid()}-{obj_id}"


def segment_creator(name: str) -> int | None:
    """The pid in a SIMXFER segment's name (None for any other /dev/shm entry)."""
    parts = name.split("-")
    if len(parts) < 3 or parts[0] != "simxfer" or not parts[1].isdigit():
        return None
    return int(parts[1])


def creator_alive(pid: int) -> bool:
    """Whether the process is alive. A zombie is not: it has released its mappings and waits only
    for its parent to reap it, and a worker whose raylet was killed waits for a reaper it may not
    get promptly (a cluster that ends saw its killed workers' segments kept for that moment)."""
    try:
        os.kill(pid, 0)                        # raises if no such process
    except ProcessLookupError:
        return False
    except PermissionError:
        pass                                   # alive, owned by someone else
    try:
        with open(f"/proc/{pid}/stat", "rb") as f:
            state = f.read().rsplit(b")", 1)[1].split()[0]
    except (OSError, IndexError):
        return True                            # no /proc to ask: the signal's answer stands
    return state not in (b"Z", b"X")


def reap_orphaned_segments(shm_dir: str = "/dev/shm") -> int:
    """Unlink SIMXFER segments whose creating process is gone (this host only). Returns how many."""
    reaped = 0
    try:
        names = os.listdir(shm_dir)
    except OSError:
        return 0
    for name in names:
        pid = segment_creator(name)
        if pid is None or creator_alive(pid):
            continue
        try:
            os.unlink(os.path.join(shm_dir, name))
            reaped += 1
        except OSError:
            pass
    return reaped


class _Segments:
    """SIMXFER's segments for a cluster harness that ends (conformance.cluster.hosts.cluster.SegmentKeeper)."""

    def creator(self, entry: str) -> int | None:
        return segment_creator(entry)

    def reap_orphans(self) -> int:
        return reap_orphaned_segments()


SEGMENTS = _Segments()


def _layout(tensors: List[torch.Tensor]) -> Tuple[List[int], int]:
    """Byte offsets of each tensor in the segment, and the segment size."""
    offsets, end = [], 0
    for t in tensors:
        start = -(-end // ALIGN) * ALIGN
        offsets.append(start)
        end = start + t.numel() * t.element_size()
    return offsets, max(end, 1)


def _bytes_view(buf: memoryview, offset: int, nbytes: int) -> torch.Tensor:
    """A uint8 tensor over part of the segment (no copy)."""
    return torch.frombuffer(buf, dtype=torch.uint8, count=nbytes, offset=offset)


def _open_existing(name: str) -> shared_memory.SharedMemory:
    """Map a segment another process created, without adopting it.

    Python 3.11 registers every opened segment with this process's resource tracker, which
    would unlink it when *this* process exits; the receiver does not own it, so unregister.
    """
    seg = shared_memory.SharedMemory(name=name)
    resource_tracker.unregister(seg._name, "shared_memory")  # type: ignore[attr-defined]  # the name as registered (leading slash): private in typeshed
    return seg


class SimXferTransport(TensorTransportManager):
    """One-sided shared-memory transport. Ray creates one instance per process."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._segments: Dict[str, shared_memory.SharedMemory] = {}   # source side: obj_id -> segment
        self._metadata: Dict[str, SimXferMetadata] = {}
        self._aborted: Set[str] = set()                               # receiver side
        reap_orphaned_segments()   # memory of sources that died since the last process started

    # ---------------------------------------------------------------- what kind of transport
    def tensor_transport_backend(self) -> str:
        return TRANSPORT_NAME

    @staticmethod
    def is_one_sided() -> bool:
        return True

    @staticmethod
    def can_abort_transport() -> bool:
        return True

    def actor_has_tensor_transport(self, actor: ActorHandle[Any]) -> bool:
        # Called on the owner for every `.remote()` that uses the transport, so it must be
        # cheap. Every process on this host can map /dev/shm; a transport that needs a
        # per-actor setup (a communicator, a registered agent) must answer from that state.
        return True

    # ---------------------------------------------------------------- source side
    def extract_tensor_transport_metadata(self, obj_id: str, rdt_object: List[torch.Tensor]) -> SimXferMetadata:
        with self._lock:
            if obj_id in self._metadata:          # a retried task re-extracts the same object
                return self._metadata[obj_id]
        devices = {t.device.type for t in rdt_object}
        if len(devices) > 1:
            raise ValueError(f"SIMXFER: all tensors of one object must be on one device type, got {sorted(devices)}")
        device = devices.pop() if devices else None
        offsets, size = _layout(rdt_object)
        reap_orphaned_segments()   # sources that died since this process last looked
        seg = shared_memory.SharedMemory(name=_segment_name(obj_id), create=True, size=size)
        try:
            for t, off in zip(rdt_object, offsets):
                nbytes = t.numel() * t.element_size()
                if nbytes == 0:
                    continue
                if t.device.type == "cpu":
                    # View the destination bytes as a tensor of the same dtype and shape, then let
                    # copy_ walk the source's strides: views (slices, transposes) arrive as the
                    # values the user sees, packed contiguously.
                    dst = _bytes_view(seg.buf, off, nbytes).view(t.dtype).view(t.shape)  # type: ignore[arg-type]  # an open segment's buf
                    dst.copy_(t.detach())
                    del dst   # release the buffer export before the segment can be closed
                else:
                    seg.buf[off:off + nbytes] = self._read_device(t)  # type: ignore[index]  # an open segment's buf
        except BaseException:
            seg.close()
            seg.unlink()
            raise
        meta = SimXferMetadata(tensor_meta=[(t.shape, t.dtype) for t in rdt_object], tensor_device=device,
                               segment=seg.name, offsets=offsets)
        with self._lock:
            self._segments[obj_id] = seg
            self._metadata[obj_id] = meta
        return meta

    @staticmethod
    def _read_device(t: torch.Tensor) -> bytearray:
        """A device tensor's logical bytes: packed on the device (a kernel on its stream), then,
        once the device finished its queued work, read by the copy engine."""
        packed = t.detach().contiguous()
        getattr(torch, t.device.type).synchronize(t.device)
        return simdev.read_bytes(packed)

    def send_multiple_tensors(self, tensors: List[Any], tensor_transport_metadata: TensorTransportMetadata,
                              communicator_metadata: CommunicatorMetadata) -> None:
        raise NotImplementedError("SIMXFER is one-sided: Ray never calls send_multiple_tensors for it")

    def garbage_collect(self, obj_id: str, tensor_transport_meta: TensorTransportMetadata,
                        tensors: List[Any]) -> None:
        with self._lock:
            seg = self._segments.pop(obj_id, None)
            self._metadata.pop(obj_id, None)
        if seg is not None:
            seg.close()
            seg.unlink()

    # ---------------------------------------------------------------- owner side
    def get_communicator_metadata(self, src_actor: ActorHandle[Any], dst_actor: ActorHandle[Any],
                                  backend: Optional[str] = None) -> CommunicatorMetadata:
        return CommunicatorMetadata()   # the segment name in the tensor metadata is all we need

    # ---------------------------------------------------------------- destination side
    def recv_multiple_tensors(self, obj_id: str, tensor_transport_metadata: TensorTransportMetadata,
                              communicator_metadata: CommunicatorMetadata,
                              target_buffers: Optional[List[Any]] = None) -> List[torch.Tensor]:
        meta = tensor_transport_metadata
        assert isinstance(meta, SimXferMetadata), f"SIMXFER got foreign metadata {type(meta).__name__}"
        try:
            seg = _open_existing(meta.segment)
        except FileNotFoundError:
            raise RuntimeError(f"SIMXFER: segment {meta.segment} is gone (the source freed it or died)") from None
        try:
            out = []
            for i, ((shape, dtype), off) in enumerate(zip(meta.tensor_meta, meta.offsets)):
                t = target_buffers[i] if target_buffers else torch.empty(shape, dtype=dtype, device=meta.tensor_device)  # type: ignore[arg-type]  # Ray's hints: pyproject.toml
                nbytes = t.numel() * t.element_size()
                if nbytes:
                    dst = t.view(-1).view(torch.uint8) if t.device.type == "cpu" else torch.empty(nbytes, dtype=torch.uint8)
                    self._copy_in_chunks(obj_id, dst, seg.buf, off, nbytes)  # type: ignore[arg-type]  # an open segment's buf
                    if t.device.type != "cpu":
                        t.copy_(dst.view(dtype).view(shape))  # type: ignore[arg-type]  # Ray's hints: pyproject.toml
                    del dst
                out.append(t)
            return out
        finally:
            seg.close()
            with self._lock:
                self._aborted.discard(obj_id)
            creator = segment_creator(meta.segment)
            if creator is not None and not creator_alive(creator):
                reap_orphaned_segments()   # the source died: no garbage_collect will free its segment

    def _copy_in_chunks(self, obj_id: str, dst: torch.Tensor, buf: memoryview, offset: int, nbytes: int) -> None:
        for start in range(0, nbytes, CHUNK):
            if obj_id in self._aborted:
                raise RuntimeError(f"SIMXFER: transfer of {obj_id} aborted")
            n = min(CHUNK, nbytes - start)
            src = _bytes_view(buf, offset + start, n)
            dst[start:start + n].copy_(src)
            del src

    def abort_transport(self, obj_id: str, communicator_metadata: CommunicatorMetadata) -> None:
        # Runs on Ray's `_ray_system_error` thread while a receive may be running on the
        # `_ray_system` thread; the receive checks this set between chunks.
        with self._lock:
            self._aborted.add(obj_id)
