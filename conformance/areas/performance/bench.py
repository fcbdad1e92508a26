"""nccl-tests-style measurement of a transport: size sweep with baselines, and a pairwise matrix.

Method (the same in the performance checks and in `ray-conformance bench-transport`; the numbers
are PF-001's and PF-004's params in tiers/checklist.yaml):

* one transfer = the source returns a cached buffer through the transport and the destination
  takes it as an argument (`Endpoint.sink` touches nothing). It is timed end to end from the
  driver, so it includes what a user waits for: metadata extraction, Ray's two task
  round-trips and the move itself. After each transfer the driver waits until the source has
  freed the object, outside the timed interval, so transfers do not overlap;
* per size: one verification transfer compares digests (correctness gates, performance
  grades), then `warmup` untimed transfers, then timed *trials*. A trial is the mean of a batch
  of k transfers, k chosen from the warm-up so a trial lasts about `batch_s` (capped at
  `max_batch`): a 1 KiB transfer takes a few ms, dominated by Ray's per-task overhead, the
  scheduler of a 2-core host and the odd GC pause, so single transfers scatter by tens of
  percent while a batch averages that out; a 64 MiB transfer is its own batch;
* adaptive trials: at least `min_trials`; then more until the figure's coefficient of
  variation is <= `max_cv`, or `max_trials` trials or `size_budget_s` seconds are spent. The
  figure is the median of the per-trial bandwidths; its CV is its relative standard error,
  estimated robustly: `trial_cv` = (IQR / 1.349) / median is the trials' spread, and the
  median of n trials varies by 1.2533 x that / sqrt(n). More trials shrink the figure's CV
  (never the trials' spread, which is the host's noise: batching is what shrinks that). The
  median, min/max, IQR, both CVs, the trials and whether the target was met are recorded. A
  size that misses the target is flagged, not failed: noise of a shared host is no defect of
  the plugin, and the judged figures (medians) are far from their bars;
* baselines in the same run and on the same endpoints, so every figure is also a ratio: Ray's
  object store path (the same two tasks without tensor_transport, measured the same adaptive
  way) and a local torch clone on the endpoint's device (the memory-copy ceiling of one
  endpoint);
* pairwise matrix for N endpoints: N-1 rounds (N even; a bye when odd) of disjoint pairs
  chosen by the circle method; all pairs of a round run at once, in both directions, so N^2
  transfers take N-1 rounds instead of N^2 serial runs. The verified wave of each direction is
  its warm-up; then `min_trials` timed waves, and more (up to `max_trials`) only while some
  pair's waves spread by more than `max_spread` of their median.

Bandwidths are GB/s (10^9 bytes per second).
"""
from __future__ import annotations

import math
import statistics
import time
from dataclasses import dataclass, fields
from typing import TYPE_CHECKING, Any, Callable, Mapping

from conformance.handles import Actor, RemoteMethod
from conformance.measure import batch_size, enough_trials, stats
from conformance.rdt import payloads
from conformance.rdt.pool import Endpoints
from conformance.rdt.transfer import TransferError, ray_get

if TYPE_CHECKING:
    from conformance.catalog.data import Check

SETTLE_TIMEOUT_S = 20.0  # knob: hang guard while a benchmark settles
HOST_COPY_MIN_BYTES = 64 * 1024 * 1024   # beyond CPU caches: the host's sustained copy bandwidth


@dataclass(frozen=True)
class Method:
    """How each size of the sweep is measured: PF-001's params (see the module docstring)."""

    warmup: int           # untimed transfers per size after the verification transfer
    min_trials: int       # timed trials per size, at least
    max_trials: int       # ... at most
    max_cv: float         # stop adding trials once the median's CV is at or below this
    batch_s: float        # a trial batches transfers until it lasts about this long
    max_batch: int        # ... but never more than this many transfers
    size_budget_s: float  # stop adding trials once a size's timed trials took this long
    baseline_warmup: int  # the object-store baseline: untimed transfers per size
    baseline_trials: int  # ... and timed trials (a fixed number: a baseline only needs its median)

    @classmethod
    def from_params(cls, params: Mapping[str, Any], **override: Any) -> "Method":
        """From a check's params (PF-001), with optional overrides (the bench command's flags)."""
        values = {f.name: params[f.name] for f in fields(cls)}
        values.update({k: v for k, v in override.items() if v is not None})
        method = cls(**values)
        if method.min_trials < 1 or method.max_trials < method.min_trials or method.max_batch < 1 \
                or method.warmup < 0 or method.max_cv <= 0 or method.baseline_warmup < 0 or method.baseline_trials < 1:
            raise ValueError(f"inconsistent measurement method {method}")
        return method

    @classmethod
    def from_check(cls, check: "Check", **override: Any) -> "Method":
        """From the sweep check's params as a run loaded them (PF-001; PerformanceCtx.sweep_method)."""
        return cls.from_params({f.name: check.param(f.name) for f in fields(cls)}, **override)

    @classmethod
    def from_checklist(cls, **override: Any) -> "Method":
        """PF-001's params in the checklist in force, outside a run (`ray-conformance bench-transport`)."""
        from conformance.catalog.data import load_checklist

        return cls.from_check(load_checklist().by_id()["PF-001"], **override)


