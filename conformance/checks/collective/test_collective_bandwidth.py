"""Collective area, performance: allreduce and broadcast bus bandwidth over message sizes (CC-010).

nccl-tests' definitions (conformance/areas/collective/busbw.py), measured in a group of the
pool's three members across the cluster's nodes: per op and size, trials of a batch of ops each
(a trial's time is the slowest rank's), adaptive as the transport sweep is (conformance/measure.py:
at least min_trials, then more until the median's CV is at most max_cv, or max_trials or
size_budget_s are spent). Judged against references measured in the same run, between the same
members:

* each op at star_size_mib (the largest of sizes_mib) against the same op done in the same
  run, between the same members, at that size, by the simplest correct implementation over
  Ray's object store: a star through one actor
  (conformance/areas/collective/star.py), timed the same way, its trials taken in turn with the
  backend's at that size (conformance/areas/collective/trials.py: both meet the same host). Like with like: a correct backend
  of the star design (one rendezvous actor: the simplest design, a plausible CPU fallback) lands
  near it, a better design above it, and a backend that adds a cost of its own per byte (a rate
  limiter, a fixed delay per MiB, a Python loop) far below it, loaded host or not: the star's
  puts, gets and sums slow with the host as a backend's own path does, a fixed cost per byte
  does not shrink. (One put/get of the same bytes, the reference before it, was not the same
  work: an allreduce through anything but a ring moves about 2n tensors, and a correct star
  backend fell under it for its design.) At the largest size because a cost per byte dominates
  both sides there; at the backend's peak, often the smallest size for such a backend, the star's
  own fixed costs came within the bar on a loaded host (conformance/areas/collective/busbw.py);
* the weaker op's peak over the sizes (the figure nccl-tests users quote) against the host
  memory copy in one member: an upper reference, kept as a coarse floor; and against the
  manifest's collective.nominal_link_gbps, when declared: the vendor's own claim.

The rows are the curve in report.html.
"""
from __future__ import annotations

import itertools
import statistics
from contextlib import contextmanager
from typing import Any, Callable, Iterator

import pytest

from conformance.areas.collective.busbw import bandwidth_figures
from conformance.areas.collective.star import StarHub
from conformance.areas.collective.trials import paired_points, sweep_point
from conformance.collective.context import CollectiveCtx, CollectiveError, start_answers
from conformance.handles import Actor
from conformance.run.fixtures import not_applicable

TIMED_OPS = ("allreduce", "broadcast")
STAR_TIMED = "conformance.areas.collective.star:timed"


def backend_timer(ctx: CollectiveCtx, members: list[Any], group: str, op: str, nbytes: int) -> Callable[[int], list[float]]:
    """The vendor's backend doing `op` on nbytes in `group` (CollectiveMember.timed)."""
    cc, bound = ctx.backend, float(ctx.param("op_bound_s"))
    return lambda iters: cc.ask(members, "timed", op, nbytes, iters, group, timeout_s=bound, param="op_bound_s",
                                what=f"{op} of {nbytes} bytes")


def star_timer(ctx: CollectiveCtx, members: list[Any], hub: Actor, op: str, nbytes: int) -> Callable[[int], list[float]]:
    """The star reference doing `op` on nbytes through `hub`, member i as rank i (star.timed)."""
    cc, bound = ctx.backend, float(ctx.param("op_bound_s"))
    calls = itertools.count()

    def run(iters: int) -> list[float]:
        tag = f"{op}.{nbytes}.{next(calls)}"
        refs = [m.call.remote(STAR_TIMED, op, nbytes, iters, hub, rank, tag) for rank, m in enumerate(members)]
        return list(cc.op(members, refs, bound, f"the star reference's {op} of {nbytes} bytes", param="op_bound_s"))
    return run


