"""nccl-tests-style measurement of a transport: size sweep with baselines, and a pairwise matrix.

Method (the same in the performance checks and in `ray-conformance bench-transport`):

* one transfer = the source returns a cached buffer through the transport and the destination
  takes it as an argument (`Endpoint.sink` touches nothing). It is timed end to end from the
  driver, so it includes what a user waits for: metadata extraction, Ray's two task
  round-trips and the move itself. After each transfer the driver waits until the source has
  freed the object, outside the timed interval, so transfers do not overlap;
* per size: `warmup` untimed transfers, then `trials` (>= 5) timed ones; the median is the
  figure, min/max and the inter-quartile range are its spread; one extra transfer per size
  compares digests (correctness gates, performance grades);
* baselines in the same run and on the same endpoints, so every figure is also a ratio: Ray's
  object store path (the same two tasks without tensor_transport) and a local torch clone on
  the endpoint's device (the memory-copy ceiling of one endpoint);
* pairwise matrix for N endpoints: N-1 rounds (N even; a bye when odd) of disjoint pairs
  chosen by the circle method; all pairs of a round run at once, in both directions, so N^2
  transfers take N-1 rounds instead of N^2 serial runs.

Bandwidths are GB/s (10^9 bytes per second).
"""
from __future__ import annotations

import statistics
import time
from typing import Any, Callable

from conformance.transport import payloads
from conformance.transport.context import TransferError, ray_get
from conformance.transport.pool import Endpoints

WARMUP = 2
TRIALS = 5
SETTLE_TIMEOUT_S = 20.0  # knob: hang guard while a benchmark settles
HOST_COPY_MIN_BYTES = 64 * 1024 * 1024   # beyond CPU caches: the host's sustained copy bandwidth


def stats(nbytes: int, times: list[float]) -> dict[str, Any]:
    """Median/min/max time and bandwidth of the trials, plus the bandwidth IQR."""
    bw = sorted(nbytes / t / 1e9 for t in times)
    q = statistics.quantiles(bw, n=4) if len(bw) >= 2 else [bw[0]] * 3
    med = statistics.median(times)
    return {"median_s": med, "min_s": min(times), "max_s": max(times), "median_gbps": nbytes / med / 1e9,
            "min_gbps": bw[0], "max_gbps": bw[-1], "iqr_gbps": [q[0], q[2]], "trials": len(times)}


def _held(src: Any) -> int:
    return int(ray_get(src.rdt_objects.remote(), what="RDT store size"))


def _settle(src: Any, baseline: int = 0, timeout_s: float = SETTLE_TIMEOUT_S) -> None:
    """Wait until the source holds no more RDT objects than before the measurement (the
    previous transfer was freed)."""
    deadline = time.monotonic() + timeout_s
    while _held(src) > baseline:
        if time.monotonic() > deadline:
            raise TransferError(f"the source still holds RDT objects {timeout_s:.0f}s after the refs were dropped")
        time.sleep(0.002)


def time_transfers(src: Any, dst: Any, nbytes: int, transport: str | None, warmup: int, trials: int,
                   timeout: float) -> list[float]:
    """Seconds per end-to-end transfer (transport=None: Ray's object store path)."""
    ray_get(src.prepare_buffer.remote(nbytes), timeout, "buffer allocation")
    baseline = _held(src)
    producer = src.buffer if transport is None else src.buffer.options(tensor_transport=transport)
    times = []
    for i in range(warmup + trials):
        t0 = time.perf_counter()
        ref = producer.remote(nbytes)
        try:
            ray_get(dst.sink.remote(ref), timeout, f"{nbytes}-byte transfer")
        finally:
            del ref
        elapsed = time.perf_counter() - t0
        if transport is not None:
            _settle(src, baseline)
        if i >= warmup:
            times.append(elapsed)
    return times


