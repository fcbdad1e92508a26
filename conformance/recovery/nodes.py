"""Simulated nodes for node-failure scenarios: the shape, and killing / rejoining its nodes.

The shape has three nodes started by the suite in this process (ray.cluster_utils): a head
that is never killed, and two worker nodes "b" and "c" that share a pool label, so that work
selected by the pool can move from one to the other, while a per-node label lets work select
one node only. Health checks are fast (FAST_HEALTH_CHECK: a hard-killed node is declared dead
after about a second instead of ~15 s), which keeps the bounds meaningful and the run short.

Each simulated node also gets RAY_CONFORMANCE_NODE_NAME (head, b, c) in its environment: a
simulated plugin that keeps per-host state can tell its "hosts" apart by it; real plugins
ignore it.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from conformance.cluster import ClusterHandle, ClusterShape, detection_args, patched_environ, shape_node_labels
from conformance.recovery import bounds as B
from conformance.recovery.devices import DeviceNode, available, kill_quietly, spawn_holders, total
from conformance.recovery.scenario import Clock

SHAPE_NAME = "recovery-nodes"
POOL_KEY = "conformance.recovery/pool"
NODE_KEY = "conformance.recovery/node"
NODE_NAME_ENV = "RAY_CONFORMANCE_NODE_NAME"
ROLES = ("head", "b", "c")
TYPE_LABEL = "ray.io/accelerator-type"


def _ray() -> Any:
    import ray
    return ray


def node_shape(manifest: Any) -> ClusterShape:
    """Head + two pool nodes, fast health checks; node i keeps the manifest's node_env[i]."""
    base = manifest.cluster["node_env"]
    env = [{**(base[i] if i < len(base) else {}), NODE_NAME_ENV: role} for i, role in enumerate(ROLES)]
    labels = [{NODE_KEY: "head"}, {POOL_KEY: "x", NODE_KEY: "b"}, {POOL_KEY: "x", NODE_KEY: "c"}]
    return ClusterShape(name=SHAPE_NAME, nodes=len(ROLES), system_config=dict(B.FAST_HEALTH_CHECK),
                        node_env=env, node_labels=labels)


def signature(node: dict[str, Any], resource: str) -> tuple[Any, ...]:
    """What a node advertises, independent of its id: device count, type resources, labels."""
    res = node.get("Resources", {})
    types = tuple(sorted(k for k in res if k.startswith("accelerator_type:")))
    labels = tuple(sorted((k, v) for k, v in (node.get("Labels") or {}).items() if k != "ray.io/node-id"))
    return (res.get(resource, 0.0), types, labels)


@dataclass
class NodeLab:
    """The node shape's cluster, by role: who is alive, kill a role, bring it back."""

    handle: ClusterHandle
    manifest: Any
    manager: type
    shape: ClusterShape

    @property
    def resource(self) -> str:
        return self.manifest.resource_name

    def alive(self) -> dict[str, dict[str, Any]]:
        """Live nodes by role (the role label the shape gave them)."""
        out = {}
        for n in _ray().nodes():
            role = (n.get("Labels") or {}).get(NODE_KEY)
            if n.get("Alive") and role in ROLES:
                out[role] = n
        return out

    def dev(self, role: str) -> DeviceNode:
        n = self.alive()[role]
        return DeviceNode(self.resource, self.manager.get_visible_accelerator_ids_env_var(),
                          self.manifest.accelerator["manager"], n["NodeID"], int(n["Resources"].get(self.resource, 0)))

    def selector(self, role: str | None = None) -> dict[str, str]:
        """A label selector for the pool (role None) or for one node, plus the accelerator type."""
        sel = {POOL_KEY: "x"} if role is None else {NODE_KEY: role}
        any_node = next(iter(self.alive().values()), {})
        acc_type = (any_node.get("Labels") or {}).get(TYPE_LABEL)
        if acc_type:
            sel[TYPE_LABEL] = acc_type
        return sel

    def kill(self, role: str) -> None:
        """Hard-kill a worker node's processes (raylet, object store, workers): a host crash."""
        i = ROLES.index(role)
        if i == 0:
            raise ValueError("the head node is never killed (the driver is attached to it)")
        node = self.handle.node_handles[i]
        self.handle.cluster.remove_node(node, allow_graceful=False)

    def wait_gone(self, clock: Clock, role: str, node_id: str, count: float, total_before: float,
                  bound_s: float = B.NODE_GONE_S) -> float:
        """Until the node is dead in the view, the total dropped by its count, its labels gone."""
        seen: list[str] = []

        def gone() -> bool:
            nodes = _ray().nodes()
            still = [n for n in nodes if n["NodeID"] == node_id and n.get("Alive")]
            labelled = [n for n in nodes if n.get("Alive") and (n.get("Labels") or {}).get(NODE_KEY) == role]
            tot = total(self.resource)
            seen[:] = [f"alive={bool(still)}, live nodes labelled {role}={len(labelled)}, "
                       f"{self.resource} total={tot} (before {total_before}, node had {count})"]
            return not still and not labelled and abs(tot - (total_before - count)) < 1e-9

        clock.wait_for(gone, f"node {role} ({node_id[:8]}) to leave the cluster view", bound_s,
                       explain=lambda: seen[0] if seen else "nothing")
        return clock.elapsed()

    def rejoin(self, role: str) -> Any:
        """Start the role's node again with the same environment, resources and labels."""
        i = ROLES.index(role)
        c = self.manifest.cluster
        env = self.shape.node_env[i] if self.shape.node_env and i < len(self.shape.node_env) else {}
        with patched_environ(env):
            labels = shape_node_labels(self.shape, i, self.manager)
            node = self.handle.cluster.add_node(num_cpus=c["num_cpus_per_node"],
                                                object_store_memory=c["object_store_memory_mb"] * 1024 * 1024,
                                                labels=labels or None, **detection_args(self.manifest))
        self.handle.node_handles[i] = node
        return node

    def ensure_layout(self, clock: Clock) -> None:
        """Bring back roles an earlier check killed, then require devices on every role."""
        missing = [r for r in ROLES if r not in self.alive()]
        for role in missing:
            self.rejoin(role)
        clock.wait_for(lambda: all(r in self.alive() for r in ROLES), f"nodes {missing} to rejoin", B.REJOIN_S)
        empty = [r for r, n in self.alive().items() if n.get("Resources", {}).get(self.resource, 0) < 1]
        if empty:
            raise clock.fail(f"node(s) {empty} advertise no {self.resource}; node scenarios need devices on every node")
        clock.wait_for(lambda: available(self.resource) >= total(self.resource) - 1e-9,
                       "every device to be free before the scenario", B.DEVICE_RELEASE_S)


def fill(clock: Clock, dev: DeviceNode, what: str) -> list[Any]:
    """Blockers holding every device of a node, so that placement elsewhere is forced."""
    blockers = spawn_holders(dev, dev.count)
    clock.get([b.state.remote() for b in blockers], f"blockers to fill node {what}", B.ACTOR_READY_S)
    return blockers


def release(clock: Clock, blockers: list[Any], dev: DeviceNode, what: str) -> None:
    kill_quietly(blockers)
    clock.wait_for(lambda: available(dev.resource, dev.node_id) >= dev.count - 1e-9,
                   f"node {what}'s devices to be free after its blockers ended", B.DEVICE_RELEASE_S)


def labels_match(labels: dict[str, str], selector: dict[str, str]) -> bool:
    """Equality selectors only (what the scenarios use)."""
    return all(labels.get(k) == v for k, v in selector.items())