def should_stop(trial_gbps: list[float], elapsed_s: float, method: Method) -> tuple[bool, bool]:
    """(stop now, CV target met) after the trials so far."""
    return enough_trials(trial_gbps, elapsed_s, min_trials=method.min_trials, max_trials=method.max_trials,
                         max_cv=method.max_cv, budget_s=method.size_budget_s)


def _held(src: Actor) -> int:
    return int(ray_get(src.rdt_objects.remote(), what="RDT store size"))


def _settle(src: Actor, baseline: int = 0, timeout_s: float = SETTLE_TIMEOUT_S) -> None:
    """Wait until the source holds no more RDT objects than before the measurement (the
    previous transfer was freed)."""
    deadline = time.monotonic() + timeout_s
    while _held(src) > baseline:
        if time.monotonic() > deadline:
            raise TransferError(f"the source still holds RDT objects {timeout_s:.0f}s after the refs were dropped")
        time.sleep(0.002)


def _one_transfer(src: Actor, producer: RemoteMethod, dst: Actor, nbytes: int, transport: str | None, timeout: float,
                  baseline: int) -> float:
    """Seconds for one end-to-end transfer; then, untimed, wait until the source freed it."""
    t0 = time.perf_counter()
    ref = producer.remote(nbytes)
    try:
        ray_get(dst.sink.remote(ref), timeout, f"{nbytes}-byte transfer")
    finally:
        del ref
    elapsed = time.perf_counter() - t0
    if transport is not None:
        _settle(src, baseline)
    return elapsed


def time_transfers(src: Actor, dst: Actor, nbytes: int, transport: str | None, method: Method,
                   timeout: float, *, adaptive: bool = True) -> dict[str, Any]:
    """Trials of end-to-end transfers (transport=None: Ray's object store path): stats() of the
    per-transfer seconds, plus the warm-up and trial seconds spent. adaptive=False is a
    baseline: baseline_warmup warm-ups, then exactly baseline_trials trials (it only needs its
    median, which the judged ratio clears by far)."""
    ray_get(src.prepare_buffer.remote(nbytes), timeout, "buffer allocation")
    baseline = _held(src)
    producer = src.buffer if transport is None else src.buffer.options(tensor_transport=transport)
    t_start = time.perf_counter()
    warmup = method.warmup if adaptive else method.baseline_warmup
    warm = [_one_transfer(src, producer, dst, nbytes, transport, timeout, baseline) for _ in range(warmup)]
    # the last warm-up is the best guess of one warm transfer (the first may pay first-touch
    # costs); without a warm-up there is no guess, and every trial is a single transfer
    k = batch_size(warm[-1], method.batch_s, method.max_batch) if warm else 1
    t_trials = time.perf_counter()
    times: list[float] = []
    gbps: list[float] = []
    while True:
        per = sum(_one_transfer(src, producer, dst, nbytes, transport, timeout, baseline) for _ in range(k)) / k
        times.append(per)
        gbps.append(nbytes / per / 1e9)
        stop, _ = should_stop(gbps, time.perf_counter() - t_trials, method)
        if (adaptive and stop) or (not adaptive and len(times) >= method.baseline_trials):
            break
    result = stats(nbytes, times, batch=k, max_cv=method.max_cv)
    result["seconds"] = time.perf_counter() - t_start
    return result


def verify(src: Actor, dst: Actor, nbytes: int, transport: str, timeout: float) -> list[str]:
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


