"""Deliberately broken variants of the reference transport SIMXFER for the workload checks: bugs
no single-transfer check sees, since they need a workload's shape (the same receiver taking a
new version of the same weights every round, objects of many tensors).

Each class subclasses conformance.simulated.transport.SimXferTransport and breaks one promise;
tests/teeth.yaml runs the workload checks against each and names the check that must catch it.
"""
from __future__ import annotations

import os
import tempfile
import threading
from typing import Any, List, Optional

import torch
from ray.experimental.rdt import CommunicatorMetadata, TensorTransportMetadata

from conformance.simulated.transport import SimXferMetadata, SimXferTransport

LEAK_MIN_TENSORS = 16          # the leak shows only for objects of at least this many tensors
LEAK_BYTES_PER_OBJECT = 2 << 20   # twice WL-001's leak_per_round_bytes and more


def _claim(role: str) -> bool:
    """Whether this process is the first of the Ray session to claim `role` (one per session).

    The claim is a file inside the Ray session's own folder (where Ray keeps the session's logs),
    never beside it in the temp folder: a file there would outlive the run. Outside a Ray worker
    there is no session to share the role with, so the process claims it alone."""
    try:
        import ray

        node = ray._private.worker.global_worker.node
        session_dir = node.get_session_dir_path() if node is not None else None
    except Exception:  # noqa: BLE001 - outside a worker: no session
        session_dir = None
    if not session_dir or not os.path.isdir(session_dir):
        first = role not in _CLAIMED_ALONE
        _CLAIMED_ALONE.add(role)
        return first
    path = os.path.join(session_dir, f"conformance-{role}")
    try:
        os.close(os.open(path, os.O_CREAT | os.O_EXCL | os.O_WRONLY))
        return True
    except FileExistsError:
        return False


_CLAIMED_ALONE: set[str] = set()


# --------------------------------------------------------------------------- WL-001
class StaleForOne(SimXferTransport):
    """WL-001: one receiver (the first process of the session to receive) is served the previous
    object of the same layout from a receive cache: round k's ref delivers round k-1's weights."""

    def __init__(self) -> None:
        super().__init__()
        self._cache: dict[Any, List[torch.Tensor]] = {}
        self._stale: Optional[bool] = None
        self._cache_lock = threading.Lock()

    def recv_multiple_tensors(self, obj_id: str, tensor_transport_metadata: TensorTransportMetadata,
                              communicator_metadata: CommunicatorMetadata,
                              target_buffers: Optional[List[Any]] = None) -> List[torch.Tensor]:
        fresh = super().recv_multiple_tensors(obj_id, tensor_transport_metadata, communicator_metadata, target_buffers)
        with self._cache_lock:
            if self._stale is None:
                self._stale = _claim("stale-receiver")
            if not self._stale:
                return fresh
            assert isinstance(tensor_transport_metadata, SimXferMetadata)
            key = tuple((tuple(s), str(d)) for s, d in tensor_transport_metadata.tensor_meta)
            older = self._cache.get(key)
            self._cache[key] = [t.clone() for t in fresh]
        return [t.clone() for t in older] if older is not None else fresh


class LeakManyTensors(SimXferTransport):
    """WL-001: a receive keeps a staging buffer of LEAK_BYTES_PER_OBJECT alive for every object of
    at least LEAK_MIN_TENSORS tensors (a per-object descriptor table never freed): objects of one
    tensor, as every single-transfer check sends, leak nothing."""

    _kept: List[bytes] = []

    def recv_multiple_tensors(self, obj_id: str, tensor_transport_metadata: TensorTransportMetadata,
                              communicator_metadata: CommunicatorMetadata,
                              target_buffers: Optional[List[Any]] = None) -> List[torch.Tensor]:
        out = super().recv_multiple_tensors(obj_id, tensor_transport_metadata, communicator_metadata, target_buffers)
        if len(out) >= LEAK_MIN_TENSORS:
            LeakManyTensors._kept.append(bytes([len(out) % 251 + 1]) * LEAK_BYTES_PER_OBJECT)
        return out


class SlowerRelease(SimXferTransport):
    """No check's twin: a driver release that got slower (every receive waits SLOWER_RECEIVE_S
    more). docs/ci.md diffs a run of it against a run of SIMXFER to show a SKU's CI failing on
    WL-001's figures."""

    SLOWER_RECEIVE_S = 0.5

    def recv_multiple_tensors(self, obj_id: str, tensor_transport_metadata: TensorTransportMetadata,
                              communicator_metadata: CommunicatorMetadata,
                              target_buffers: Optional[List[Any]] = None) -> List[torch.Tensor]:
        import time

        time.sleep(self.SLOWER_RECEIVE_S)
        return super().recv_multiple_tensors(obj_id, tensor_transport_metadata, communicator_metadata, target_buffers)


