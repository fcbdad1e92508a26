"""The actors the transport-usage checks (TR-015..TR-020) move tensors between.

They extend the RDT harness's endpoint (`conformance.rdt.endpoint.Endpoint`: seeded
payloads, sha256 digests, armed receive faults, the tracing records) with what users do with
RDT refs beyond "produce, then consume once": producers that raise or are retried, tensors a
receiver keeps, actor-side `ray.put`, refs nested in lists, forwarding along a chain, a
tensorless return, and a long-running method. Importable by workers (by reference).
"""
from __future__ import annotations

import time
from typing import TYPE_CHECKING, Any

import ray

from conformance.rdt import manager_race
from conformance.rdt.endpoint import Endpoint
from conformance.rdt.payloads import build, describe, seeded

if TYPE_CHECKING:
    import torch


RETRIES = 1   # retries of `flaky` (Ray's test_rdt_retry_*: max_task_retries=1)
TENSORLESS = {"n": 3, "text": "no tensors here", "nested": [1.5, {"k": b"bytes"}]}


class UsagePeer(Endpoint):
    """One actor of a usage scenario (wrapped with ray.remote(enable_tensor_transport=True))."""

    def __init__(self, device: str = "cpu") -> None:
        super().__init__(device)
        self.kept: dict[str, Any] = {}
        self.attempts: dict[int, int] = {}
        self.put_refs: list[Any] = []

    def reset(self) -> int:
        """The endpoint's reset, and what users' refs this actor kept (conformance.rdt.warm)."""
        n = super().reset() + len(self.kept) + len(self.attempts) + len(self.put_refs)
        self.kept.clear()
        self.attempts.clear()
        self.put_refs.clear()
        return n

    # ------------------------------------------------------------------ producers
    def fail(self, message: str) -> Any:
        """A producer (called with the transport) that raises the application's error."""
        raise RuntimeError(message)

    @ray.method(max_task_retries=RETRIES, retry_exceptions=[ValueError])
    def flaky(self, nbytes: int, seed: int, failures: int) -> Any:
        """A producer Ray retries (RETRIES times, on ValueError) that raises ValueError on its
        first `failures` attempts, then returns."""
        n = self.attempts[seed] = self.attempts.get(seed, 0) + 1
        if n <= failures:
            raise ValueError(f"attempt {n} of producer {seed} failed on purpose")
        return self.make(seeded(nbytes, seed))

    def attempts_of(self, seed: int) -> int:
        return self.attempts.get(seed, 0)

    def forward(self, t: torch.Tensor) -> torch.Tensor:
        """Receive a tensor and return it again (called with the transport: the next hop)."""
        return t

    def tensorless(self) -> Any:
        """A return without any tensor (called with the transport)."""
        return TENSORLESS

    def echo(self, obj: object) -> Any:
        return obj

    def put_object(self, nbytes: int, seed: int, transport: str) -> list[Any]:
        """ray.put inside the actor with the transport; the ref is returned inside a list (so the
        caller borrows it) and kept here (this actor owns it)."""
        t = build(seeded(nbytes, seed), self.device)
        self.sent[seed] = describe(t)
        ref = ray.put(t, _tensor_transport=transport)
        self.put_refs.append(ref)
        return [ref]

    def drop_put_refs(self) -> int:
        n = len(self.put_refs)
        self.put_refs.clear()
        return n

    # ------------------------------------------------------------------ consumers
    def get_refs(self, refs: list[Any], timeout_s: float) -> list[dict[str, Any]]:
        """A borrower: ray.get each ref passed inside a list (one-sided transports)."""
        return [describe(ray.get(r, timeout=timeout_s)) for r in refs]

    def keep(self, key: str, t: torch.Tensor) -> dict[str, Any]:
        """Receive a tensor and keep it (the receiver owns it now); its digest as received."""
        self.kept[key] = t
        digest: dict[str, Any] = describe(t)
        return digest

    def kept_digest(self, key: str) -> dict[str, Any]:
        digest: dict[str, Any] = describe(self.kept[key])
        return digest

    # ------------------------------------------------------------------ state
    def busy(self, seconds: float) -> bool:
        """A long method on the actor's main thread."""
        time.sleep(seconds)
        return True


class AsyncPeer:
    """An asyncio actor (max_concurrency > 1): its tasks run and finish out of order."""

    def __init__(self, device: str = "cpu") -> None:
        self.device = device
        manager_race.settle()   # Ray's RDT manager, built before its event loops race to (manager_race)

    async def info(self) -> dict[str, Any]:
        import os
        return {"pid": os.getpid(), "node_id": ray.get_runtime_context().get_node_id()}

    async def make(self, case: dict[str, Any]) -> Any:
        return build(case, self.device)

    async def receive(self, t: torch.Tensor) -> dict[str, Any]:
        digest: dict[str, Any] = describe(t)
        return digest


class PlainPeer:
    """A receiver created *without* enable_tensor_transport (ray#66264)."""

    def __init__(self, device: str = "cpu") -> None:
        self.device = device
        manager_race.settle()   # Ray still builds its RDT manager here on first use: built once, before any task

    def info(self) -> dict[str, Any]:
        import os
        return {"pid": os.getpid()}

    def receive(self, t: torch.Tensor) -> dict[str, Any]:
        digest: dict[str, Any] = describe(t)
        return digest