def sweep(transport: str, eps: Endpoints, sizes: list[int], *, object_store_limit: int | None, method: Method,
          progress: Callable[[str], None] | None = None) -> dict[str, Any]:
    """Bandwidth/latency per size from endpoint 0 to endpoint 1, with baselines and ratios.

    Each row also records where its time went (`seconds`: verification, RDT trials, object-store
    trials, clone), so a slow certification can be explained from its report."""
    src, dst = eps.actors[0], eps.actors[1]
    rows = []
    for n in sizes:
        timeout = max(60.0, n / 50e6)
        t0 = time.perf_counter()
        ray_get(src.prepare_buffer.remote(n), timeout, "buffer allocation")
        row: dict[str, Any] = {"bytes": n}
        diff = verify(src, dst, n, transport, timeout)
        row["verified"] = not diff
        if diff:
            row["difference"] = diff[0]
        seconds = {"prepare_and_verify": time.perf_counter() - t0}
        row["rdt"] = time_transfers(src, dst, n, transport, method, timeout)
        seconds["rdt"] = row["rdt"].pop("seconds")
        if object_store_limit is None or n <= object_store_limit:
            row["object_store"] = time_transfers(src, dst, n, None, method, timeout, adaptive=False)
            seconds["object_store"] = row["object_store"].pop("seconds")
            row["ratio_to_object_store"] = row["rdt"]["median_gbps"] / row["object_store"]["median_gbps"]
        else:
            row["object_store_skipped"] = f"{n} bytes exceeds the object-store budget {object_store_limit}"
        t1 = time.perf_counter()
        row["clone"] = _clone_stats(src, n, method, timeout)
        row["ratio_to_clone"] = row["rdt"]["median_gbps"] / row["clone"]["median_gbps"]
        ray_get(src.drop_buffers.remote(), timeout, "buffer release")
        seconds["clone"] = time.perf_counter() - t1
        row["seconds"] = seconds
        rows.append(row)
        if progress:
            r = row["rdt"]
            progress(f"{n} bytes: {r['median_gbps']:.3g} GB/s, CV {_pct(r['cv'])} over {r['trials']} trial(s) "
                     f"of {r['batch']}")
    used = sorted({r["rdt"]["trials"] for r in rows})
    result = {"rows": rows, "warmup": method.warmup, "method": _method_dict(method),
              "trials": used[0] if len(used) == 1 else f"{used[0]}–{used[-1]}",  # as the reports print it
              "pair": "endpoint 0 → endpoint 1"}
    result["cv_met_all"] = all(r["rdt"]["cv_met"] for r in rows)
    result["host_copy"] = host_copy(src, sizes[-1], rows[-1]["clone"], method)
    return result


def _pct(x: float | None) -> str:
    return "—" if x is None else f"{x:.1%}"


def _method_dict(method: Method) -> dict[str, Any]:
    return {f.name: getattr(method, f.name) for f in fields(method)}


def _clone_stats(src: Actor, nbytes: int, method: Method, timeout: float) -> dict[str, Any]:
    """The local clone baseline: min_trials trials, each batched to last about batch_s."""
    times, batch = ray_get(src.clone_times.remote(nbytes, method.min_trials, method.warmup, method.batch_s),
                           timeout, "clone baseline")
    return stats(nbytes, times, batch=batch)


def host_copy(src: Actor, top: int, top_clone: dict[str, Any], method: Method) -> dict[str, Any]:
    """The source host's sustained copy bandwidth: clone of max(top, 64 MiB) bytes.

    The reference for host-memory transports (PF-002). A clone small enough to stay in the CPU
    caches runs at cache speed, which no transfer between processes can approach, so below
    64 MiB a separate 64 MiB clone is measured.
    """
    if top >= HOST_COPY_MIN_BYTES:
        return dict(top_clone, bytes=top)
    n = HOST_COPY_MIN_BYTES
    timeout = max(60.0, n / 50e6)
    result = _clone_stats(src, n, method, timeout)
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


def spread(values: list[float]) -> float:
    """(max - min) / median: how far a pair's timed waves disagree (inf for no values)."""
    if not values:
        return math.inf
    med = statistics.median(values)
    return (max(values) - min(values)) / med if med > 0 else math.inf


def slow_links(gbps: list[list[float | None]], same: list[list[bool]], below: float) -> list[tuple[int, int]]:
    """(src, dst) of every link under `below` x the median of its class (same node / across) (pure)."""
    classes: dict[bool, list[float]] = {}
    for i, row in enumerate(gbps):
        for j, v in enumerate(row):
            if v is not None:
                classes.setdefault(same[i][j], []).append(v)
    medians = {k: statistics.median(v) for k, v in classes.items()}
    return [(i, j) for i, row in enumerate(gbps) for j, v in enumerate(row)
            if v is not None and v < below * medians[same[i][j]]]


