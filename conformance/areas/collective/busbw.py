"""Bus bandwidth as nccl-tests defines it (pure).

algbw = bytes / time: what one rank's buffer moves per second. busbw scales it by the traffic the
op's best algorithm puts on the busiest link, so one figure compares with the hardware's link
bandwidth whatever the group size: allreduce 2(n-1)/n (reduce-scatter then all-gather, each
moving (n-1)/n of the buffer), allgather and reducescatter (n-1)/n, broadcast and reduce 1.
(nccl-tests, doc/PERFORMANCE.md.)
"""
from __future__ import annotations

import statistics
from typing import Any, Mapping, Sequence

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


def point_figures(op: str, nbytes: int, world_size: int, st: Mapping[str, Any], batch: int) -> dict[str, Any]:
    """CC-010's row for one op at one size, from its trials' conformance.measure.stats summary:
    algbw, busbw and its IQR, and every trial's busbw (`busbw_trials_gbps`, what diff's rank test
    compares)."""
    factor = bus_factor(op, world_size)
    return {"op": op, "bytes": nbytes, "world_size": world_size, "algbw_gbps": st["median_gbps"],
            "busbw_gbps": st["median_gbps"] * factor, "busbw_iqr_gbps": [q * factor for q in st["iqr_gbps"]],
            "trials": st["trials"], "busbw_trials_gbps": [g * factor for g in st["trials_gbps"]],
            "batch": batch, "cv": st["cv"], "cv_met": st.get("cv_met")}


def bandwidth_figures(rows: Sequence[dict[str, Any]], ops: Sequence[str], host: float, store_trials: Sequence[float],
                      store_bytes: int, link: float | None) -> dict[str, Any]:
    """CC-010's metrics: each op's peak over the sizes, the weaker op's busbw against the same run's
    host copy, object store (its median of `store_trials`; the figure diff gates is
    `object_store_fraction`, from the peak row's trials and the store's) and the declared link."""
    store = statistics.median(store_trials)
    for r in rows:
        r["host_copy_gbps"] = host
        r["object_store_gbps"] = store
    peaks = [max((r for r in rows if r["op"] == op), key=lambda r: r["busbw_gbps"]) for op in ops]
    weakest = min(peaks, key=lambda r: r["busbw_gbps"])
    return {"rows": list(rows), "peak_bytes": weakest["bytes"], "weakest_op": weakest["op"],
            "busbw_gbps": weakest["busbw_gbps"], "host_copy_gbps": host, "host_fraction": weakest["busbw_gbps"] / host,
            "object_store_gbps": store, "object_store_bytes": store_bytes,
            "object_store_fraction": weakest["busbw_gbps"] / store,
            "busbw_trials_gbps": weakest["busbw_trials_gbps"], "object_store_trials_gbps": list(store_trials),
            "nominal_link_gbps": float(link) if link else None,
            "link_fraction": weakest["busbw_gbps"] / float(link) if link else None}
