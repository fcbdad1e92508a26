"""A two-sided reference transport: the example for a transport whose source takes part in
every transfer (NCCL, GLOO, a TCP mesh), beside SIMXFER (conformance/simulated/transport.py),
the one-sided reference every other example subclasses.

Name it in a manifest to certify it, or read it before writing your own:

    transport:
      name: SIMXFER
      manager: "conformance.simulated.two_sided:TwoSidedShm"
      devices: [cpu]

How a two-sided transport differs (docs/transport.md, "The transport contract"):

* `is_one_sided()` is False, so Ray calls `send_multiple_tensors` on the **source** for every
  transfer, on its one `_ray_system` thread, before the receiver's `recv_multiple_tensors`.
  That thread also runs the actor's receives and frees: a send that **blocks until the peer has
  received** deadlocks as soon as two actors send to each other. So the send hands the data off
  and returns: it writes a fresh shared-memory segment for this transfer and then a "done"
  marker; the receive does the waiting, with a bound, and removes both once it has read them.
* `get_communicator_metadata` runs once per transfer on the owner (not on the actors): it names
  the transfer (here a fresh id), which both sides receive pickled.
* Nothing is staged when the producing method returns (`extract_tensor_transport_metadata` only
  describes the tensors), so `garbage_collect` has nothing to free.
* A `ray.get(ref)` of a two-sided object in the driver raises ValueError (Ray's rule, TR-009):
  the driver has no send to pair with.

It is a complete transport in the suite's own tests: `good/transport-two-sided` in
tests/teeth.yaml certifies it (data and usage checks), and tests/ray/test_transport_contract.py
observes through it which process and thread runs each method.
"""
from __future__ import annotations

import dataclasses
import os
import time
from dataclasses import dataclass
from multiprocessing import shared_memory
from typing import Any, List, Optional

import torch
from ray.actor import ActorHandle
from ray.experimental.rdt import CommunicatorMetadata, TensorTransportMetadata

from conformance.simulated.transport import SimXferMetadata, SimXferTransport, _bytes_view, _layout

RECEIVE_BOUND_S = 60.0   # how long a receive waits for its source's send before it raises
POLL_S = 0.001           # how often the receive looks for the "done" marker


@dataclass
class TransferComm(CommunicatorMetadata):
    transfer: str = ""


class TwoSidedShm(SimXferTransport):
    """A correct *two-sided* shared-memory transport. The source writes a fresh segment per
    transfer in send_multiple_tensors and then a "done" marker; the receiver waits for the
    marker, reads, and removes both. (A subclass of SIMXFER for its reading, device handling and
    abort; what makes it two-sided is below.)"""

    @staticmethod
    def is_one_sided() -> bool:
        return False

    def extract_tensor_transport_metadata(self, obj_id: str, rdt_object: List[torch.Tensor]) -> SimXferMetadata:
        offsets, _ = _layout(rdt_object)    # nothing is staged until a receiver asks
        return SimXferMetadata(tensor_meta=[(t.shape, t.dtype) for t in rdt_object],
                               tensor_device=rdt_object[0].device.type if rdt_object else None,
                               segment="", offsets=offsets)

    def get_communicator_metadata(self, src_actor: ActorHandle[Any], dst_actor: ActorHandle[Any], backend: Optional[str] = None) -> TransferComm:
        import uuid
        return TransferComm(transfer=uuid.uuid4().hex[:16])   # one segment per transfer

    def send_multiple_tensors(self, tensors: List[Any], tensor_transport_metadata: TensorTransportMetadata,
                              communicator_metadata: CommunicatorMetadata) -> None:
        from multiprocessing import resource_tracker
        assert isinstance(communicator_metadata, TransferComm), "TwoSidedShm got foreign communicator metadata"
        name = f"simxfer-{os.getpid()}-t{communicator_metadata.transfer}"
        offsets, size = _layout(tensors)
        seg = shared_memory.SharedMemory(name=name, create=True, size=size)
        buf = seg.buf
        assert buf is not None   # an open segment's buffer
        for t, off in zip(tensors, offsets):
            n = t.numel() * t.element_size()
            if n:
                dst = _bytes_view(buf, off, n).view(t.dtype).view(t.shape)
                dst.copy_(t)
                del dst
        del buf
        seg.close()
        done = shared_memory.SharedMemory(name=name + "-done", create=True, size=1)
        done.close()
        for n in (name, name + "-done"):       # the receiver owns and removes them
            resource_tracker.unregister("/" + n, "shared_memory")

    def recv_multiple_tensors(self, obj_id: str, tensor_transport_metadata: TensorTransportMetadata,
                              communicator_metadata: CommunicatorMetadata,
                              target_buffers: Optional[List[Any]] = None) -> List[torch.Tensor]:
        import glob
        assert isinstance(communicator_metadata, TransferComm), "TwoSidedShm got foreign communicator metadata"
        pattern = f"/dev/shm/simxfer-*-t{communicator_metadata.transfer}-done"
        deadline = time.monotonic() + RECEIVE_BOUND_S
        while not glob.glob(pattern):
            if obj_id in self._aborted or time.monotonic() > deadline:
                raise RuntimeError(f"TwoSidedShm: transfer {communicator_metadata.transfer} aborted or never sent")
            time.sleep(POLL_S)
        marker = os.path.basename(glob.glob(pattern)[0])
        name = marker[:-len("-done")]
        assert isinstance(tensor_transport_metadata, SimXferMetadata), "TwoSidedShm got foreign metadata"
        meta = dataclasses.replace(tensor_transport_metadata, segment=name)
        try:
            return super().recv_multiple_tensors(obj_id, meta, communicator_metadata, target_buffers)
        finally:
            for n in (name, marker):
                try:
                    os.unlink(f"/dev/shm/{n}")
                except FileNotFoundError:
                    pass

    def garbage_collect(self, obj_id: str, tensor_transport_meta: TensorTransportMetadata, tensors: List[Any]) -> None:
        pass   # nothing staged per object; receivers remove what they read
