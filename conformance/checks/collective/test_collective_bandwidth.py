"""Collective area, performance: allreduce and broadcast bus bandwidth over message sizes (CC-010).

nccl-tests' definitions (conformance/areas/collective/busbw.py), measured in a group of the
pool's three members across the cluster's nodes: per op and size, trials of a batch of ops each
(a trial's time is the slowest rank's), adaptive as the transport sweep is (conformance/measure.py:
at least min_trials, then more until the median's CV is at most max_cv, or max_trials or
size_budget_s are spent). Judged on each op's peak over the sizes (the figure nccl-tests users
quote; a backend whose large messages collapse still shows it in the curve), the weaker op,
against references measured in the same run, between the same members:

* Ray's object store moving the peak size's bytes from one member to the next (ray.put there,
  ray.get and a copy here): the generic path a backend stages through when it has nothing
  better, slowed by a loaded host as a backend's own path is. It separates a backend whose
  path costs per byte what moving bytes costs on this host from one that adds a cost of its
  own per byte (a rate limiter, a fixed delay per MiB, a Python loop): a fixed delay does not
  shrink when the host is loaded, the object store does, and the host copy shrinks far more
  (measured: a backend sleeping 40 ms per MiB passed the host-copy bar while the host copy fell
  to 2.6-3.0 GB/s under load);
* the host memory copy in one member: an upper reference, kept as a coarse floor;
* the manifest's collective.nominal_link_gbps, when declared: the vendor's own claim.

The rows are the curve in report.html.
"""
from __future__ import annotations

import statistics
import time
from typing import Any

import pytest

from conformance.areas.collective.busbw import bandwidth_figures, bus_factor, point_figures
from conformance.collective.context import CollectiveCtx, CollectiveError
from conformance.measure import batch_size, enough_trials, stats
from conformance.report.judges import enforce
from conformance.run.fixtures import not_applicable

pytestmark = pytest.mark.cluster("shared")

TIMED_OPS = ("allreduce", "broadcast")


def sweep_point(ctx: CollectiveCtx, members: list[Any], group: str, op: str, nbytes: int) -> dict[str, Any]:
    """One op at one size: batched, adaptive trials; the row the report keeps."""
    cc, p = ctx.backend, ctx.param
    bound, ws = float(p("op_bound_s")), len(members)
    what = f"{op} of {nbytes} bytes"
    one = max(cc.ask(members, "timed", op, nbytes, 1, group, timeout_s=bound, what=what))
    batch = batch_size(one, float(p("batch_s")), int(p("max_batch")))
    times: list[float] = []
    start = time.monotonic()
    factor = bus_factor(op, ws)
    while True:
        times.append(max(cc.ask(members, "timed", op, nbytes, batch, group, timeout_s=bound, what=what)))
        stop, _ = enough_trials([nbytes / t / 1e9 * factor for t in times], time.monotonic() - start,
                                min_trials=int(p("min_trials")), max_trials=int(p("max_trials")),
                                max_cv=float(p("max_cv")), budget_s=float(p("size_budget_s")))
        if stop:
            break
    st = stats(nbytes, times, batch=batch, max_cv=float(p("max_cv")))
    return point_figures(op, nbytes, ws, st, batch)


def host_copy_gbps(ctx: CollectiveCtx, member: Any) -> float:
    nbytes = int(float(ctx.param("host_copy_mib")) * 2**20)
    iters = int(ctx.param("host_copy_iters"))
    per = [ctx.backend.ask([member], "host_copy_s", nbytes, iters, what="host copy")[0]
           for _ in range(int(ctx.param("min_trials")))]
    return nbytes / statistics.median(per) / 1e9


def object_store_gbps(ctx: CollectiveCtx, members: list[Any], nbytes: int) -> list[float]:
    """GB/s of Ray's object store moving nbytes from member i to member i+1, per trial (round the
    ring, min_trials gets at least): each trial puts a fresh object, so each get pulls it whole."""
    cc, bound = ctx.backend, float(ctx.param("op_bound_s"))
    per = []
    for trial in range(max(int(ctx.param("min_trials")), len(members))):
        src, dst = members[trial % len(members)], members[(trial + 1) % len(members)]
        refs = cc.ask([src], "store_put", nbytes, timeout_s=bound, what="object store put")[0]
        per.append(cc.ask([dst], "store_get_s", refs, timeout_s=bound, what="object store get")[0])
        del refs
    return [nbytes / t / 1e9 for t in per]


@pytest.mark.check("CC-010")
def test_allreduce_and_broadcast_bus_bandwidth_reach_the_host_copy_and_the_link(collective_ctx: CollectiveCtx) -> None:
    cc, metrics = collective_ctx.backend, collective_ctx.metrics
    ops = [op for op in TIMED_OPS if collective_ctx.config.claims(op)]
    if not ops:
        not_applicable("the backend claims neither allreduce nor broadcast (collective.ops)")
    members = cc.pool()
    group = cc.group_name("bw")
    sizes = [int(float(m) * 2**20) for m in collective_ctx.param("sizes_mib")]
    try:
        cc.create(members, group)
        rows = [sweep_point(collective_ctx, members, group, op, n) for op in ops for n in sizes]
        host = host_copy_gbps(collective_ctx, members[0])
        cc.destroy(members, group)
        store_trials = object_store_gbps(collective_ctx, members, max(sizes))
    except CollectiveError as exc:
        pytest.fail(f"bandwidth sweep: {exc}", pytrace=False)
    store = statistics.median(store_trials)
    metrics.update(bandwidth_figures(rows, ops, host, store_trials, max(sizes), collective_ctx.config.nominal_link_gbps))
    peaks = [max((r for r in rows if r["op"] == op), key=lambda r: r["busbw_gbps"]) for op in ops]
    weakest = min(peaks, key=lambda r: r["busbw_gbps"])
    cc.section["bandwidth"] = rows
    cc.note("CC-010", "peak busbw: " + ", ".join(
        f"{r['op']} {r['busbw_gbps']:.3g} GB/s at {r['bytes'] / 2**20:g} MiB" for r in peaks) + f"; host copy {host:.3g} GB/s; object store {store:.3g} GB/s",
        nominal_link_gbps=metrics["nominal_link_gbps"])
    # the judge `verify` re-runs, on this run's loaded thresholds
    enforce("CC-010", metrics, collective_ctx.check.params, f" ({weakest['op']}, world size {weakest['world_size']})")