# --------------------------------------------------------------------------- WL-003
STAGING_SLOTS = 3    # the twin's fixed pool: a fourth object in flight from one process waits


class FixedStagingSlots(SimXferTransport):
    """WL-003: a source stages every object in one of STAGING_SLOTS fixed slots, taken when Ray
    extracts the object and given back when Ray frees it (garbage_collect); a source with every
    slot taken waits for one, forever. One object at a time (every single-transfer check, WL-001's
    rounds) never notices; a pipeline that keeps more activations than slots in flight deadlocks."""

    def __init__(self) -> None:
        super().__init__()
        self._slots = threading.Semaphore(STAGING_SLOTS)
        self._holding: set[str] = set()

    def extract_tensor_transport_metadata(self, obj_id: str, rdt_object: List[torch.Tensor]) -> SimXferMetadata:
        with self._lock:
            again = obj_id in self._holding
        if not again:
            self._slots.acquire()   # the bug: no bound, no error; waits for a free slot
            with self._lock:
                self._holding.add(obj_id)
        return super().extract_tensor_transport_metadata(obj_id, rdt_object)

    def garbage_collect(self, obj_id: str, tensor_transport_meta: TensorTransportMetadata,
                        tensors: List[Any]) -> None:
        super().garbage_collect(obj_id, tensor_transport_meta, tensors)
        with self._lock:
            held = obj_id in self._holding
            self._holding.discard(obj_id)
        if held:
            self._slots.release()


# --------------------------------------------------------------------------- WL-004
def _session_dir() -> str:
    """The Ray session's folder (kept by Ray with its logs), so the twin leaves nothing of its own."""
    try:
        import ray

        node = ray._private.worker.global_worker.node
        if node is not None:
            return str(node.get_session_dir_path())
    except Exception:  # noqa: BLE001 - outside a worker: no session
        pass
    return os.path.join(tempfile.gettempdir(), "conformance-no-session")


class DeadReaderBlocks(SimXferTransport):
    """WL-004: credit-based reuse of a source's staging. Every process that received from a source
    becomes one of its readers and acknowledges each object it reads; before staging its next
    object a source waits until every reader acknowledged its previous one, forever, without asking
    whether the reader is still alive. Every reader alive (WL-001, every single-transfer check):
    nothing shows. A reader killed before it read an object: its source waits for an
    acknowledgement that never comes, and the trainer stops publishing."""

    POLL_S = 0.05

    def __init__(self) -> None:
        super().__init__()
        self._last_staged: Optional[str] = None

    @staticmethod
    def _readers(source_pid: int) -> str:
        path = os.path.join(_session_dir(), "conformance-readers", str(source_pid))
        os.makedirs(path, exist_ok=True)
        return path

    def extract_tensor_transport_metadata(self, obj_id: str, rdt_object: List[torch.Tensor]) -> SimXferMetadata:
        import time

        with self._lock:
            again = obj_id in self._metadata
        if not again and self._last_staged is not None:
            folder = self._readers(os.getpid())
            while True:   # the bug: a dead reader never acknowledges, and nothing asks whether it lives
                acked = []
                for name in os.listdir(folder):
                    try:
                        with open(os.path.join(folder, name)) as f:
                            acked.append(f.read() == self._last_staged)
                    except OSError:
                        acked.append(False)
                if all(acked):
                    break
                time.sleep(self.POLL_S)
        meta = super().extract_tensor_transport_metadata(obj_id, rdt_object)
        if not again:
            self._last_staged = obj_id
        return meta

    def recv_multiple_tensors(self, obj_id: str, tensor_transport_metadata: TensorTransportMetadata,
                              communicator_metadata: CommunicatorMetadata,
                              target_buffers: Optional[List[Any]] = None) -> List[torch.Tensor]:
        from conformance.simulated.transport import segment_creator

        out = super().recv_multiple_tensors(obj_id, tensor_transport_metadata, communicator_metadata, target_buffers)
        assert isinstance(tensor_transport_metadata, SimXferMetadata)
        source = segment_creator(tensor_transport_metadata.segment)
        if source is not None:
            ack = os.path.join(self._readers(source), str(os.getpid()))
            with open(ack + ".tmp", "w") as f:
                f.write(obj_id)
            os.replace(ack + ".tmp", ack)
        return out
