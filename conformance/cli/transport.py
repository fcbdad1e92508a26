"""`ray-conformance bench-transport`: measure a manifest's transport without certifying it.

Prints the same tables the certification report's Transport section holds (bandwidth by size
with the object-store and torch-clone baselines, and the pairwise matrix), on every device type
the transport declares (a certification measures the first that is not the host's), measured the same
way (conformance/areas/performance/bench.py). Nothing is judged and no report is written, unless
--json asks for the raw figures.

The main CLI (conformance/cli/main.py) calls `register(subparsers)`.
"""
from __future__ import annotations

import argparse
import dataclasses
import json
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable

from conformance.cli import numbers as cli_numbers
from conformance.errors import UserError

if TYPE_CHECKING:
    from conformance.areas.performance.bench import Method
    from conformance.rdt.pool import Ready
    from conformance.rdt.registration import TransportSetup

MAX_SWEEP_BYTES = 4 * 1024 ** 3


def _sizes(args: argparse.Namespace) -> list[int]:
    from conformance.rdt.config import max_bytes, parse_size, sweep_sizes

    if args.sizes:
        sizes = [parse_size(s, what="--sizes") for s in args.sizes.split(",") if s.strip()]
        if not sizes:
            raise UserError("--sizes: give at least one size, e.g. --sizes 1KiB,1MiB,64MiB")
        sizes = sorted(set(sizes))
    else:
        top = parse_size(args.max_size, what="--max-size") if args.max_size else max_bytes()
        sizes = sweep_sizes(top)
    if sizes[-1] > MAX_SWEEP_BYTES:
        raise UserError(f"--sizes/--max-size: {sizes[-1]} bytes is above the {MAX_SWEEP_BYTES >> 30} GiB limit")
    return sizes


def cmd_bench_transport(args: argparse.Namespace) -> int:
    from conformance.areas.performance import bench
    from conformance.catalog.data import load_checklist
    from conformance.catalog.manifest import check_manifest
    from conformance.cluster.manager import ClusterShape, prepare_driver, start_cluster, stop_cluster
    from conformance.rdt import tables
    from conformance.rdt.registration import TransportSetupError, ensure_registered

    if (args.trials is not None and args.trials < 1) or (args.warmup is not None and args.warmup < 0):
        raise UserError("--trials must be >= 1 and --warmup >= 0")
    method = bench.Method.from_checklist(warmup=args.warmup, min_trials=args.trials)
    if method.max_trials < method.min_trials:
        method = dataclasses.replace(method, max_trials=method.min_trials)
    matrix_check = load_checklist().by_id()["PF-004"]   # outside a run: the checklist in force
    matrix_params = {k: matrix_check.param(k) for k in ("min_trials", "max_trials", "max_spread")}
    sizes = _sizes(args)
    manifest = check_manifest(args.manifest)
    if manifest.view.transport is None:
        raise UserError(f"manifest: {args.manifest}: declares no transport (add a `transport` block)")
    from conformance.catalog.vendor_calls import bounded_call
    from conformance.run.preflight import refuse_node_start_hang

    manager = prepare_driver(manifest)
    if not args.ray_address:        # a node-start call that hangs: one line, exit 2, before any cluster
        refuse_node_start_hang(manager, manifest)
    try:                            # the transport's import and class methods, within the call bound
        setup = bounded_call(ensure_registered, manifest, method="transport registration",
                             where="manifest: transport.manager: ")
    except TransportSetupError as exc:
        raise UserError(f"transport: {exc}") from None
    assert setup is not None
    log = (lambda msg: print(f"  {msg}", file=sys.stderr, flush=True)) if not args.quiet else None
    handle = start_cluster(manifest, ClusterShape(name="bench"), args.ray_address, manager)
    data: dict[str, Any] = {"transport": {"name": setup.name, "one_sided": setup.one_sided,
                                          "can_abort": setup.can_abort, "devices": list(setup.config.devices)},
                            "sweep": {}}
    from conformance.rdt.pool import harness_ready
    from conformance.timing.host_load import MachineryRecord

    # this command's own record of Ray's machinery (it is not a run: nothing it measures reaches one)
    ready = harness_ready(MachineryRecord())
    try:
        for device in setup.config.devices:     # every type the transport declares, in its order
            _bench_device(setup, manifest.resource_name, device, sizes, method, matrix_params, args, log, data, ready)
    finally:
        stop_cluster(handle)
    print(tables.render(data))
    if args.json:
        Path(args.json).write_text(json.dumps(data, indent=2, default=str))
        print(f"bench-transport: figures written to {args.json}", file=sys.stderr)
    return 0