def verify(src: Any, dst: Any, nbytes: int, transport: str, timeout: float) -> list[str]:
    """Differences between the source's buffer and what one transfer delivered ([] = exact)."""
    baseline = _held(src)
    ref = src.buffer.options(tensor_transport=transport).remote(nbytes)
    try:
        got = ray_get(dst.receive.remote(ref), timeout, f"{nbytes}-byte verification transfer")
        sent = ray_get(src.sent_digest.remote(f"buffer/{nbytes}"), timeout, "digest")
    finally:
        del ref
    _settle(src, baseline)
    return payloads.compare(sent, got)


def sweep(transport: str, eps: Endpoints, sizes: list[int], *, object_store_limit: int | None,
          warmup: int = WARMUP, trials: int = TRIALS, progress: Callable[[str], None] | None = None) -> dict[str, Any]:
    """Bandwidth/latency per size from endpoint 0 to endpoint 1, with baselines and ratios."""
    src, dst = eps.actors[0], eps.actors[1]
    rows = []
    for n in sizes:
        timeout = max(60.0, n / 50e6)
        ray_get(src.prepare_buffer.remote(n), timeout, "buffer allocation")
        row: dict[str, Any] = {"bytes": n}
        diff = verify(src, dst, n, transport, timeout)
        row["verified"] = not diff
        if diff:
            row["difference"] = diff[0]
        row["rdt"] = stats(n, time_transfers(src, dst, n, transport, warmup, trials, timeout))
        if object_store_limit is None or n <= object_store_limit:
            row["object_store"] = stats(n, time_transfers(src, dst, n, None, warmup, trials, timeout))
            row["ratio_to_object_store"] = row["rdt"]["median_gbps"] / row["object_store"]["median_gbps"]
        else:
            row["object_store_skipped"] = f"{n} bytes exceeds the object-store budget {object_store_limit}"
        row["clone"] = stats(n, ray_get(src.clone_times.remote(n, trials, warmup), timeout, "clone baseline"))
        row["ratio_to_clone"] = row["rdt"]["median_gbps"] / row["clone"]["median_gbps"]
        ray_get(src.drop_buffers.remote(), timeout, "buffer release")
        rows.append(row)
        if progress:
            progress(f"{n} bytes: {row['rdt']['median_gbps']:.3g} GB/s")
    result = {"rows": rows, "warmup": warmup, "trials": trials, "pair": "endpoint 0 → endpoint 1"}
    result["host_copy"] = host_copy(src, sizes[-1], rows[-1]["clone"], warmup, trials)
    return result


def host_copy(src: Any, top: int, top_clone: dict[str, Any], warmup: int, trials: int) -> dict[str, Any]:
    """The source host's sustained copy bandwidth: clone of max(top, 64 MiB) bytes.

    The reference for host-memory transports (PF-002). A clone small enough to stay in the CPU
    caches runs at cache speed, which no transfer between processes can approach, so below
    64 MiB a separate 64 MiB clone is measured.
    """
    if top >= HOST_COPY_MIN_BYTES:
        return dict(top_clone, bytes=top)
    n = HOST_COPY_MIN_BYTES
    timeout = max(60.0, n / 50e6)
    result = stats(n, ray_get(src.clone_times.remote(n, trials, warmup), timeout, "host copy baseline"))
    ray_get(src.drop_buffers.remote(), timeout, "buffer release")
    return dict(result, bytes=n)


