"""Deliberately broken variants of the reference transport SIMXFER, one fault each.

Each class subclasses conformance.simulated.transport.SimXferTransport and breaks one promise
of the RDT transport contract the way real transports do (a cast on the wire, ignored strides,
a shared staging buffer, a leak ...). tests/teeth.yaml runs the transport and
performance checks against each and asserts that the intended check fails and that the checks
the fault does not touch still pass.
"""
from __future__ import annotations

import dataclasses
import os
import time
from dataclasses import dataclass, field
from multiprocessing import shared_memory
from typing import Any, List, Optional

import torch
from broken_workload import DeadReaderBlocks, FixedStagingSlots, LeakManyTensors
from ray.experimental.rdt import CommunicatorMetadata, TensorTransportMetadata
from ray.experimental.rdt.tensor_transport_manager import FetchRequest

from conformance.simulated.transport import SimXferMetadata, SimXferTransport, _bytes_view, _layout, _open_existing

SIM_LINK_BYTES_PER_S = 100e6   # the "slow link" variants move 100 MB/s


# --------------------------------------------------------------------------- TR-001
class WireFloat32(SimXferTransport):
    """TR-001: casts every tensor to float32 for the wire and back on arrival (int64, float64,
    complex and NaN payloads of float16/bfloat16 do not survive)."""

    def extract_tensor_transport_metadata(self, obj_id: str, rdt_object: List[torch.Tensor]) -> SimXferMetadata:
        meta = super().extract_tensor_transport_metadata(obj_id, [t.to(torch.float32) for t in rdt_object])
        meta.tensor_meta = [(t.shape, t.dtype) for t in rdt_object]
        return meta

    def recv_multiple_tensors(self, obj_id: str, tensor_transport_metadata: Any, communicator_metadata: Any,
                              target_buffers: Optional[List[Any]] = None) -> List[torch.Tensor]:
        meta = tensor_transport_metadata
        wire = dataclasses.replace(meta, tensor_meta=[(s, torch.float32) for s, _ in meta.tensor_meta])
        got = super().recv_multiple_tensors(obj_id, wire, communicator_metadata)
        return [g.to(d) for g, (_, d) in zip(got, meta.tensor_meta)]


class ZeroDimLost(SimXferTransport):
    """TR-001 (shape axis): a 0-d tensor arrives as zero (an empty shape taken as "no data")."""

    def recv_multiple_tensors(self, obj_id: str, tensor_transport_metadata: Any, communicator_metadata: Any,
                              target_buffers: Optional[List[Any]] = None) -> List[torch.Tensor]:
        got = super().recv_multiple_tensors(obj_id, tensor_transport_metadata, communicator_metadata, target_buffers)
        return [torch.zeros((), dtype=t.dtype) if t.dim() == 0 else t for t in got]


# --------------------------------------------------------------------------- TR-002
class IgnoreStrides(SimXferTransport):
    """TR-002: ships numel elements of the storage from the view's offset, ignoring strides."""

    def extract_tensor_transport_metadata(self, obj_id: str, rdt_object: List[torch.Tensor]) -> SimXferMetadata:
        raw = [t if t.is_contiguous() else
               torch.as_strided(t, (t.numel(),), (1,), t.storage_offset()).view(t.shape) for t in rdt_object]
        meta = super().extract_tensor_transport_metadata(obj_id, raw)
        meta.tensor_meta = [(t.shape, t.dtype) for t in rdt_object]
        return meta


# --------------------------------------------------------------------------- TR-003
class ReverseOrder(SimXferTransport):
    """TR-003: hands the tensors of a multi-tensor object back in reverse order."""

    def recv_multiple_tensors(self, obj_id: str, tensor_transport_metadata: Any, communicator_metadata: Any,
                              target_buffers: Optional[List[Any]] = None) -> List[torch.Tensor]:
        return list(reversed(super().recv_multiple_tensors(obj_id, tensor_transport_metadata, communicator_metadata,
                                                           target_buffers)))


# --------------------------------------------------------------------------- TR-004 / PF-001
class Truncate1MiB(SimXferTransport):
    """TR-004, PF-001: a fixed 1 MiB receive buffer; bytes past 1 MiB of a tensor arrive as zeros."""

    LIMIT = 1 << 20

    def _copy_in_chunks(self, obj_id: str, dst: torch.Tensor, buf: memoryview, offset: int, nbytes: int) -> None:
        super()._copy_in_chunks(obj_id, dst, buf, offset, min(nbytes, self.LIMIT))
        if nbytes > self.LIMIT:
            dst[self.LIMIT:nbytes].zero_()


# --------------------------------------------------------------------------- TR-005
class FlatShapes(SimXferTransport):
    """TR-005: every tensor arrives flattened to 1-D (right bytes, wrong shape)."""

    def recv_multiple_tensors(self, obj_id: str, tensor_transport_metadata: Any, communicator_metadata: Any,
                              target_buffers: Optional[List[Any]] = None) -> List[torch.Tensor]:
        got = super().recv_multiple_tensors(obj_id, tensor_transport_metadata, communicator_metadata, target_buffers)
        return [t.reshape(-1) for t in got]


# --------------------------------------------------------------------------- TR-006
@dataclass
class NodeMetadata(SimXferMetadata):
    node_id: str = ""


def _node_id() -> str:
    import ray
    return ray.get_runtime_context().get_node_id()


