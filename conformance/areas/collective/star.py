"""CC-010's reference: the same op done by the simplest correct implementation over Ray's object
store, a star through one actor, which the suite runs itself in the same run, between the same
members.

Why a star and not one put/get: an allreduce over n members through any algorithm that is not a
ring moves about 2n tensors (each member's part in, the result out), and busbw's 2(n-1)/n factor
assumes a ring; holding a correct star-design backend (one rendezvous actor, the simplest design
and a plausible CPU fallback) to a single put/get of the same bytes failed it for its design, not
for a defect. The reference here does the op the backend did, at the sweep's largest size (where
a cost per byte dominates, not the star's own fixed costs), timed the same way (a batch of ops between two synchronisations, the slowest rank's time),
so the bar compares like with like: a backend that adds a fixed cost per byte of its own still
falls far below it, a correct star backend lands near it, and anything better than a star is
above it.

The star: every member puts its tensor in Ray's object store and hands the ref to the hub (an
async actor on rank 0's node); once every member's part of op k has come, the hub gets the parts,
sums them (allreduce) and puts the result once, or passes the root's ref on (broadcast, root 0);
every member gets the result zero-copy and copies it into its own tensor, in place.
"""
from __future__ import annotations

import asyncio
import time
from typing import Any

from conformance.handles import Actor


class StarHub:
    """The rendezvous actor (async: every member's call waits inside it for the others)."""

    def __init__(self, world_size: int) -> None:
        self.world_size = world_size
        self._rounds: dict[str, dict[str, Any]] = {}

    async def meet(self, key: str, rank: int, op: str, parts: list[Any]) -> list[Any]:
        """Member `rank`'s part of op `key` ([ref] or []); returns what every member gets: [ref of
        the result] (allreduce), [the root's ref] (broadcast), [] (a synchronisation)."""
        r = self._rounds.setdefault(key, {"parts": {}, "done": asyncio.Event(), "out": [], "left": 0})
        r["parts"][rank] = parts
        if len(r["parts"]) == self.world_size:
            r["out"] = await self._combine(op, r["parts"])
            r["done"].set()
        else:
            await r["done"].wait()
        r["left"] += 1
        if r["left"] == self.world_size:
            del self._rounds[key]
        return list(r["out"])

    async def _combine(self, op: str, parts: dict[int, list[Any]]) -> list[Any]:
        import ray

        if op == "broadcast":
            return list(parts[0])
        if op != "allreduce":
            return []
        arrays = await asyncio.gather(*[parts[rank][0] for rank in sorted(parts)])
        acc = arrays[0].copy()
        for a in arrays[1:]:
            acc += a
        return [ray.put(acc)]

    def ping(self) -> bool:
        return True


def timed(member: object, op: str, nbytes: int, iters: int, hub: Actor, rank: int, tag: str) -> float:
    """Seconds per op of the star reference for a float32 tensor of nbytes, after one warm-up, as
    CollectiveMember.timed times the backend (run on a member through CollectiveMember.call)."""
    import numpy as np
    import ray

    t = np.ones(max(1, nbytes // 4), dtype=np.float32)

    def once(key: str) -> None:
        mine = [ray.put(t)] if op == "allreduce" or rank == 0 else []
        out = ray.get(hub.meet.remote(f"{tag}.{key}", rank, op, mine))
        if out and (op == "allreduce" or rank != 0):
            got = ray.get(out[0])
            np.copyto(t, got)
            del got

    def sync(key: str) -> None:
        ray.get(hub.meet.remote(f"{tag}.{key}", rank, "sync", []))

    once("warm")
    sync("start")
    t0 = time.perf_counter()
    for i in range(iters):
        once(str(i))
    sync("end")
    return (time.perf_counter() - t0) / iters
