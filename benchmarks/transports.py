"""Transports side by side: a vendor transport and Ray's built-ins measured in the same run.

    python benchmarks/transports.py [--manifest conformance/simulated/manifest-transport.yaml]
                                    [--also NIXL] [--sizes 1KiB,1MiB,16MiB,64MiB,256MiB]

Prints figures, never asserts. One cluster (the manifest's), one pair of endpoints on one node,
and per size every transport in turn, then Ray's object-store path and a host clone, all with
PF-001's method (conformance/areas/performance/bench.py): the same endpoints, the same buffers,
interleaved size by size, so a load that drifts during the run (a shared 2-core host) moves all
the figures of a size together and the ratios stay comparable. Each figure is the median of its
trials with its CV; a figure whose CV missed PF-001's target is marked `~`.

The manifest's transport is registered the way a certification registers it (the suite's
tracing wrapper for a custom transport); a built-in named with --also (GLOO and NCCL need a
collective group and are refused here; NIXL and CUDA_IPC need none) is Ray's own class. The
tensors live on the first device type every compared transport declares (Ray's registry for a
built-in), so a vendor transport on its own device is compared with NIXL on `cpu` only when it
also declares `cpu`.
"""
from __future__ import annotations

import argparse
import sys
from typing import Any

ONE_SIDED_BUILTINS = ("NIXL", "CUDA_IPC")   # built-ins that need no collective group
DEFAULT_SIZES = "1KiB,64KiB,1MiB,16MiB,64MiB,256MiB"


def declared_devices(setup: Any, builtin: str) -> list[str]:
    """Device types both the manifest's transport and a built-in declare, in the manifest's order."""
    from ray.experimental.rdt import util

    util._ensure_default_transports_registered()
    info = util.transport_manager_info.get(builtin)
    if info is None:
        raise SystemExit(f"--also: {builtin}: not a transport this Ray registers (missing optional dependency?)")
    return [d for d in setup.config.devices if d in info.devices]


def _gbps(stats: dict[str, Any] | None, max_cv: float) -> str:
    if not stats:
        return "-"
    mark = "" if (stats.get("cv") or 0.0) <= max_cv else "~"
    return f"{mark}{stats['median_gbps']:.3g}"


def _pct(x: float | None) -> str:
    return "-" if x is None else f"{x:.1%}"


def _ratio(a: dict[str, Any] | None, b: dict[str, Any] | None) -> str:
    return f"{a['median_gbps'] / b['median_gbps']:.2f}x" if a and b else "-"


def measure(manifest_path: str, also: list[str], sizes: list[int]) -> tuple[list[str], str, dict[int, dict[str, Any]]]:
    """{size: {transport: row of bench.sweep}} for the manifest's transport and each built-in."""
    from conformance.areas.performance import bench
    from conformance.catalog.manifest import check_manifest
    from conformance.cluster.manager import ClusterShape, prepare_driver, start_cluster, stop_cluster
    from conformance.rdt.pool import harness_ready, start_endpoints
    from conformance.rdt.registration import ensure_registered
    from conformance.timing.host_load import MachineryRecord

    manifest = check_manifest(manifest_path)
    manager = prepare_driver(manifest)
    setup = ensure_registered(manifest)
    if setup is None:
        raise SystemExit(f"--manifest: {manifest_path}: declares no transport")
    for name in also:
        if name not in ONE_SIDED_BUILTINS:
            raise SystemExit(f"--also: {name}: only {', '.join(ONE_SIDED_BUILTINS)} (no collective group here)")
    common = [d for d in setup.config.devices if all(d in declared_devices(setup, b) for b in also)]
    if not common:
        raise SystemExit(f"no device type that {setup.name} and {', '.join(also)} all declare")
    device = common[0]
    method = bench.Method.from_checklist()
    names = [setup.name, *also]
    handle = start_cluster(manifest, ClusterShape(name="bench-transports"), None, manager)
    figures: dict[int, dict[str, Any]] = {}
    try:
        eps = start_endpoints(setup, manifest.resource_name, device=device, nodes=[None, None],
                              ready=harness_ready(MachineryRecord()))   # this script's own record: not a run
        try:
            for n in sizes:
                for name in names:
                    row = bench.sweep(name, eps, [n], object_store_limit=None, method=method)["rows"][0]
                    figures.setdefault(n, {})[name] = row
                    print(f"  {n} bytes, {name}: {row['rdt']['median_gbps']:.3g} GB/s (CV {_pct(row['rdt'].get('cv'))}), "
                          f"object store {row['object_store']['median_gbps']:.3g} GB/s", file=sys.stderr, flush=True)
        finally:
            eps.shutdown()
    finally:
        stop_cluster(handle)
    return names, device, figures


def render(names: list[str], device: str, figures: dict[int, dict[str, Any]], max_cv: float) -> str:
    """One row per size: each transport's GB/s, the object store's (median of the runs beside each
    transport), the host clone's, and each transport's ratio to the first and to the object store."""
    import statistics

    from tabulate import tabulate

    first = names[0]
    header = ["size", *[f"{n} GB/s" for n in names], "object store GB/s", "clone GB/s",
              *[f"{n}/{first}" for n in names[1:]], *[f"{n}/object store" for n in names]]
    rows = []
    for n, by_name in sorted(figures.items()):
        store = {"median_gbps": statistics.median(r["object_store"]["median_gbps"] for r in by_name.values())}
        clone = {"median_gbps": statistics.median(r["clone"]["median_gbps"] for r in by_name.values())}
        rows.append([_size(n), *[_gbps(by_name[x]["rdt"], max_cv) for x in names], f"{store['median_gbps']:.3g}",
                     f"{clone['median_gbps']:.3g}", *[_ratio(by_name[x]["rdt"], by_name[first]["rdt"]) for x in names[1:]],
                     *[_ratio(by_name[x]["rdt"], store) for x in names]])
    smallest = min(figures)
    latency = ", ".join(f"{x} {smallest / (figures[smallest][x]['rdt']['median_gbps'] * 1e9) * 1e3:.2f} ms" for x in names)
    return (f"Transports on `{device}`, one node, endpoint 0 -> endpoint 1 (GB/s = 1e9 B/s; ~ = CV above target)\n"
            + tabulate(rows, header, tablefmt="github") + f"\n{_size(smallest)}, time per transfer: {latency}")


def _size(n: int) -> str:
    for unit, shift in (("GiB", 30), ("MiB", 20), ("KiB", 10)):
        if n >= 1 << shift and n % (1 << shift) == 0:
            return f"{n >> shift} {unit}"
    return f"{n} B"


def main(argv: list[str] | None = None) -> int:
    from conformance.areas.performance import bench
    from conformance.rdt.config import parse_size

    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--manifest", default="conformance/simulated/manifest-transport.yaml",
                   help="manifest whose transport is measured first (default: SimAcc's SIMXFER)")
    p.add_argument("--also", nargs="+", default=["NIXL"], help="Ray built-ins measured beside it (default NIXL)")
    p.add_argument("--sizes", default=DEFAULT_SIZES, help=f"comma-separated sizes (default {DEFAULT_SIZES})")
    args = p.parse_args(argv)
    sizes = sorted({parse_size(s, what="--sizes") for s in args.sizes.split(",") if s.strip()})
    names, device, figures = measure(args.manifest, args.also, sizes)
    print(render(names, device, figures, bench.Method.from_checklist().max_cv))
    return 0


if __name__ == "__main__":
    sys.exit(main())