def round_robin(n: int) -> list[list[tuple[int, int]]]:
    """Circle method: n-1 rounds (n even) of disjoint pairs covering every unordered pair once."""
    ids: list[int | None] = list(range(n)) + ([None] if n % 2 else [])
    m = len(ids)
    rounds = []
    for _ in range(m - 1):
        pairs = [(ids[i], ids[m - 1 - i]) for i in range(m // 2)]
        rounds.append([(a, b) for a, b in pairs if a is not None and b is not None])
        ids = [ids[0], ids[-1]] + ids[1:-1]
    return rounds


def _timed_wave(eps: Endpoints, pairs: list[tuple[int, int]], nbytes: int, transport: str, timeout: float,
                baseline: dict[int, int]) -> dict[tuple[int, int], float]:
    """All pairs at once; seconds from submission to each pair's consumer finishing."""
    import ray

    t0 = time.perf_counter()
    refs = [eps.actors[s].buffer.options(tensor_transport=transport).remote(nbytes) for s, _ in pairs]
    try:
        sinks = [eps.actors[d].sink.remote(r) for (_, d), r in zip(pairs, refs)]
        index = {s.hex(): p for s, p in zip(sinks, pairs)}
        done: dict[tuple[int, int], float] = {}
        pending = list(sinks)
        deadline = t0 + timeout
        while pending:
            ready, pending = ray.wait(pending, num_returns=1, timeout=max(0.0, deadline - time.perf_counter()))
            if not ready:
                raise TransferError(f"{len(pending)} concurrent {nbytes}-byte transfers did not finish "
                                    f"within {timeout:.0f}s")
            now = time.perf_counter()
            ray_get(ready, timeout, "concurrent transfer")
            done[index[ready[0].hex()]] = now - t0
    finally:
        del refs
    for s in {s for s, _ in pairs}:
        _settle(eps.actors[s], baseline[s])
    return done


def _verified_wave(eps: Endpoints, pairs: list[tuple[int, int]], nbytes: int, transport: str, timeout: float,
                   baseline: dict[int, int]) -> dict[tuple[int, int], list[str]]:
    """All pairs at once, comparing digests: differences per pair ([] = exact)."""
    refs = [eps.actors[s].buffer.options(tensor_transport=transport).remote(nbytes) for s, _ in pairs]
    try:
        got = ray_get([eps.actors[d].receive.remote(r) for (_, d), r in zip(pairs, refs)], timeout,
                      "pairwise verification")
        sent = ray_get([eps.actors[s].sent_digest.remote(f"buffer/{nbytes}") for s, _ in pairs], timeout, "digests")
    finally:
        del refs
    for s in {s for s, _ in pairs}:
        _settle(eps.actors[s], baseline[s])
    return {pair: payloads.compare(a, b) for pair, a, b in zip(pairs, sent, got)}


def pairwise(transport: str, eps: Endpoints, labels: list[str], nbytes: int, *, warmup: int = 1,
             trials: int = 3) -> dict[str, Any]:
    """Bandwidth matrix src -> dst over N-1 rounds of concurrent disjoint pairs, both directions."""
    n = len(eps)
    timeout = max(60.0, nbytes / 20e6)
    ray_get([a.prepare_buffer.remote(nbytes) for a in eps.actors], timeout, "buffer allocation")
    baseline = {i: _held(a) for i, a in enumerate(eps.actors)}
    times: dict[tuple[int, int], list[float]] = {}
    wrong: dict[str, str] = {}
    rounds = round_robin(n)
    for pairs in rounds:
        for oriented in (pairs, [(b, a) for a, b in pairs]):
            for (s, d), diff in _verified_wave(eps, oriented, nbytes, transport, timeout, baseline).items():
                if diff:
                    wrong[f"{labels[s]}→{labels[d]}"] = diff[0]
            for k in range(warmup + trials):
                wave = _timed_wave(eps, oriented, nbytes, transport, timeout, baseline)
                if k >= warmup:
                    for pair, t in wave.items():
                        times.setdefault(pair, []).append(t)
    gbps = [[None if i == j else nbytes / statistics.median(times[(i, j)]) / 1e9 for j in range(n)] for i in range(n)]
    same = [[eps.node_of(i) == eps.node_of(j) for j in range(n)] for i in range(n)]
    ray_get([a.drop_buffers.remote() for a in eps.actors], timeout, "buffer release")
    return {"labels": labels, "gbps": gbps, "same_node": same, "bytes": nbytes, "rounds": len(rounds),
            "pairs_per_round": [len(p) for p in rounds], "warmup": warmup, "trials": trials, "wrong": wrong}


def link_classes(matrix: dict[str, Any]) -> dict[str, list[float]]:
    """Bandwidths grouped by link class (same node / across nodes)."""
    out: dict[str, list[float]] = {}
    n = len(matrix["labels"])
    for i in range(n):
        for j in range(n):
            if i != j and matrix["gbps"][i][j] is not None:
                out.setdefault("same-node" if matrix["same_node"][i][j] else "cross-node", []).append(matrix["gbps"][i][j])
    return out
