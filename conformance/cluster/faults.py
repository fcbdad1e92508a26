"""Fault drivers: how the node-recovery checks make a node fail, on any kind of cluster.

The checks never kill a node themselves; they ask a *fault driver*, which knows how nodes of
this cluster are run:

* `kill_node(node)`          – the host crashes: every Ray process on it ends at once.
* `partition(node, seconds)` – the host is cut off the network (processes keep running);
                               with `seconds`, the driver heals it by itself after that long.
* `heal(node)`               – the partition ends.
* `restart_node(node)`       – the host's Ray node is started again (a repaired host, or the
                               supervisor restarting the raylet); it joins as a new node.

`node` is a `NodeRef` (Ray's node id, the raylet's IP, its labels). Drivers say which faults
they support (`supports`); a check whose fault is unsupported is not applicable, with the reason.

Built in: `ClusterUtilsFaultDriver` (nodes the suite starts itself with ray.cluster_utils: kill
and restart, no partition: they share one network stack) and
`conformance.cluster.hosts.faults:NamespaceFaultDriver` (the network-namespace hosts). A vendor writes
its own for SSH or Kubernetes (docs/recovery.md, "Fault drivers") and selects it with the
manifest's `cluster.fault_driver` or `ray-conformance run --fault-driver REF
--fault-driver-options JSON`.
"""
from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

from conformance.errors import UserError

if TYPE_CHECKING:
    from conformance.catalog.manifest import Manifest

# The node roles the node-recovery checks select on, as node labels: the suite's own nodes and
# the namespace hosts carry them, and so must the nodes of a --ray-address cluster that a fault
# driver may fail. The strings are part of that contract (users label their clusters with them).
POOL_KEY = "conformance.areas.recovery/pool"
NODE_KEY = "conformance.areas.recovery/node"
NODE_NAME_ENV = "RAY_CONFORMANCE_NODE_NAME"   # the per-host name a simulated plugin reads
ROLES = ("head", "b", "c")


@dataclass(frozen=True)
class NodeRef:
    """A Ray node as the checks see it (from ray.nodes())."""

    node_id: str
    ip: str
    labels: dict[str, str] = field(default_factory=dict, hash=False, compare=False)

    @classmethod
    def from_ray(cls, node: dict[str, Any]) -> "NodeRef":
        return cls(node["NodeID"], node.get("NodeManagerAddress", ""), dict(node.get("Labels") or {}))


class FaultNotSupported(Exception):
    """The driver cannot make this fault on this cluster (the check is not applicable)."""


@runtime_checkable
class FaultDriver(Protocol):
    """What the recovery checks need from a cluster's operator (see the module docstring)."""

    name: str
    supports: frozenset[str]

    def kill_node(self, node: NodeRef) -> None: ...

    def partition(self, node: NodeRef, seconds: float | None = None) -> None: ...

    def heal(self, node: NodeRef) -> None: ...

    def restart_node(self, node: NodeRef) -> None: ...


class LocalLab(Protocol):
    """What the cluster_utils driver needs of the suite's own cluster: kill and restart a node it started."""

    def kill_local(self, node: NodeRef) -> None: ...

    def restart_local(self, node: NodeRef) -> None: ...


class ClusterUtilsFaultDriver:
    """Nodes the suite started itself (ray.cluster_utils); `lab` knows how to start each role."""

    name = "cluster_utils"
    supports = frozenset({"kill", "restart"})

    def __init__(self, lab: LocalLab) -> None:
        self.lab = lab

    def kill_node(self, node: NodeRef) -> None:
        self.lab.kill_local(node)

    def partition(self, node: NodeRef, seconds: float | None = None) -> None:
        raise FaultNotSupported("simulated nodes (ray.cluster_utils) share one network stack: they cannot be "
                                "partitioned; use a fault driver for real hosts (e.g. the namespace hosts)")

    def heal(self, node: NodeRef) -> None:
        self.partition(node)

    def restart_node(self, node: NodeRef) -> None:
        self.lab.restart_local(node)


@dataclass(frozen=True)
class DriverSpec:
    """Which driver to load and its options (manifest `cluster.fault_driver` or the CLI)."""

    ref: str
    options: dict[str, Any]


def driver_spec(manifest: Manifest | None, cli_ref: str | None, cli_options: str | None) -> DriverSpec | None:
    """The CLI wins over the manifest; None when neither names a driver."""
    configured = manifest.view.cluster.fault_driver if manifest is not None else None
    ref = cli_ref or (configured.driver if configured else None)
    if not ref:
        return None
    options = dict(configured.options or {}) if configured and not cli_ref else {}
    if cli_options:
        try:
            parsed = json.loads(cli_options)
        except json.JSONDecodeError as exc:
            raise UserError(f"--fault-driver-options: expected a JSON object, got invalid JSON ({exc.msg})") from None
        if not isinstance(parsed, dict):
            raise UserError("--fault-driver-options: expected a JSON object")
        options.update(parsed)
    return DriverSpec(ref, options)


def load_driver(spec: DriverSpec) -> FaultDriver:
    """Import `pkg.module:Class` and construct it with the options (one-line errors)."""
    from conformance.imports import import_ref

    try:
        cls = import_ref(spec.ref)
    except Exception as exc:  # noqa: BLE001 - reported as a one-line usage error
        raise UserError(f"fault_driver.driver: cannot import {spec.ref!r}: {type(exc).__name__}: {exc}") from None
    try:
        driver: FaultDriver = cls(**spec.options)
    except Exception as exc:  # noqa: BLE001
        raise UserError(f"fault_driver.options: {spec.ref} rejected them: {type(exc).__name__}: {exc}") from None
    missing = [m for m in ("kill_node", "partition", "heal", "restart_node") if not callable(getattr(driver, m, None))]
    if missing or not isinstance(getattr(driver, "supports", None), (set, frozenset)):
        raise UserError(f"fault_driver.driver: {spec.ref} is no fault driver (needs kill_node, partition, heal, "
                        f"restart_node and a `supports` set; missing {missing or ['supports']})")
    return driver