def _bench_device(setup: TransportSetup, resource: str, device: str, sizes: list[int], method: Method,
                  matrix_params: dict[str, Any], args: argparse.Namespace, log: Callable[[str], None] | None,
                  data: dict[str, Any], ready: Ready) -> None:
    """The sweep (and the pairwise matrix) on one device type, into data["sweep"] / data["pairs"];
    `ready` awaits the endpoints' start (conformance.rdt.pool.harness_ready)."""
    from conformance.areas.performance import bench
    from conformance.rdt.config import MATRIX_MAX_BYTES
    from conformance.rdt.device import is_host
    from conformance.rdt.pool import alive_nodes, device_endpoint_nodes, start_endpoints

    nodes = alive_nodes(None if is_host(device) else resource)
    if not nodes:
        raise UserError(f"no node offers {resource} for {device} endpoints")
    eps = start_endpoints(setup, resource, device=device, nodes=[nodes[0]["NodeID"]] * 2, ready=ready)
    try:
        print(f"bench-transport: {setup.name} on {device}, sizes {sizes[0]}..{sizes[-1]} bytes", file=sys.stderr)
        cap = nodes[0].get("Resources", {}).get("object_store_memory")
        data["sweep"][device] = bench.sweep(setup.name, eps, sizes, object_store_limit=int(cap // 2) if cap else None,
                                            method=method, progress=log)
    finally:
        eps.shutdown()
    if args.no_matrix:
        return
    pinned, units = device_endpoint_nodes(resource, device)
    if len(pinned) >= 2:
        eps = start_endpoints(setup, resource, device=device, nodes=pinned, units=units, ready=ready)
        try:
            labels = [f"e{i}" for i in range(len(eps))]
            data.setdefault("pairs", {})[device] = bench.pairwise(setup.name, eps, labels,
                                                                  min(sizes[-1], MATRIX_MAX_BYTES), **matrix_params)
        finally:
            eps.shutdown()


def register(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = subparsers.add_parser("bench-transport", help="measure a manifest's transport (bandwidth sweep, baselines, "
                                                      "pairwise matrix) without certifying")
    p.add_argument("--manifest", required=True, help="vendor manifest with a `transport` block")
    p.add_argument("--sizes", help="comma-separated sizes (e.g. 1KiB,1MiB,256MiB); default: 1 KiB x4 up to --max-size")
    p.add_argument("--max-size", help="top of the default sweep (default RAY_CONFORMANCE_TRANSPORT_MAX_BYTES or 256MiB)")
    p.add_argument("--trials", type=cli_numbers.number(int, 1, 1_000_000),
                   help="least timed trials per size (median reported; default PF-001's "
                                              "min_trials; more are added up to its CV target)")
    p.add_argument("--warmup", type=cli_numbers.count, help="untimed warm-up transfers per size (default PF-001's warmup)")
    p.add_argument("--no-matrix", action="store_true", help="skip the pairwise matrix")
    p.add_argument("--ray-address", help="existing Ray cluster to run against")
    p.add_argument("--json", help="also write the raw figures to this file")
    p.add_argument("--quiet", action="store_true", help="no progress lines")
    p.set_defaults(func=cmd_bench_transport)


if __name__ == "__main__":
    from conformance.cli.main import main
    sys.exit(main(["bench-transport", *sys.argv[1:]]))
