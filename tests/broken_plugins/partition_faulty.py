"""A SIMXFER variant that breaks only across a network partition (the FR-018 teeth).

`HandshakeForever`: before reading, the receiver opens a TCP connection to a handshake port
the source listens on (on the source's node IP); when that fails it waits for the peer's ack
forever, ignoring aborts — the "blocking read on a dead connection, no timeout" bug. Between reachable hosts it behaves exactly like
SIMXFER (the handshake succeeds at once); behind a partition the receive hangs.
"""
from __future__ import annotations

import dataclasses
import socket
import threading
import time
from typing import Any, List, Optional

from conformance.simulated.transport import SimXferMetadata, SimXferTransport


@dataclasses.dataclass
class HandshakeMetadata(SimXferMetadata):
    src_ip: str = ""
    src_port: int = 0


_listener: tuple[str, int] | None = None
_lock = threading.Lock()


def _listen() -> tuple[str, int]:
    """A per-process handshake port that accepts and closes (started on first use)."""
    global _listener
    with _lock:
        if _listener is None:
            import ray
            ip = ray.util.get_node_ip_address()
            srv = socket.socket()
            srv.bind((ip, 0))
            srv.listen(16)

            def serve() -> None:
                while True:
                    conn, _ = srv.accept()
                    conn.close()

            threading.Thread(target=serve, daemon=True).start()
            _listener = (ip, srv.getsockname()[1])
        return _listener


class HandshakeForever(SimXferTransport):
    def extract_tensor_transport_metadata(self, obj_id: str, rdt_object: List[Any]) -> Any:
        meta = super().extract_tensor_transport_metadata(obj_id, rdt_object)
        fields = {f.name: getattr(meta, f.name) for f in dataclasses.fields(SimXferMetadata)}
        ip, port = _listen()
        return HandshakeMetadata(**fields, src_ip=ip, src_port=port)

    def recv_multiple_tensors(self, obj_id: str, tensor_transport_metadata: Any, communicator_metadata: Any,
                              target_buffers: Optional[List[Any]] = None) -> List[Any]:
        ip, port = getattr(tensor_transport_metadata, "src_ip", ""), getattr(tensor_transport_metadata, "src_port", 0)
        if ip and port:
            try:
                socket.create_connection((ip, port), timeout=2).close()
            except OSError:
                while True:                # the bug: waits for an ack that never comes; ignores aborts
                    time.sleep(1)
        return super().recv_multiple_tensors(obj_id, tensor_transport_metadata, communicator_metadata,
                                             target_buffers)