def pairwise(transport: str, eps: Endpoints, labels: list[str], nbytes: int, *, min_trials: int,
             max_trials: int, max_spread: float, recheck_below: float = 0.0) -> dict[str, Any]:
    """Bandwidth matrix src -> dst over N-1 rounds of concurrent disjoint pairs, both directions.

    Per round and direction: one verified wave (digests compared), which also warms the pairs'
    paths up; then min_trials timed waves, and more up to max_trials while any pair's waves
    spread by more than max_spread of their median (a median of agreeing waves needs no more).
    A link under `recheck_below` x its class's median then has its wave timed again (max_trials
    waves, the same concurrent pairs) and keeps the better of its two medians (both recorded in
    `rechecked`)."""
    n = len(eps)
    timeout = max(60.0, nbytes / 20e6)
    t0 = time.perf_counter()
    ray_get([a.prepare_buffer.remote(nbytes) for a in eps.actors], timeout, "buffer allocation")
    baseline = {i: _held(a) for i, a in enumerate(eps.actors)}
    seconds = {"prepare": time.perf_counter() - t0, "verify": 0.0, "timed": 0.0}
    times: dict[tuple[int, int], list[float]] = {}
    wrong: dict[str, str] = {}
    waves = 0
    rounds = round_robin(n)
    wave_of: dict[tuple[int, int], list[tuple[int, int]]] = {}
    for pairs in rounds:
        for oriented in (pairs, [(b, a) for a, b in pairs]):
            wave_of.update({p: oriented for p in oriented})
            t1 = time.perf_counter()
            for (s, d), diff in _verified_wave(eps, oriented, nbytes, transport, timeout, baseline).items():
                if diff:
                    wrong[f"{labels[s]}→{labels[d]}"] = diff[0]
            t2 = time.perf_counter()
            seconds["verify"] += t2 - t1
            for k in range(max_trials):
                for pair, t in _timed_wave(eps, oriented, nbytes, transport, timeout, baseline).items():
                    times.setdefault(pair, []).append(t)
                waves += 1
                if k + 1 >= min_trials and all(spread(times[p]) <= max_spread for p in oriented):
                    break
            seconds["timed"] += time.perf_counter() - t2
    gbps = [[None if i == j else nbytes / statistics.median(times[(i, j)]) / 1e9 for j in range(n)] for i in range(n)]
    same = [[eps.node_of(i) == eps.node_of(j) for j in range(n)] for i in range(n)]
    t3 = time.perf_counter()
    rechecked = {}
    for s, d in slow_links(gbps, same, recheck_below):
        # its wave timed again (the same concurrent pairs, so the same contention), after every
        # other link: a degraded link stays slow, while a link that met a busy moment of a loaded
        # host does not (its better median counts)
        again_s: list[float] = []
        for _ in range(max_trials):
            again_s.append(_timed_wave(eps, wave_of[(s, d)], nbytes, transport, timeout, baseline)[(s, d)])
            waves += 1
        again = nbytes / statistics.median(again_s) / 1e9
        rechecked[f"{labels[s]}→{labels[d]}"] = [gbps[s][d], again]
        gbps[s][d] = max(float(gbps[s][d] or 0.0), again)
    seconds["recheck"] = time.perf_counter() - t3
    per_pair = [[0 if i == j else len(times[(i, j)]) for j in range(n)] for i in range(n)]
    counts = sorted({c for row in per_pair for c in row if c})
    trials: int | str = counts[0] if len(counts) == 1 else f"{counts[0]}–{counts[-1]}"
    ray_get([a.drop_buffers.remote() for a in eps.actors], timeout, "buffer release")
    return {"labels": labels, "gbps": gbps, "same_node": same, "bytes": nbytes, "rounds": len(rounds),
            "pairs_per_round": [len(p) for p in rounds], "warmup": "the verified wave", "trials": trials,
            "trials_per_pair": per_pair,
            "timed_waves": waves, "min_trials": min_trials, "max_trials": max_trials, "max_spread": max_spread,
            "seconds": seconds, "wrong": wrong, "rechecked": rechecked}


def link_classes(matrix: dict[str, Any]) -> dict[str, list[float]]:
    """Bandwidths grouped by link class (same node / across nodes)."""
    out: dict[str, list[float]] = {}
    n = len(matrix["labels"])
    for i in range(n):
        for j in range(n):
            if i != j and matrix["gbps"][i][j] is not None:
                out.setdefault("same-node" if matrix["same_node"][i][j] else "cross-node", []).append(matrix["gbps"][i][j])
    return out
