"""The recovery area's cluster shapes (conformance.cluster.shapes reads KINDS through the area)."""
from __future__ import annotations

from typing import TYPE_CHECKING

from conformance.cluster.manager import ClusterShape, complete
from conformance.cluster.shapes import FAULT_DRIVER, OWN_NODES, Resolver, ShapeKind, manifest_nodes, named_shape

if TYPE_CHECKING:
    from ray._private.accelerators.accelerator import AcceleratorManager

    from conformance.catalog.manifest import Manifest
    from conformance.timing.host_load import MachineryRecord


def _short_fetch_timeout(name: str) -> Resolver:
    """The manifest's nodes with Ray's RDT fetch timeout lowered in every node (FR-012..016), stretched
    by the run's fixed fetch factor (its `machinery` record)."""
    def resolve(manifest: Manifest, manager: type[AcceleratorManager] | None, machinery: MachineryRecord) -> ClusterShape:
        from conformance.areas.recovery.transfers import transfer_shape
        return named_shape(name, transfer_shape(manifest, machinery), manifest)
    return resolve


def _fresh_start(manifest: Manifest, manager: type[AcceleratorManager] | None, machinery: MachineryRecord) -> ClusterShape:
    """FR-006's fresh start: the manifest's nodes again. With a transport declared, they start
    with the recovery-transfers node environment, which differs only in Ray's RDT fetch timeout
    (no device detection reads it): the transfer checks that follow then run on this cluster
    instead of starting their own."""
    resolve = _short_fetch_timeout if manifest.view.transport is not None else manifest_nodes
    return resolve("recovery-restart")(manifest, manager, machinery)


def _recovery_nodes(manifest: Manifest, manager: type[AcceleratorManager] | None,
                    machinery: MachineryRecord) -> ClusterShape:
    from conformance.areas.recovery.nodes import node_shape
    return complete(node_shape(manifest, manager, machinery), manifest)


KINDS: tuple[ShapeKind, ...] = (
    ShapeKind("recovery-devices", 20, "the manifest's nodes as they are; device scenarios kill only actors and "
              "tasks they created, after the shared checks (so a leak cannot spoil them)",
              manifest_nodes("recovery-devices")),
    ShapeKind("recovery-restart", 30, "the manifest's nodes, shut down and started again in this process "
              "(FR-006); with a transport, started as the recovery-transfers nodes", _fresh_start, OWN_NODES,
              "shuts the cluster down and starts a fresh one in this process", starts_from="recovery-devices"),
    ShapeKind("recovery-transfers", 40, "the manifest's nodes with RAY_rdt_fetch_fail_timeout_milliseconds "
              "lowered in every node (on a --ray-address cluster: its own timeout)",
              _short_fetch_timeout("recovery-transfers")),
    ShapeKind("recovery-fetch-timeout", 41, "the recovery-transfers nodes, for a check that needs their lowered "
              "fetch timeout (FR-014)", _short_fetch_timeout("recovery-fetch-timeout"), OWN_NODES,
              "needs RAY_rdt_fetch_fail_timeout_milliseconds lowered on every node"),
    ShapeKind("recovery-nodes", 50, "head + pool nodes b and c with role labels and fast health checks; "
              "checks kill node b", _recovery_nodes, FAULT_DRIVER, "kills and restarts nodes"),
)
