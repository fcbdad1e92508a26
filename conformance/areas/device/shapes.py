"""The device area's cluster shapes (conformance.cluster.shapes reads KINDS through the area)."""
from __future__ import annotations

from typing import TYPE_CHECKING

from conformance.cluster.manager import ClusterShape, complete
from conformance.cluster.shapes import OWN_NODES, ShapeKind, ShapeNotApplicable

if TYPE_CHECKING:
    from ray._private.accelerators.accelerator import AcceleratorManager

    from conformance.catalog.manifest import Manifest
    from conformance.timing.host_load import MachineryRecord


def _host_without_device(manifest: Manifest, manager: type[AcceleratorManager] | None,
                         machinery: MachineryRecord) -> ClusterShape:
    overlay = manifest.view.accelerator.hosts.without_device
    if overlay is None:
        raise ShapeNotApplicable("the manifest declares no accelerator.hosts.without_device (how a host without "
                                 "the device or its driver looks)")
    head_env = (manifest.view.cluster.node_env or ({},))[0]
    return complete(ClusterShape(name="host-without-device", nodes=2,  # knob: structure: a head + the host
                                 node_env=[dict(head_env), dict(overlay)]), manifest)


PRESET_IDS = ("1", "2")   # knob: structure: two devices pre-selected, a third (id 0) stays hidden


def _preset_visible(manifest: Manifest, manager: type[AcceleratorManager] | None,
                    machinery: MachineryRecord) -> ClusterShape:
    from conformance.catalog.vendor_calls import bounded_call
    env_var = bounded_call(manager.get_visible_accelerator_ids_env_var, method="get_visible_accelerator_ids_env_var",
                           machinery=machinery) if manager is not None else None
    if env_var is None:
        raise ShapeNotApplicable("the manager names no visible-devices variable")
    return complete(ClusterShape(name="preset-visible", nodes=1, node_env=[{env_var: ",".join(PRESET_IDS)}]),
                    manifest)


KINDS: tuple[ShapeKind, ...] = (
    ShapeKind("host-without-device", 60, "a head + a node that looks like the manifest's host without the device "
              "(on a --ray-address cluster: its own nodes without devices)", _host_without_device),
    ShapeKind("preset-visible", 70, "one node started with the visible-devices variable preset to two ids",
              _preset_visible, OWN_NODES, "presets the visible-devices variable of a node"),
)