class NodeLocal(SimXferTransport):
    """TR-006: node-local only (like shared memory or IPC handles on real hosts); a receiver on
    another node cannot find the buffer."""

    def extract_tensor_transport_metadata(self, obj_id: str, rdt_object: List[torch.Tensor]) -> NodeMetadata:
        meta = super().extract_tensor_transport_metadata(obj_id, rdt_object)
        return NodeMetadata(**{f.name: getattr(meta, f.name) for f in dataclasses.fields(meta)}, node_id=_node_id())

    def recv_multiple_tensors(self, obj_id: str, tensor_transport_metadata: Any, communicator_metadata: Any,
                              target_buffers: Optional[List[Any]] = None) -> List[torch.Tensor]:
        if tensor_transport_metadata.node_id != _node_id():
            raise RuntimeError(f"SIMXFER(NodeLocal): segment {tensor_transport_metadata.segment} not found on this node")
        return super().recv_multiple_tensors(obj_id, tensor_transport_metadata, communicator_metadata, target_buffers)


# --------------------------------------------------------------------------- TR-007
class SharedStaging(SimXferTransport):
    """TR-007: one staging segment per process, reused by every object: fine one at a time,
    overwritten when several objects are alive at once."""

    def __init__(self) -> None:
        super().__init__()
        self._staging: Optional[shared_memory.SharedMemory] = None

    def extract_tensor_transport_metadata(self, obj_id: str, rdt_object: List[torch.Tensor]) -> SimXferMetadata:
        offsets, size = _layout(rdt_object)
        if self._staging is None or self._staging.size < size:
            if self._staging is not None:
                self._staging.close()
                self._staging.unlink()
            self._staging = shared_memory.SharedMemory(name=f"simxfer-{os.getpid()}-staging-{size}", create=True,
                                                       size=size)
        for t, off in zip(rdt_object, offsets):
            n = t.numel() * t.element_size()
            if n:
                dst = _bytes_view(self._staging.buf, off, n).view(t.dtype).view(t.shape)
                dst.copy_(t)
                del dst
        return SimXferMetadata(tensor_meta=[(t.shape, t.dtype) for t in rdt_object],
                               tensor_device=rdt_object[0].device.type if rdt_object else None,
                               segment=self._staging.name, offsets=offsets)

    def garbage_collect(self, obj_id: str, tensor_transport_meta: Any, tensors: List[Any]) -> None:
        pass   # the staging segment is reused, nothing per object


# --------------------------------------------------------------------------- TR-008
class UnlinkOnRead(SimXferTransport):
    """TR-008: the receiver removes the buffer after reading it, so a ref reads only once."""

    def recv_multiple_tensors(self, obj_id: str, tensor_transport_metadata: Any, communicator_metadata: Any,
                              target_buffers: Optional[List[Any]] = None) -> List[torch.Tensor]:
        got = super().recv_multiple_tensors(obj_id, tensor_transport_metadata, communicator_metadata, target_buffers)
        seg = _open_existing(tensor_transport_metadata.segment)
        seg.close()
        seg.unlink()
        return got

    def garbage_collect(self, obj_id: str, tensor_transport_meta: Any, tensors: List[Any]) -> None:
        with self._lock:
            seg = self._segments.pop(obj_id, None)
            self._metadata.pop(obj_id, None)
        if seg is not None:
            seg.close()
            try:
                seg.unlink()
            except FileNotFoundError:
                pass   # the receiver already removed it


# --------------------------------------------------------------------------- TR-009
class BrokenFetch(SimXferTransport):
    """TR-009: an "async" fetch for ray.get in the driver that hands back its buffers before
    filling them (actor-to-actor receives are fine)."""

    def fetch_multiple_tensors(self, obj_id: str, tensor_transport_metadata: Any, communicator_metadata: Any,
                               target_buffers: Optional[List[Any]] = None) -> FetchRequest:
        empty = [torch.zeros(s, dtype=d) for s, d in tensor_transport_metadata.tensor_meta]
        return FetchRequest(obj_id=obj_id, tensors=empty)


# --------------------------------------------------------------------------- TR-010
class FalseTwoSided(SimXferTransport):
    """TR-010: declares itself two-sided but has no send path (send raises), so every
    transfer's send task fails; data still arrives through the one-sided read."""

    @staticmethod
    def is_one_sided() -> bool:
        return False

    def abort_transport(self, obj_id: str, communicator_metadata: CommunicatorMetadata) -> None:
        pass   # nothing to interrupt: the read does not wait for the (missing) send


# --------------------------------------------------------------------------- TR-011
@dataclass
class WireMetadata(SimXferMetadata):
    true_meta: list = field(default_factory=list)


class WireMeta(SimXferTransport):
    """TR-011: its TensorTransportMetadata describes the wire (one uint8 blob per tensor), not
    the tensors; it keeps the real shapes privately, so transfers still work."""

    def extract_tensor_transport_metadata(self, obj_id: str, rdt_object: List[torch.Tensor]) -> WireMetadata:
        meta = super().extract_tensor_transport_metadata(obj_id, rdt_object)
        fields = {f.name: getattr(meta, f.name) for f in dataclasses.fields(meta)}
        fields["tensor_meta"] = [(torch.Size([t.numel() * t.element_size()]), torch.uint8) for t in rdt_object]
        return WireMetadata(**fields, true_meta=list(meta.tensor_meta))

    def recv_multiple_tensors(self, obj_id: str, tensor_transport_metadata: Any, communicator_metadata: Any,
                              target_buffers: Optional[List[Any]] = None) -> List[torch.Tensor]:
        real = dataclasses.replace(tensor_transport_metadata, tensor_meta=tensor_transport_metadata.true_meta)
        return super().recv_multiple_tensors(obj_id, real, communicator_metadata, target_buffers)


# --------------------------------------------------------------------------- TR-012 / TR-013
class GcRaises(SimXferTransport):
    """TR-012: garbage_collect looks the object up under the wrong key and raises (Ray logs
    and swallows it, so the segment also leaks)."""

    def garbage_collect(self, obj_id: str, tensor_transport_meta: TensorTransportMetadata, tensors: List[Any]) -> None:
        with self._lock:
            seg = self._segments[tensor_transport_meta.segment]   # keyed by obj_id: KeyError
        seg.close()


