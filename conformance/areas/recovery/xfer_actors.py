"""The actor the transfer-recovery checks move tensors between (importable by workers).

Payloads are deterministic (seeded), and both ends report a sha256 digest of the bytes, so
"the receiver got the data" always means "bit-exact", whatever the transport did.
"""
from __future__ import annotations

import hashlib
import os
from typing import Any


def payload(nbytes: int, seed: int, device: str = "cpu") -> Any:
    import torch

    gen = torch.Generator().manual_seed(int(seed))
    t = torch.randint(0, 256, (int(nbytes),), dtype=torch.uint8, generator=gen)
    return t if device == "cpu" else t.to(device)


def digest(t: Any) -> dict[str, Any]:
    import torch

    flat = t.detach().contiguous().cpu().reshape(-1).view(torch.uint8)
    return {"sha256": hashlib.sha256(flat.numpy().tobytes()).hexdigest(), "nbytes": int(flat.numel()),
            "dtype": str(t.dtype), "shape": list(t.shape)}


class Peer:
    """One end of a transfer (wrapped with ray.remote(enable_tensor_transport=True))."""

    def __init__(self, device: str = "cpu") -> None:
        self.device = device
        self.sent: dict[int, dict[str, Any]] = {}

    def info(self) -> dict[str, Any]:
        import ray

        return {"pid": os.getpid(), "node_id": ray.get_runtime_context().get_node_id()}

    def make(self, nbytes: int, seed: int) -> Any:
        """Producer (called with .options(tensor_transport=...)): a seeded payload."""
        t = payload(nbytes, seed, self.device)
        self.sent[seed] = digest(t)
        return t

    def sent_digest(self, seed: int) -> dict[str, Any] | None:
        return self.sent.get(seed)

    def receive(self, t: Any) -> dict[str, Any]:
        """Consumer: the digest of what arrived."""
        return digest(t)

    def arm(self, kind: str, params: dict[str, Any]) -> None:
        from conformance.areas.recovery import xfer_faults
        xfer_faults.arm(kind, **params)

    def disarm(self) -> int:
        from conformance.areas.recovery import xfer_faults
        return xfer_faults.disarm()

    def calls(self, transport: str) -> list[dict[str, Any]]:
        from conformance.areas.transport import tracing
        return tracing.calls(transport)

    def crash(self) -> None:
        os._exit(1)
