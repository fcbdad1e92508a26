"""`ray-conformance topology`: the hardware view of a cluster, per node.

Prints what Ray sees on each node (resources, labels) beside what the plugin says there
(its labels, and its topology description: devices, links, domains), with every difference
marked by the check that judges it. Starts the manifest's simulated cluster, or connects to
--ray-address, runs one probe per node, prints, and shuts down what it started.

Exit codes: 0 no differences; 1 differences found; 2 bad input or no cluster.
"""
from __future__ import annotations

import argparse
import json

from conformance.errors import UserError


def cmd_topology(args: argparse.Namespace) -> int:
    from conformance.areas.topology.collect import collect_node_facts
    from conformance.areas.topology.view import build_view
    from conformance.catalog.labels import load_vocabulary
    from conformance.catalog.manifest import check_manifest
    from conformance.cluster.manager import SHARED, ClusterManager, ClusterStartError, prepare_driver

    manifest = check_manifest(args.manifest)
    topology = manifest.view.topology
    provider, expected = (topology.provider, topology.expected) if topology else (None, None)
    manager = prepare_driver(manifest)
    if not args.ray_address:        # a node-start call that hangs: one line, exit 2, before any cluster
        from conformance.run.preflight import refuse_node_start_hang
        refuse_node_start_hang(manager, manifest)
    clusters = ClusterManager(manifest, args.ray_address, manager)
    try:
        try:
            clusters.ensure(SHARED)
        except ClusterStartError as exc:
            where = f"connect to {args.ray_address}" if args.ray_address else "start the manifest's cluster"
            raise UserError(f"could not {where}: {exc}") from None
        facts = collect_node_facts(manifest.resource_name, manifest.view.accelerator.manager, provider)
        notes = list(clusters.notes) or list(clusters.current.notes if clusters.current else [])
        view = build_view(facts, resource=manifest.resource_name, vocabulary=load_vocabulary(),
                          expected_type=manifest.accelerator_type, expected_topology=expected,
                          notes=notes)
    finally:
        clusters.shutdown()
    if args.format == "json":
        print(json.dumps(view["data"], indent=2, default=str))
    else:
        print(f"# Topology: {manifest.view.vendor} / {manifest.view.product}\n")
        print(view["markdown"])
    return 1 if view["data"]["differences"] else 0


def register(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = subparsers.add_parser("topology", help="per node: what Ray sees beside what the plugin describes")
    p.add_argument("--manifest", required=True, help="vendor manifest (YAML or JSON)")
    p.add_argument("--ray-address", help="existing Ray cluster to inspect (default: start the manifest's cluster)")
    p.add_argument("--format", choices=["md", "json"], default="md")
    p.set_defaults(func=cmd_topology)
