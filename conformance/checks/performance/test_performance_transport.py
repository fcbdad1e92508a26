"""Performance area: bandwidth and latency of the transport, nccl-tests style (PF-001 .. PF-004).

The sweep (1 KiB up to RAY_CONFORMANCE_TRANSPORT_MAX_BYTES, x4 steps) is measured once per
module and shared by PF-001..PF-003, the way PF-001's params say (adaptive trials up to a CV
target); see conformance/areas/performance/bench.py for the method. Figures land in each
check's metrics; the checklist's `merit:` names the ones `ray-conformance diff` gates between
runs (each bandwidth as a fraction of its same-run reference) and the per-trial bandwidths
(`*trials_gbps`) its significance test compares.
"""
from __future__ import annotations

import statistics
from typing import Any

import pytest

from conformance.areas.performance import bench, figures
from conformance.areas.performance.context import PerformanceCtx
from conformance.rdt.config import MATRIX_MAX_BYTES, format_size, max_bytes, record_size_cap, size_key, sweep_sizes
from conformance.rdt.context import TransportContext
from conformance.rdt.pool import device_endpoint_nodes, start_endpoints
from conformance.rdt.tables import publish
from conformance.run.fixtures import not_applicable


def object_store_budget(node_id: str) -> int | None:
    """Largest payload the object-store baseline may use: half the source node's store."""
    import ray

    for n in ray.nodes():
        if n["NodeID"] == node_id:
            cap = n.get("Resources", {}).get("object_store_memory")
            return int(cap // 2) if cap else None
    return None


def measured_sweep(performance_ctx: PerformanceCtx) -> dict[str, Any]:
    """The module's sweep on the primary device (measured on first use)."""
    tctx = performance_ctx.transport
    if "sweep" not in tctx.cache:
        device = tctx.primary_device
        eps = tctx.intra_node(device)
        if len(eps) < 2:
            not_applicable(f"needs 2 endpoints with a {device} device on one node")
        # PF-001's params set the method whichever of PF-001..PF-003 measures first
        method = performance_ctx.sweep_method()
        result = bench.sweep(tctx.name, eps, sweep_sizes(max_bytes()), method=method,
                             object_store_limit=object_store_budget(eps.node_of(0)))
        result["device"] = device
        tctx.cache["sweep"] = result
        publish(tctx.run, "sweep", result, device)
    sweep: dict[str, Any] = tctx.cache["sweep"]
    return sweep


@pytest.mark.check("PF-001")
def test_bandwidth_sweep_verified_and_recorded(performance_ctx: PerformanceCtx) -> None:
    metrics = performance_ctx.metrics
    sweep = measured_sweep(performance_ctx)
    rows = sweep["rows"]
    small = rows[0]
    metrics["small_message_latency_s"] = small["rdt"]["median_s"]
    if "object_store" in small:
        metrics["object_store_small_message_latency_s"] = small["object_store"]["median_s"]
    metrics["bandwidth"] = figures.sweep_figures(rows)
    metrics["method"] = dict(sweep["method"], device=sweep["device"])
    metrics["cv_met_all_sizes"] = sweep["cv_met_all"]
    metrics["seconds_per_size"] = {size_key(r["bytes"]): r["seconds"] for r in rows}
    # what each size's verification transfer compared (its digest against the sent one's)
    record_size_cap(metrics)
    metrics.update({"max_bytes": max_bytes(), "sizes_bytes": [r["bytes"] for r in rows],
                    "verification": {size_key(r["bytes"]): "ok" if r["verified"] else str(r.get("difference"))[:200]
                                     for r in rows},
                    "unverified": sum(not r["verified"] for r in rows)})
    performance_ctx.decide()


def reference_bandwidth(tctx: TransportContext, sweep: dict[str, Any]) -> tuple[float, str, list[float] | None]:
    """(GB/s, what it is, its trials when measured in this run) the largest-size bandwidth is judged
    against: the transport's declared nominal link bandwidth; else, for a host-memory transport,
    the host's copy bandwidth in this run (device links in the topology do not carry host
    memory); else the slowest device link the topology declares."""
    cfg = tctx.setup.config
    if cfg.link_bandwidth_gbps:
        return cfg.link_bandwidth_gbps, "the declared nominal link bandwidth (transport.expected)", None
    if cfg.host_memory:
        copy = sweep["host_copy"]
        return (copy["median_gbps"], f"the same-run host copy bandwidth (torch clone of {format_size(copy['bytes'])})",
                copy["trials_gbps"])
    if cfg.topology_link_gbps:
        return cfg.topology_link_gbps, "the slowest link bandwidth declared in topology.expected.links", None
    raise AssertionError("unreachable: PF-002 is not applicable without a reference")   # see the check


@pytest.mark.check("PF-002")
def test_largest_size_reaches_link_fraction(performance_ctx: PerformanceCtx) -> None:
    tctx, metrics = performance_ctx.transport, performance_ctx.metrics
    cfg = tctx.setup.config
    if not (cfg.link_bandwidth_gbps or cfg.host_memory or cfg.topology_link_gbps):
        not_applicable(f"the manifest declares no transport.expected.link_bandwidth_gbps for a device transport "
                       f"(transport.devices: {', '.join(cfg.devices)}), and no topology.expected.links bandwidth: "
                       "there is no link to judge the largest-size bandwidth against; declare the link's nominal "
                       "GB/s there")
    sweep = measured_sweep(performance_ctx)
    top = sweep["rows"][-1]
    reference, what, trials = reference_bandwidth(tctx, sweep)
    metrics.update(figures.largest_figures(top, reference, what, trials))
    record_size_cap(metrics)
    performance_ctx.decide(detail=f" ({format_size(top['bytes'])}; reference: {what})")


@pytest.mark.check("PF-003")
def test_faster_than_object_store_at_largest_size(performance_ctx: PerformanceCtx) -> None:
    metrics = performance_ctx.metrics
    sweep = measured_sweep(performance_ctx)
    rows = [r for r in sweep["rows"] if "object_store" in r]
    if not rows:
        not_applicable("no size fit the object-store baseline")
    top = rows[-1]
    metrics.update(figures.store_figures(top))
    record_size_cap(metrics)
    performance_ctx.decide(detail=f" (at {format_size(top['bytes'])})")


@pytest.mark.check("PF-004")
def test_pairwise_matrix(performance_ctx: PerformanceCtx) -> None:
    tctx, metrics = performance_ctx.transport, performance_ctx.metrics
    device = tctx.primary_device
    nodes, with_units = device_endpoint_nodes(tctx.resource, device, int(performance_ctx.param("max_endpoints")))
    if len(nodes) < 2:
        not_applicable(f"the cluster has {len(nodes)} device/node endpoint(s); a matrix needs 2")
    tctx.release_device_pools()   # endpoints holding devices would keep the matrix from getting them
    eps = start_endpoints(tctx.setup, tctx.resource, device=device, nodes=nodes, units=with_units,
                          ready=performance_ctx.budget.actors)
    try:
        node_index = {nid: k for k, nid in enumerate(dict.fromkeys(eps.node_of(i) for i in range(len(eps))))}
        labels = []
        for i, info in enumerate(eps.infos):
            ids = info["accelerator_ids"].get(tctx.resource) or []
            labels.append(f"n{node_index[info['node_id']]}" + (f":{','.join(ids)}" if ids else f":e{i}"))
        size = min(max_bytes(), MATRIX_MAX_BYTES)
        matrix = bench.pairwise(tctx.name, eps, labels, size, min_trials=int(performance_ctx.param("min_trials")),
                                max_trials=int(performance_ctx.param("max_trials")),
                                max_spread=float(performance_ctx.param("max_spread")),
                                recheck_below=float(performance_ctx.param("min_fraction_of_class_median")))
    finally:
        eps.shutdown()
        if with_units:
            tctx.wait_units_free()
    publish(tctx.run, "pairs", matrix, device)
    classes = bench.link_classes(matrix)
    metrics.update({"endpoints": labels, "bytes": size, "rounds": matrix["rounds"],
                    "timed_waves": matrix["timed_waves"], "seconds": matrix["seconds"],
                    "matrix_gbps": matrix["gbps"], "wrong_pairs": len(matrix["wrong"]),
                    "rechecked_gbps": matrix["rechecked"],
                    "links": figures.link_figures(classes)})
    record_size_cap(metrics)
    uniformity = performance_ctx.param("min_fraction_of_class_median")
    slow = []
    for cls, values in classes.items():
        med = statistics.median(values)
        n = len(labels)
        for i in range(n):
            for j in range(n):
                if i != j and (("same-node" if matrix["same_node"][i][j] else "cross-node") == cls):
                    if matrix["gbps"][i][j] < uniformity * med:
                        slow.append(f"{labels[i]}→{labels[j]} {matrix['gbps'][i][j]:.3g} GB/s ({cls} median {med:.3g})")
    wrong = f": {dict(list(matrix['wrong'].items())[:3])}" if matrix["wrong"] else ""
    performance_ctx.decide(detail=wrong or (f": {'; '.join(slow[:4])}" if slow else ""))