class NoFree(SimXferTransport):
    """TR-013: garbage_collect forgets to release the segment (one buffer leaked per transfer)."""

    def garbage_collect(self, obj_id: str, tensor_transport_meta: TensorTransportMetadata, tensors: List[Any]) -> None:
        pass


class HelperPerObject(SimXferTransport):
    """TR-012: starts a helper process for every object it stages (as a transport with a copy
    proxy would) and never ends it when garbage_collect frees the object."""

    def extract_tensor_transport_metadata(self, obj_id: str, rdt_object: List[torch.Tensor]) -> SimXferMetadata:
        import subprocess
        import sys

        meta = super().extract_tensor_transport_metadata(obj_id, rdt_object)
        subprocess.Popen([sys.executable, "-c", "import time; time.sleep(120)"], stdin=subprocess.DEVNULL,
                         stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        return meta


VENDOR_STAGING_DIR = "/dev/shm/rc-teeth-staging"   # tests/support/teeth.py reaps what dead sources left here


class VendorFolderNoUnlink(SimXferTransport):
    """TR-013, one folder down: stages each object into a file of its own folder under /dev/shm
    (as vendors do: /dev/shm/<vendor>/...) and garbage_collect forgets to unlink it. No process
    keeps the file open or mapped, so only a walk below the top of /dev/shm finds the memory."""

    def extract_tensor_transport_metadata(self, obj_id: str, rdt_object: List[torch.Tensor]) -> SimXferMetadata:
        with self._lock:
            if obj_id in self._metadata:
                return self._metadata[obj_id]
        offsets, size = _layout(rdt_object)
        staged = bytearray(size)
        for t, off in zip(rdt_object, offsets):
            nbytes = t.numel() * t.element_size()
            if nbytes:
                _bytes_view(memoryview(staged), off, nbytes).view(t.dtype).view(t.shape).copy_(t.detach())
        os.makedirs(VENDOR_STAGING_DIR, exist_ok=True)
        path = os.path.join(VENDOR_STAGING_DIR, f"simxfer-{os.getpid()}-{obj_id}")
        with open(path, "wb") as f:
            f.write(staged)
        meta = SimXferMetadata(tensor_meta=[(t.shape, t.dtype) for t in rdt_object],
                               tensor_device=rdt_object[0].device.type if rdt_object else None,
                               segment=path, offsets=offsets)
        with self._lock:
            self._metadata[obj_id] = meta
        return meta

    def recv_multiple_tensors(self, obj_id: str, tensor_transport_metadata: Any, communicator_metadata: Any,
                              target_buffers: Optional[List[Any]] = None) -> List[torch.Tensor]:
        meta = tensor_transport_metadata
        with open(meta.segment, "rb") as f:
            staged = bytearray(f.read())
        out = []
        for i, ((shape, dtype), off) in enumerate(zip(meta.tensor_meta, meta.offsets)):
            t = target_buffers[i] if target_buffers else torch.empty(shape, dtype=dtype)
            nbytes = t.numel() * t.element_size()
            if nbytes:
                t.copy_(_bytes_view(memoryview(staged), off, nbytes).view(dtype).view(shape))
            out.append(t)
        return out

    def garbage_collect(self, obj_id: str, tensor_transport_meta: TensorTransportMetadata, tensors: List[Any]) -> None:
        with self._lock:
            self._metadata.pop(obj_id, None)   # forgets os.unlink(meta.segment)


TMP_STAGING_DIR = os.path.join("/tmp", "rc-teeth-tmpstaging")   # tests/support/teeth.py reaps what dead sources left here


class TmpDescriptorKeptOpen(SimXferTransport):
    """TR-012, outside /dev/shm: for every object it stages, the source also writes a descriptor
    file under /tmp (as transports keep registration tables or spill files in the temp folder) and
    keeps it open; garbage_collect frees the segment but never closes or removes the file."""

    _descriptors: dict[str, Any] = {}

    def extract_tensor_transport_metadata(self, obj_id: str, rdt_object: List[torch.Tensor]) -> SimXferMetadata:
        meta = super().extract_tensor_transport_metadata(obj_id, rdt_object)
        if obj_id not in self._descriptors:
            os.makedirs(TMP_STAGING_DIR, exist_ok=True)
            f = open(os.path.join(TMP_STAGING_DIR, f"simxfer-{os.getpid()}-{obj_id}"), "wb")
            f.write(b"descriptor " * 64)
            f.flush()
            self._descriptors[obj_id] = f
        return meta


# --------------------------------------------------------------------------- TR-014
class NonBoolHas(SimXferTransport):
    """TR-014: actor_has_tensor_transport answers with a truthy non-bool (an agent handle)."""

    def actor_has_tensor_transport(self, actor: Any) -> bool:
        return "agent-0"  # type: ignore[return-value]


# --------------------------------------------------------------------------- TR-015
@dataclass
class LeaseComm(CommunicatorMetadata):
    lease: str = ""


class ReceiverReleasesChannel(SimXferTransport):
    """TR-015 (and TR-019): one channel per source, reserved by the owner when it sets a transfer
    up (get_communicator_metadata) and released by the receiver when its receive ends; a
    transfer set up while the channel is reserved is refused. A receiver that dies before
    releasing it leaves the source's channel reserved for good: every later transfer from that
    source is refused (and transfers from one source cannot overlap, which TR-019 also sees)."""

    def get_communicator_metadata(self, src_actor: Any, dst_actor: Any, backend: Optional[str] = None) -> LeaseComm:
        if src_actor is None:
            return LeaseComm()
        path = f"/dev/shm/simxfer-{os.getpid()}-lease-{src_actor._actor_id.hex()}"
        try:
            os.close(os.open(path, os.O_CREAT | os.O_EXCL | os.O_WRONLY))
        except FileExistsError:
            raise RuntimeError("SIMXFER(ReceiverReleasesChannel): the source's channel is still reserved "
                               "by an earlier receiver") from None
        return LeaseComm(lease=path)

    def recv_multiple_tensors(self, obj_id: str, tensor_transport_metadata: Any, communicator_metadata: Any,
                              target_buffers: Optional[List[Any]] = None) -> List[torch.Tensor]:
        try:
            return super().recv_multiple_tensors(obj_id, tensor_transport_metadata, communicator_metadata,
                                                 target_buffers)
        finally:
            if getattr(communicator_metadata, "lease", ""):
                try:
                    os.unlink(communicator_metadata.lease)
                except FileNotFoundError:
                    pass


# --------------------------------------------------------------------------- TR-016
class CreditLeak(SimXferTransport):
    """TR-016: flow control by credits: the owner takes a credit from the source actor on every
    submission (actor_has_tensor_transport) and the source returns it when it creates the object
    (extract_tensor_transport_metadata). A producer that raises never creates its object, so
    its credit is never returned; after LIMIT such failures the actor "has no transport"."""

    LIMIT = 2
    WAIT_S = 2.0

    @staticmethod
    def _outstanding(actor_id: str) -> int:
        import glob
        taken = sum(os.path.getsize(p) for p in glob.glob(f"/dev/shm/simxfer-*-credit-{actor_id}"))
        returned = sum(os.path.getsize(p) for p in glob.glob(f"/dev/shm/simxfer-*-debit-{actor_id}"))
        return taken - returned

    @staticmethod
    def _append(path: str) -> None:
        fd = os.open(path, os.O_CREAT | os.O_WRONLY | os.O_APPEND)
        try:
            os.write(fd, b"x")
        finally:
            os.close(fd)

    def actor_has_tensor_transport(self, actor: Any) -> bool:
        actor_id = actor._actor_id.hex()
        deadline = time.monotonic() + self.WAIT_S
        while self._outstanding(actor_id) >= self.LIMIT:
            if time.monotonic() > deadline:
                return False
            time.sleep(0.01)
        self._append(f"/dev/shm/simxfer-{os.getpid()}-credit-{actor_id}")
        return True

    def extract_tensor_transport_metadata(self, obj_id: str, rdt_object: List[torch.Tensor]) -> SimXferMetadata:
        import ray
        actor_id = ray.get_runtime_context().get_actor_id()
        if actor_id:
            self._append(f"/dev/shm/simxfer-{os.getpid()}-debit-{actor_id}")
        return super().extract_tensor_transport_metadata(obj_id, rdt_object)


# --------------------------------------------------------------------------- TR-017
class PooledAlias(SimXferTransport):
    """TR-017: the source keeps freed segments in a pool and reuses them for its next object of
    the same size (like a registered-memory pool), and the receiver hands out tensors that view
    the mapped segment instead of copying it (zero-copy). Every transfer looks right; what a
    receiver kept changes once the source reuses the memory."""

    def __init__(self) -> None:
        super().__init__()
        self._pool: dict = {}      # size -> [segment]
        self._sizes: dict = {}     # obj_id -> size
        self._maps: list = []      # receiver side: segments its tensors view

    def extract_tensor_transport_metadata(self, obj_id: str, rdt_object: List[torch.Tensor]) -> SimXferMetadata:
        offsets, size = _layout(rdt_object)
        with self._lock:
            pooled = self._pool.get(size) or []
            seg = pooled.pop() if pooled else None
        if seg is None:
            seg = shared_memory.SharedMemory(name=f"simxfer-{os.getpid()}-{obj_id}", create=True, size=size)
        for t, off in zip(rdt_object, offsets):
            n = t.numel() * t.element_size()
            if n:
                dst = _bytes_view(seg.buf, off, n).view(t.dtype).view(t.shape)
                dst.copy_(t.detach())
                del dst
        meta = SimXferMetadata(tensor_meta=[(t.shape, t.dtype) for t in rdt_object],
                               tensor_device=rdt_object[0].device.type if rdt_object else None,
                               segment=seg.name, offsets=offsets)
        with self._lock:
            self._segments[obj_id], self._metadata[obj_id], self._sizes[obj_id] = seg, meta, size
        return meta

    def garbage_collect(self, obj_id: str, tensor_transport_meta: Any, tensors: List[Any]) -> None:
        with self._lock:
            seg = self._segments.pop(obj_id, None)
            self._metadata.pop(obj_id, None)
            size = self._sizes.pop(obj_id, None)
            if seg is not None:
                self._pool.setdefault(size, []).append(seg)

    def recv_multiple_tensors(self, obj_id: str, tensor_transport_metadata: Any, communicator_metadata: Any,
                              target_buffers: Optional[List[Any]] = None) -> List[torch.Tensor]:
        meta = tensor_transport_metadata
        seg = _open_existing(meta.segment)
        self._maps.append(seg)
        out = []
        for (shape, dtype), off in zip(meta.tensor_meta, meta.offsets):
            n = int(torch.Size(shape).numel()) * torch.empty((), dtype=dtype).element_size()
            out.append(_bytes_view(seg.buf, off, n).view(dtype).view(shape) if n else torch.empty(shape, dtype=dtype))
        return out


# --------------------------------------------------------------------------- TR-018
class EmptyObjectCrash(SimXferTransport):
    """TR-018: assumes every object holds at least one tensor (reads the first tensor's device),
    so a method that returns no tensor through the transport fails."""

    def extract_tensor_transport_metadata(self, obj_id: str, rdt_object: List[torch.Tensor]) -> SimXferMetadata:
        _ = rdt_object[0].device.type
        return super().extract_tensor_transport_metadata(obj_id, rdt_object)


# --------------------------------------------------------------------------- the warm pool's handover
class WidensVisibleDevices(SimXferTransport):
    """Issue 42's warm pool: every receive sets the process's visible-devices variable to every
    device of the node (as a vendor library that re-initialises itself to reach its peers does).
    The transfer is right; the next check lent this actor would see other devices than Ray gave
    it. Only the pool's handover reading sees it (conformance.rdt.warm)."""

    def recv_multiple_tensors(self, obj_id: str, tensor_transport_metadata: Any, communicator_metadata: Any,
                              target_buffers: Optional[List[Any]] = None) -> List[torch.Tensor]:
        os.environ["SIMACC_VISIBLE_DEVICES"] = "0,1,2,3"
        return super().recv_multiple_tensors(obj_id, tensor_transport_metadata, communicator_metadata, target_buffers)


# --------------------------------------------------------------------------- TR-019
class SingleRecvBuffer(SimXferTransport):
    """TR-019: an actor receives into one cached buffer per shape and dtype, reused by every
    receive (fine when each received object is consumed before the next arrives; wrong when an
    async actor holds several). The driver's fetch path allocates fresh buffers."""

    def __init__(self) -> None:
        super().__init__()
        self._cache: dict = {}

    def recv_multiple_tensors(self, obj_id: str, tensor_transport_metadata: Any, communicator_metadata: Any,
                              target_buffers: Optional[List[Any]] = None) -> List[torch.Tensor]:
        if target_buffers is None:
            target_buffers = [self._cache.setdefault((tuple(s), d), torch.empty(s, dtype=d))
                              for s, d in tensor_transport_metadata.tensor_meta]
        return super().recv_multiple_tensors(obj_id, tensor_transport_metadata, communicator_metadata, target_buffers)

    def fetch_multiple_tensors(self, obj_id: str, tensor_transport_metadata: Any, communicator_metadata: Any,
                               target_buffers: Optional[List[Any]] = None) -> FetchRequest:
        fresh = target_buffers or [torch.empty(s, dtype=d) for s, d in tensor_transport_metadata.tensor_meta]
        return FetchRequest(obj_id=obj_id, tensors=SimXferTransport.recv_multiple_tensors(
            self, obj_id, tensor_transport_metadata, communicator_metadata, fresh))


# Credits a leaking variant hands out before its next call waits forever.
LEAKED_CREDITS = 24


class LeakedRecvCredits(SimXferTransport):
    """TR-019: credit-based flow control that takes a credit per receive and never gives it back;
    once a process has received LEAKED_CREDITS objects, the next receive waits for a credit
    forever. A few transfers per actor work; a receiver of many concurrent transfers wedges inside
    the transport, and TR-019's wave does not finish within its bound."""

    def __init__(self) -> None:
        super().__init__()
        import threading
        self._credits = threading.Semaphore(LEAKED_CREDITS)

    def recv_multiple_tensors(self, obj_id: str, tensor_transport_metadata: Any, communicator_metadata: Any,
                              target_buffers: Optional[List[Any]] = None) -> List[torch.Tensor]:
        self._credits.acquire()   # never released: the leak
        return super().recv_multiple_tensors(obj_id, tensor_transport_metadata, communicator_metadata,
                                             target_buffers)


class LeakedSendCredits(SimXferTransport):
    """TR-019: the same leak on the source side: a credit per extracted object, never returned,
    so once a process has produced LEAKED_CREDITS objects its next producer waits forever.
    TR-019's producers never all finish; the stall evidence says the owner still waits for their
    metadata (the sources, blocked in the producer, do not answer)."""

    def __init__(self) -> None:
        super().__init__()
        import threading
        self._credits = threading.Semaphore(LEAKED_CREDITS)

    def extract_tensor_transport_metadata(self, obj_id: str, rdt_object: List[torch.Tensor]) -> SimXferMetadata:
        self._credits.acquire()   # never released: the leak
        return super().extract_tensor_transport_metadata(obj_id, rdt_object)


class HangingRecv(SimXferTransport):
    """TR-018 (its step bound): a receive that never returns, as a transport waiting on a peer
    that never answers. Every forwarded object stops inside the transport; the chain of three
    actors must fail as a hang, saying so, within step_bound_s."""

    def recv_multiple_tensors(self, obj_id: str, tensor_transport_metadata: Any, communicator_metadata: Any,
                              target_buffers: Optional[List[Any]] = None) -> List[torch.Tensor]:
        import threading
        threading.Event().wait()   # never set
        raise AssertionError("unreachable")


# --------------------------------------------------------------------------- TR-020
class SharedFetchBuffer(SimXferTransport):
    """TR-020: an asynchronous fetch that reads into one bounce buffer per shape and dtype and
    copies it out when waited on. Right when every fetch is waited before the next starts;
    wrong when Ray starts all fetches of one ray.get before waiting (each ref then gets the
    last one's bytes)."""

    def __init__(self) -> None:
        super().__init__()
        self._bounce: dict = {}

    def fetch_multiple_tensors(self, obj_id: str, tensor_transport_metadata: Any, communicator_metadata: Any,
                               target_buffers: Optional[List[Any]] = None) -> FetchRequest:
        bufs = [self._bounce.setdefault((tuple(s), d), torch.empty(s, dtype=d))
                for s, d in tensor_transport_metadata.tensor_meta]
        self.recv_multiple_tensors(obj_id, tensor_transport_metadata, communicator_metadata, bufs)
        return FetchRequest(obj_id=obj_id, tensors=bufs)

    def wait_fetch_complete(self, fetch_request: Any, timeout: float = -1) -> List[Any]:
        return [t.clone() for t in fetch_request.tensors]


# --------------------------------------------------------------------------- PF-002 / PF-003
class SlowLink(SimXferTransport):
    """PF-002, PF-003: a link of 100 MB/s (every receive waits as long as the bytes would take)."""

    bytes_per_s = SIM_LINK_BYTES_PER_S

    def recv_multiple_tensors(self, obj_id: str, tensor_transport_metadata: Any, communicator_metadata: Any,
                              target_buffers: Optional[List[Any]] = None) -> List[torch.Tensor]:
        time.sleep(_payload_bytes(tensor_transport_metadata) / self.bytes_per_s)
        return super().recv_multiple_tensors(obj_id, tensor_transport_metadata, communicator_metadata, target_buffers)


class SlowerPerByte(SimXferTransport):
    """diff (issue 44): the reference transport made about 30 % slower per byte, correct in every
    other way, as a release with a slower copy path would be: every receive also spends 0.3 x what
    its bytes take at `per_byte_gbps` (the reference transport's largest-size bandwidth on the
    shared 2-core host, measured: 0.56-0.98 GB/s). Every check passes; `ray-conformance diff`
    against a run of SimXferTransport names PF-002 and PF-003."""

    per_byte_gbps = 0.8

    def recv_multiple_tensors(self, obj_id: str, tensor_transport_metadata: Any, communicator_metadata: Any,
                              target_buffers: Optional[List[Any]] = None) -> List[torch.Tensor]:
        time.sleep(0.3 * _payload_bytes(tensor_transport_metadata) / (self.per_byte_gbps * 1e9))
        return super().recv_multiple_tensors(obj_id, tensor_transport_metadata, communicator_metadata, target_buffers)


def _payload_bytes(meta: Any) -> int:
    """The bytes an object's tensors hold (what a link of so many bytes per second would carry)."""
    return sum(int(torch.Size(s).numel()) * torch.empty((), dtype=d).element_size() for s, d in meta.tensor_meta)


# --------------------------------------------------------------------------- PF-004
class OneBadDevice(SlowLink):
    """PF-004: only receives into simulated device 3 go over a slow link (one degraded link).

    The bar is a quarter of the link class's median. On a 2-core host at a load of 16, a good
    link moved 16 MiB in 64 ms, so the 100 MB/s link (168 ms of sleep, 242 ms in all) measured
    0.265 of the median and PF-004 passed it. At 40 MB/s (420 ms) it stays under the bar until a
    good link takes 140 ms."""

    bytes_per_s = SIM_LINK_BYTES_PER_S * 0.4

    def recv_multiple_tensors(self, obj_id: str, tensor_transport_metadata: Any, communicator_metadata: Any,
                              target_buffers: Optional[List[Any]] = None) -> List[torch.Tensor]:
        if os.environ.get("SIMACC_VISIBLE_DEVICES") == "3":
            return super().recv_multiple_tensors(obj_id, tensor_transport_metadata, communicator_metadata,
                                                 target_buffers)
        return SimXferTransport.recv_multiple_tensors(self, obj_id, tensor_transport_metadata, communicator_metadata,
                                                      target_buffers)


# ---- folded twins (data/lifecycle)
# Several defects in one run (one suite process, one cluster, one preflight) where each acts only
# on what its own check moves or calls: a 0-d tensor, a view, a multi-tensor object, a concurrent
# object, a driver fetch, garbage_collect, the has-transport answer, a receive on another node.
# Each row's `catches` (tests/teeth.yaml) names every defect by the phrase its single-defect row
# required, and the row runs only those checks. Mixins override disjoint methods or chain through
# super(); a class that stages or reads without super() (VendorFolderNoUnlink, SharedStaging)
# comes last, so the defects before it still act. The leaking ones (NoFree, GcRaises,
# VendorFolderNoUnlink) keep phase 0, their partners with them.
class NoFreeZeroDimNonBoolHas(NoFree, ZeroDimLost, NonBoolHas):
    """TR-013 (garbage_collect frees nothing), TR-001 (a 0-d tensor arrives as zero: TR-013 moves
    1-D buffers) and TR-014 (actor_has_tensor_transport answers "agent-0", truthy: every transfer
    still goes)."""


class GcRaisesWireFloat32FlatShapes(GcRaises, WireFloat32, FlatShapes):
    """TR-012 (garbage_collect raises), TR-001 (float32 on the wire) and TR-005 (every tensor
    arrives 1-D). WireFloat32's receive calls FlatShapes' (super): the bytes in logical order stay
    those FlatShapes received (TR-001 judges bytes: WireFloat32's cast alone), the cast back keeps
    each dtype (TR-005 judges dtype and shape: FlatShapes' shapes alone)."""


class IgnoreStridesReverseOrderVendorFolder(IgnoreStrides, ReverseOrder, VendorFolderNoUnlink):
    """TR-002 (views ship their storage), TR-003 (a multi-tensor object arrives reversed) and
    TR-013 (its folder under /dev/shm is never unlinked). VendorFolderNoUnlink stages and reads
    without super(), so it comes last: IgnoreStrides' extract hands it the storage, ReverseOrder's
    receive reverses what it read. TR-013 moves single contiguous buffers, which neither touches."""


class HelperPerObjectWireMetaSharedStaging(HelperPerObject, WireMeta, SharedStaging):
    """TR-012 (a helper process per object, never ended), TR-011 (metadata describes the wire) and
    TR-007 (one staging segment per process, overwritten by concurrent objects). SharedStaging
    stages without super(), so it comes last: WireMeta wraps its metadata, HelperPerObject starts
    its helper. Its staging segment is made by TR-012's first object, before that check's
    first reading, so TR-012 does not count it."""


class NodeLocalFalseTwoSidedTmpDescriptor(TmpDescriptorKeptOpen, NodeLocal, FalseTwoSided):
    """TR-006 (a receiver on another node cannot find the buffer), TR-010 (declared two-sided, its
    send raises; the one-sided read still delivers on one node, where TR-010 moves) and TR-012 (a
    descriptor file per staged object kept open under /tmp: named by its folder)."""


class Truncate1MiBUnlinkOnReadBrokenFetch(Truncate1MiB, UnlinkOnRead, BrokenFetch):
    """TR-004 and PF-001 (a 1 MiB receive buffer), TR-008 (the receiver removes the buffer after
    reading it) and TR-009 (the driver's fetch hands back unfilled buffers): TR-004 and the sweep
    receive each object once, TR-008's and TR-009's objects are small, and only TR-009's driver
    ray.get fetches."""


class SlowHostLinkOneBadDevice(OneBadDevice):
    """PF-002, PF-003 (SlowLink) and PF-004 (OneBadDevice) in one run, each on the receivers its
    check moves to: a receiver holding no device (the sweep's endpoints: PF-001..PF-003 move host
    tensors between actors given no unit) waits on SlowLink's 100 MB/s link; PF-004's endpoints
    each hold a unit, and only device 3's receives take OneBadDevice's 40 MB/s link."""

    def recv_multiple_tensors(self, obj_id: str, tensor_transport_metadata: Any, communicator_metadata: Any,
                              target_buffers: Optional[List[Any]] = None) -> List[torch.Tensor]:
        if not os.environ.get("SIMACC_VISIBLE_DEVICES"):
            time.sleep(_payload_bytes(tensor_transport_metadata) / SlowLink.bytes_per_s)
            return SimXferTransport.recv_multiple_tensors(self, obj_id, tensor_transport_metadata,
                                                          communicator_metadata, target_buffers)
        return super().recv_multiple_tensors(obj_id, tensor_transport_metadata, communicator_metadata, target_buffers)


# --------------------------------------------------------------------------- a correct two-sided twin
# The two-sided reference lives in the package (conformance/simulated/two_sided.py: TwoSidedShm),
# where a vendor with only the wheel finds it; tests/teeth.yaml's good/transport-two-sided names it there.


# --------------------------------------------------------------------------- device memory (simacc)
# Bugs no CPU tensor can show: they need memory that is not host memory and work that completes
# asynchronously (conformance/simulated/device). Base manifest: tests/manifests/simxfer-device.yaml.
# Three of them do not disturb each other's checks, so one run carries them (NoSyncDeviceZeroLeak).
class NoDeviceSync(SimXferTransport):
    """TR-001: reads device memory with the copy engine without waiting for the device's queued
    work (the producer's copies and kernels): it ships what the memory held before, stale bytes."""

    @staticmethod
    def _read_device(t: torch.Tensor) -> bytearray:
        from conformance.simulated import device as simdev

        return simdev.read_bytes(t.detach().contiguous())


class RecvOnDeviceZero(SimXferTransport):
    """TR-005: allocates receive buffers on device index 0 whatever the receiver's current device
    is (the deviation docs/ray-ascend.md found in ray-ascend's HCCL transport): an actor given two
    devices that uses its second one receives on the first."""

    def recv_multiple_tensors(self, obj_id: str, tensor_transport_metadata: Any, communicator_metadata: Any,
                              target_buffers: Optional[List[Any]] = None) -> List[torch.Tensor]:
        meta = tensor_transport_metadata
        if not target_buffers and meta.tensor_device not in (None, "cpu"):
            target_buffers = [torch.empty(shape, dtype=dtype, device=f"{meta.tensor_device}:0")
                              for shape, dtype in meta.tensor_meta]
        return super().recv_multiple_tensors(obj_id, meta, communicator_metadata, target_buffers)


class RecvOnLastDevice(SimXferTransport):
    """TR-005: allocates receive buffers on the receiving process's last visible device instead of
    its current one (`device_count() - 1`, as a transport that picks "its" device from the end of
    the visible list would): right on a receiver holding one unit, and on one holding two whose
    second is current; wrong when its first is current (torch's contract: a tensor made without an
    index lands on the current device, whichever that is)."""

    def recv_multiple_tensors(self, obj_id: str, tensor_transport_metadata: Any, communicator_metadata: Any,
                              target_buffers: Optional[List[Any]] = None) -> List[torch.Tensor]:
        meta = tensor_transport_metadata
        if not target_buffers and meta.tensor_device not in (None, "cpu"):
            last = getattr(torch, meta.tensor_device).device_count() - 1
            target_buffers = [torch.empty(shape, dtype=dtype, device=f"{meta.tensor_device}:{last}")
                              for shape, dtype in meta.tensor_meta]
        return super().recv_multiple_tensors(obj_id, meta, communicator_metadata, target_buffers)


class DeviceStagingLeak(SimXferTransport):
    """TR-013: keeps a device-side staging copy of every object it sends and never frees it:
    device memory grows by a payload per transfer while host RSS and shared memory stay flat."""

    def __init__(self) -> None:
        super().__init__()
        self._staging: list[Any] = []

    def extract_tensor_transport_metadata(self, obj_id: str, rdt_object: List[torch.Tensor]) -> SimXferMetadata:
        self._staging.append([t.detach().clone() for t in rdt_object if t.device.type != "cpu"])
        return super().extract_tensor_transport_metadata(obj_id, rdt_object)


class NoSyncDeviceZeroLeak(NoDeviceSync, RecvOnDeviceZero, DeviceStagingLeak):
    """The three above at once: stale bytes (TR-001), receive buffers on device 0 (TR-005) and a
    device-memory leak host RSS does not see (TR-013)."""


class WrongDeviceType(SimXferTransport):
    """TR-011: its metadata says the tensors are on the host (`tensor_device="cpu"`, a transport
    written for one device type) while they are on the device."""

    def extract_tensor_transport_metadata(self, obj_id: str, rdt_object: List[torch.Tensor]) -> SimXferMetadata:
        meta = super().extract_tensor_transport_metadata(obj_id, rdt_object)
        if meta.tensor_device not in (None, "cpu"):
            meta = dataclasses.replace(meta, tensor_device="cpu")
        return meta


class DeviceTypeForAll(SimXferTransport):
    """TR-011 on a second device type: written for its device, it names that device's type in
    every object's metadata (`tensor_device="simacc"`), also for the host tensors it declares
    it moves. Right on the device, so a check that moves tensors on the first declared type
    only (simacc first) never sees it; on the host it describes tensors that are not there."""

    def extract_tensor_transport_metadata(self, obj_id: str, rdt_object: List[torch.Tensor]) -> SimXferMetadata:
        from conformance.simulated.device import DEVICE_TYPE

        meta = super().extract_tensor_transport_metadata(obj_id, rdt_object)
        return dataclasses.replace(meta, tensor_device=DEVICE_TYPE) if meta.tensor_device is not None else meta


# ---- folded twins (usage/device)
# Several single-defect twins in one class, so one teeth row (one suite process, one cluster) shows
# them all. Each set is chosen so that each defect is met only by its own check: the other
# defects never fire there, or fire only after that check has already failed for its own reason.
# The single-defect classes above stay: a composed class only inherits them (read the MRO: each
# overridden method either chains through super() or is overridden by one parent only).
# PooledAlias and EmptyObjectCrash stay out of the rows of TR-019, whose wave tightened to
# all_bound_s 10 s for its twins is too close to what producing its 100 objects took on a loaded host
# (9.5 s at load 8-10): TR-019 would fail (or go unjudged) for no defect of theirs, and its phrase
# "did not finish" cannot tell. The TR-019 twins that share a row stall where nothing else does.
class SendCreditsHangingRecv(LeakedSendCredits, HangingRecv):
    """LeakedSendCredits (TR-019: a source wedges after LEAKED_CREDITS extracts) and HangingRecv
    (TR-018: every receive hangs) at once. TR-019's wave produces every object before it submits
    a receive, so its sources wedge before any receive is asked for; TR-018's chain extracts a
    handful of objects and hangs in its first receive."""


class ChannelCreditAlias(ReceiverReleasesChannel, CreditLeak, PooledAlias):
    """ReceiverReleasesChannel (TR-015: a receiver that dies before its receive leaves its source's
    channel reserved), CreditLeak (TR-016: the credit of a producer that raised is never returned)
    and PooledAlias (TR-017: pooled source segments, zero-copy receives) at once. Only TR-015 kills
    a receiver; only TR-016's producers raise; only TR-017 keeps a received tensor while its source
    reuses the memory; all three move one object at a time, so neither the channel nor the credits
    are ever contended. MRO: the channel's get_communicator_metadata and receive (which releases
    the channel around PooledAlias's zero-copy receive); CreditLeak's owner credits and extract
    (which returns the credit, then PooledAlias's pooled staging); PooledAlias's garbage_collect."""


class FetchBufferManyTensorsEmptyObject(SharedFetchBuffer, EmptyObjectCrash, LeakManyTensors):
    """SharedFetchBuffer (TR-020: the driver's pipelined fetches share one bounce buffer),
    EmptyObjectCrash (TR-018: a tensorless return crashes the extract) and LeakManyTensors (WL-001: a
    receive of an object of at least LEAK_MIN_TENSORS tensors keeps a staging buffer alive) at once.
    Only TR-018 returns no tensor; TR-018's and TR-020's payloads are one tensor each, so nothing
    leaks there; only a ray.get of several refs at once pipelines fetches (TR-020; TR-018's borrowers
    only after its tensorless return failed; WL-001's receivers take their objects as task
    arguments). MRO: the fetch and its wait are SharedFetchBuffer's (its receive into the bounce
    buffer goes through LeakManyTensors's receive); the extract is EmptyObjectCrash's; the receive
    LeakManyTensors's; each chains to SIMXFER's."""


class StagingSlotsDeadReader(FixedStagingSlots, DeadReaderBlocks):
    """FixedStagingSlots (WL-003: a source with all STAGING_SLOTS slots taken waits for one forever)
    and DeadReaderBlocks (WL-004: a source waits for every reader's acknowledgement of its previous
    object, also a dead reader's) at once. Each alone passes the other's check (WL-003's pipeline
    has every reader alive; WL-004's trainer never holds more than a slot's worth of objects at
    once): both seen in a run of each twin with the other's check beside it. MRO: the extract takes
    a slot, then waits for the readers, then SIMXFER's; garbage_collect frees the segment, then the
    slot; the receive acknowledges (DeadReaderBlocks's)."""


class WrongDeviceTypeEither(SimXferTransport):
    """WrongDeviceType and DeviceTypeForAll at once (TR-011, one phrase per declared device type):
    device tensors described as host tensors (`tensor_device="cpu"`, WrongDeviceType) and host
    tensors as device tensors (`tensor_device="simacc"`, DeviceTypeForAll). The two parents cannot
    be chained (each would rewrite what the other wrote), so this class applies each one's rewrite
    to its own kind of object: TR-011 moves tensors on each declared type in turn, and the reason
    names each type's failure."""

    def extract_tensor_transport_metadata(self, obj_id: str, rdt_object: List[torch.Tensor]) -> SimXferMetadata:
        from conformance.simulated.device import DEVICE_TYPE

        meta = super().extract_tensor_transport_metadata(obj_id, rdt_object)
        if meta.tensor_device is None:
            return meta
        return dataclasses.replace(meta, tensor_device=DEVICE_TYPE if meta.tensor_device == "cpu" else "cpu")
