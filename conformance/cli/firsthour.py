"""`ray-conformance preflight` and `ray-conformance init`: a vendor's first hour.

`preflight --manifest M` checks the host, starts the manifest's cluster shape (or connects to
--ray-address), imports the plugin in a Ray worker on every node and calls each manager method
once; it prints every finding with the worker's own traceback. Exit codes: 0 nothing wrong,
1 errors or problems found, 2 bad input.

`init DIR` writes a plugin skeleton that passes `validate-manifest` (never overwriting a file).
"""
from __future__ import annotations

import argparse
from pathlib import Path

from conformance.errors import UserError


def cmd_preflight(args: argparse.Namespace) -> int:
    import time

    from conformance.catalog.manifest import check_manifest
    from conformance.cluster.manager import SHARED, ClusterManager, ClusterStartError, prepare_driver
    from conformance.run.preflight import ERROR, Finding, host_state, render_lines, run_preflight
    from conformance.sanitize import terminal
    from conformance.timing.host_load import MachineryRecord

    t0 = time.monotonic()
    manifest = check_manifest(args.manifest)
    host = host_state()
    print(terminal(f"preflight: {manifest.view.vendor} / {manifest.view.product}"), flush=True)
    manager = prepare_driver(manifest)
    if not args.ray_address:        # a node-start call that hangs: one line, exit 2, before any cluster
        from conformance.run.preflight import refuse_node_start_hang
        refuse_node_start_hang(manager, manifest)
    clusters = ClusterManager(manifest, args.ray_address, manager)
    machinery = MachineryRecord()   # this command's own record of Ray's machinery: it is not a run
    try:
        try:
            clusters.ensure(SHARED)
            started = True
        except ClusterStartError as exc:
            started = False
            start_error = Finding(ERROR, "cluster", str(exc))
        try:
            result = run_preflight(manifest, cluster_ready=started, preload_expected=not args.ray_address,
                                   machinery=machinery, host=host)
        except Exception as exc:  # noqa: BLE001 - one line, never a traceback
            result = run_preflight(manifest, cluster_ready=False, preload_expected=False, machinery=machinery, host=host)
            result.findings.append(Finding(ERROR, "preflight", f"the probe itself failed: "
                                           f"{exc.__class__.__name__}: {exc}".splitlines()[0][:300]))
        if not started:
            result.findings.insert(0, start_error)
    finally:
        clusters.shutdown()
    result.duration_s = time.monotonic() - t0
    for line in render_lines(result):
        print(line)
    return 0 if result.ok and not any(f.level == "problem" for f in result.findings) else 1


def cmd_init(args: argparse.Namespace) -> int:
    from conformance.cli.scaffold import write_skeleton
    from conformance.sanitize import terminal

    written, kept = write_skeleton(Path(args.dir), vendor=args.vendor, product=args.product,
                                   resource=args.resource, package=args.package,
                                   topology=not args.no_topology, transport=not args.no_transport,
                                   collective=not args.no_collective)
    for path in written:
        print(terminal(f"wrote {path}"))
    for path in kept:
        print(terminal(f"kept {path} (exists; not overwritten)"))
    manifest = Path(args.dir) / "manifest.yaml"
    print(terminal(f"next: edit the stubs, then `ray-conformance validate-manifest {manifest}` and "
                   f"`ray-conformance preflight --manifest {manifest}`; docs/writing-a-plugin.md explains each check"))
    return 0


def register(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = subparsers.add_parser("preflight", help="in seconds: can this host and cluster run the plugin? "
                                                "(imports it in a Ray worker on every node)")
    p.add_argument("--manifest", required=True, help="vendor manifest (YAML or JSON)")
    p.add_argument("--ray-address", help="existing Ray cluster to probe (default: start the manifest's cluster)")
    p.set_defaults(func=cmd_preflight)

    p = subparsers.add_parser("init", help="write a plugin skeleton (manager, topology provider, transport, collective backend, "
                                           "manifest) that passes validate-manifest")
    p.add_argument("dir", help="folder to write into (created; existing files are kept)")
    p.add_argument("--vendor", default="Example Corp")
    p.add_argument("--product", default="Example Accelerator")
    p.add_argument("--resource", default="EXAMPLE_ACC", help="the Ray resource name of the device")
    p.add_argument("--package", default="example_plugin", help="Python package name of the plugin")
    p.add_argument("--no-topology", action="store_true", help="leave out the topology provider stub")
    p.add_argument("--no-transport", action="store_true", help="leave out the transport stub")
    p.add_argument("--no-collective", action="store_true", help="leave out the collective backend stub")
    p.set_defaults(func=_validated_init)


def _validated_init(args: argparse.Namespace) -> int:
    import re
    if not re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", args.package):
        raise UserError(f"--package: {args.package!r} is not a Python package name "
                        "(letters, digits and _, not starting with a digit)")
    if not re.fullmatch(r"[A-Za-z][A-Za-z0-9_]*", args.resource):
        raise UserError(f"--resource: {args.resource!r} is not a usable resource name "
                        "(a letter, then letters, digits and _)")
    return cmd_init(args)