@contextmanager
def star_hub(ctx: CollectiveCtx, members: list[Any]) -> Iterator[Actor]:
    """The star reference's hub: an async actor on rank 0's node, started as Ray's machinery,
    killed on leaving."""
    import ray
    from ray.util.scheduling_strategies import NodeAffinitySchedulingStrategy

    cc = ctx.backend
    node = cc.ask(members[:1], "info", what="rank 0's node")[0]["node"]
    hub: Any = ray.remote(num_cpus=0)(StarHub).options(
        scheduling_strategy=NodeAffinitySchedulingStrategy(node, soft=False)).remote(len(members))
    cc.started_ids.add(hub._actor_id.hex())
    try:
        start_answers([hub.ping.remote()], "starting the star reference's hub actor", ctx.budget.machinery)
        yield hub
    finally:
        cc.stop([hub])


def host_copy_gbps(ctx: CollectiveCtx, member: Any) -> tuple[float, list[float]]:
    """The host copy's bandwidth in a member (the median) and each trial's (diff's reference)."""
    nbytes = int(float(ctx.param("host_copy_mib")) * 2**20)
    iters = int(ctx.param("host_copy_iters"))
    per: list[float] = [ctx.backend.ask([member], "host_copy_s", nbytes, iters, what="host copy")[0]
           for _ in range(int(ctx.param("min_trials")))]
    return nbytes / statistics.median(per) / 1e9, [nbytes / s / 1e9 for s in per]


@pytest.mark.check("CC-010")
def test_allreduce_and_broadcast_bus_bandwidth_reach_the_host_copy_and_the_link(collective_ctx: CollectiveCtx) -> None:
    cc, metrics = collective_ctx.backend, collective_ctx.metrics
    ops = [op for op in TIMED_OPS if collective_ctx.config.claims(op)]
    if not ops:
        not_applicable("the backend claims neither allreduce nor broadcast (collective.ops)")
    members = cc.pool()
    group = cc.group_name("bw")
    star_size = int(float(collective_ctx.param("star_size_mib")) * 2**20)
    sizes = sorted({int(float(m) * 2**20) for m in collective_ctx.param("sizes_mib")} | {star_size})
    try:
        cc.create(members, group)
        rows: list[dict[str, Any]] = []
        star: dict[str, dict[str, Any]] = {}
        star_s = 0.0
        for op in ops:
            rows += [sweep_point(collective_ctx.param, op, n, len(members), backend_timer(collective_ctx, members, group, op, n))
                     for n in sizes if n != star_size]
        with star_hub(collective_ctx, members) as hub:
            for op in ops:   # at the star's size: the backend and the star in turn
                row, star[op], spent_s = paired_points(collective_ctx.param, op, star_size, len(members),
                                                       backend_timer(collective_ctx, members, group, op, star_size),
                                                       star_timer(collective_ctx, members, hub, op, star_size))
                star_s += spent_s
                rows.append(row)
        rows.sort(key=lambda r: (ops.index(r["op"]), r["bytes"]))
        host, host_trials = host_copy_gbps(collective_ctx, members[0])
        cc.destroy(members, group)
        peaks = [max((r for r in rows if r["op"] == op), key=lambda r: r["busbw_gbps"]) for op in ops]
        compared = [r for r in rows if r["bytes"] == star_size]
    except CollectiveError as exc:
        pytest.fail(f"bandwidth sweep: {exc}", pytrace=False)
    metrics.update(bandwidth_figures(rows, peaks, host, star, star_s, collective_ctx.config.nominal_link_gbps,
                                     host_trials))
    weakest = min(peaks, key=lambda r: r["busbw_gbps"])
    cc.section["bandwidth"] = rows
    cc.note("CC-010", "peak busbw: " + ", ".join(
        f"{r['op']} {r['busbw_gbps']:.3g} GB/s at {r['bytes'] / 2**20:g} MiB" for r in peaks) + f"; at {star_size / 2**20:g} MiB: "
        + ", ".join(f"{r['op']} {r['busbw_gbps']:.3g} GB/s, the star over the object store {r['star_busbw_gbps']:.3g} GB/s"
                    for r in compared) + f"; host copy {host:.3g} GB/s",
        nominal_link_gbps=metrics["nominal_link_gbps"])
    # the judge `verify` re-runs, on this run's loaded thresholds
    collective_ctx.decide(detail=f" (world size {weakest['world_size']})")
