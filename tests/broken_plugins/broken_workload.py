"""Deliberately broken variants of the reference transport SIMXFER for the workload checks: bugs
no single-transfer check sees, since they need a workload's shape (the same receiver taking a
new version of the same weights every round, objects of many tensors).

Each class subclasses conformance.simulated.transport.SimXferTransport and breaks one promise;
tests/teeth.yaml runs the workload checks against each and names the check that must catch it.
"""
from __future__ import annotations

import os
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
