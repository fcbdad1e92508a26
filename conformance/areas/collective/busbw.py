"""Bus bandwidth as nccl-tests defines it (pure).

algbw = bytes / time: what one rank's buffer moves per second. busbw scales it by the traffic the
op's best algorithm puts on the busiest link, so one figure compares with the hardware's link
bandwidth whatever the group size: allreduce 2(n-1)/n (reduce-scatter then all-gather, each
moving (n-1)/n of the buffer), allgather and reducescatter (n-1)/n, broadcast and reduce 1.
(nccl-tests, doc/PERFORMANCE.md.)
"""
from __future__ import annotations

BUS_FACTOR_OPS = ("allreduce", "allgather", "reducescatter", "broadcast", "reduce")


def bus_factor(op: str, world_size: int) -> float:
    n = world_size
    if op == "allreduce":
        return 2 * (n - 1) / n
    if op in ("allgather", "reducescatter"):
        return (n - 1) / n
    if op in ("broadcast", "reduce"):
        return 1.0
    raise ValueError(f"no bus factor for op {op!r}; expected one of {', '.join(BUS_FACTOR_OPS)}")


def busbw_gbps(op: str, world_size: int, nbytes: int, seconds: float) -> float:
    """GB/s (10^9 bytes per second) on the bus for one op of nbytes that took `seconds`."""
    return nbytes / seconds / 1e9 * bus_factor(op, world_size)
