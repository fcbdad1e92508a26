"""Simulated nodes for node-failure scenarios: the shape, and killing / rejoining its nodes.

The shape has three nodes started by the suite in this process (ray.cluster_utils): a head
that is never killed, and two worker nodes "b" and "c" that share a pool label, so that work
selected by the pool can move from one to the other, while a per-node label lets work select
one node only. Health checks are fast (FAST_HEALTH_CHECK: a hard-killed node is declared dead
after about a second instead of ~15 s), which keeps the bounds meaningful and the run short.

Each simulated node also gets RAY_CONFORMANCE_NODE_NAME (head, b, c) in its environment: a
simulated plugin that keeps per-host state can tell its "hosts" apart by it; real plugins
ignore it. The roles take the manifest's node environments that give a node devices (a CPU-only
node_env entry is skipped), so a cluster with CPU-only nodes stays certifiable.

Nodes fail through a fault driver (conformance.cluster.faults): the built-in one for the nodes
started here, or the --ray-address cluster's own (namespace hosts, SSH, Kubernetes), whose nodes
carry the role labels themselves.
"""
from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from conformance.areas.recovery.area import STATE, RecoveryState
from conformance.areas.recovery.bounds import FAST_HEALTH_CHECK
from conformance.areas.recovery.devices import DeviceNode, device_node, device_nodes, kill_quietly, spawn_holders
from conformance.catalog.vendor_calls import VendorHang, bounded_call
from conformance.cluster.faults import NODE_KEY, NODE_NAME_ENV, POOL_KEY, ROLES, ClusterUtilsFaultDriver, NodeRef
from conformance.cluster.manager import ClusterHandle, ClusterShape, detection_args, patched_environ, shape_node_labels
from conformance.cluster.ray_start import minimal_dashboard_agents
from conformance.run.check_context import CheckContext
from conformance.run.machinery import clock_ready
from conformance.run.release import total
from conformance.run.state import stash_of
from conformance.timing.clock import Clock, ScenarioFailed
from conformance.timing.waits import polled

if TYPE_CHECKING:
    from ray._private.accelerators.accelerator import AcceleratorManager

    from conformance.catalog.manifest import Manifest
    from conformance.run.budget import Budget
    from conformance.run.check_context import RunView
    from conformance.timing.host_load import MachineryRecord

SHAPE_NAME = "recovery-nodes"
TYPE_LABEL = "ray.io/accelerator-type"


def _ray() -> Any:
    import ray
    return ray


def known_nodes(run: RunView) -> dict[str, NodeRef]:
    """The last node seen per role in this run (a fault driver restarts a dead role from it)."""
    return stash_of(run).setdefault(STATE, RecoveryState()).known_nodes


def device_node_envs(manifest: Manifest, manager: type[AcceleratorManager] | None,
                     machinery: MachineryRecord | None = None) -> list[dict[str, str]]:
    """The manifest's node environments under which the plugin detects devices (in order).

    Asked in this process, as Ray asks when it starts a node (each call within the call bound, as
    the run's `machinery` record stretches it); an entry that gives a node no devices (a CPU-only
    node) is left out. All of them when none or no manager can tell.
    """
    base = [dict(env) for env in manifest.view.cluster.node_env] or [{}]
    if manager is None:
        return base
    keep = []
    for env in base:
        with patched_environ(env):
            try:
                count = bounded_call(manager.get_current_node_num_accelerators,
                                     method="get_current_node_num_accelerators", machinery=machinery)
            except VendorHang:
                raise
            except Exception:  # noqa: BLE001 - detection itself is judged by the device checks
                count = 1
        if count:
            keep.append(env)
    return keep or base


def node_shape(manifest: Manifest, manager: type[AcceleratorManager] | None = None,
               machinery: MachineryRecord | None = None) -> ClusterShape:
    """Head + two pool nodes, fast health checks; each role takes a device-giving node_env entry."""
    base = device_node_envs(manifest, manager, machinery)
    env = [{**base[i % len(base)], NODE_NAME_ENV: role} for i, role in enumerate(ROLES)]
    labels = [{NODE_KEY: "head"}, {POOL_KEY: "x", NODE_KEY: "b"}, {POOL_KEY: "x", NODE_KEY: "c"}]
    return ClusterShape(name=SHAPE_NAME, nodes=len(ROLES), system_config=dict(FAST_HEALTH_CHECK),
                        node_env=env, node_labels=labels)


def signature(node: dict[str, Any], resource: str) -> dict[str, Any]:
    """What a node advertises, independent of its id: device count, type resources, labels (the
    evidence a rejoin is judged by: the same before and after)."""
    res = node.get("Resources", {})
    types = sorted(k for k in res if k.startswith("accelerator_type:"))
    labels = {k: str(v) for k, v in sorted((node.get("Labels") or {}).items()) if k != "ray.io/node-id"}
    return {"devices": float(res.get(resource, 0.0)), "types": types, "labels": labels}


@dataclass
class NodeLab:
    """The node shape's cluster, by role: who is alive, kill a role, bring it back."""

    handle: ClusterHandle
    manifest: Manifest
    manager: type[AcceleratorManager]
    shape: ClusterShape
    driver: Any = None                     # a FaultDriver; None: the nodes started here
    refs: dict[str, NodeRef] = field(default_factory=dict)   # last node seen per role

    def __post_init__(self) -> None:
        if self.driver is None:
            self.driver = ClusterUtilsFaultDriver(self)

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
                          self.manifest.view.accelerator.manager, n["NodeID"], int(n["Resources"].get(self.resource, 0)))

    def devices_outside(self, roles: tuple[str, ...]) -> list[DeviceNode]:
        """Every live node with devices that is not one of `roles`: the head, and on a vendor's
        cluster of more hosts the ones that carry no role (`h3`, ...), which a scenario that must
        place work on its roles fills as it fills the head."""
        taken = {self.alive()[r]["NodeID"] for r in roles}
        return [device_node(self.manifest, self.manager, n) for n in device_nodes(self.resource)
                if n["NodeID"] not in taken]

    def selector(self, role: str | None = None) -> dict[str, str]:
        """A label selector for the pool (role None) or for one node, plus the accelerator type."""
        sel = {POOL_KEY: "x"} if role is None else {NODE_KEY: role}
        any_node = next(iter(self.alive().values()), {})
        acc_type = (any_node.get("Labels") or {}).get(TYPE_LABEL)
        if acc_type:
            sel[TYPE_LABEL] = acc_type
        return sel

    def ref(self, role: str) -> NodeRef:
        """The live node of a role (remembered, so that the driver can restart it once it is dead)."""
        self.refs[role] = NodeRef.from_ray(self.alive()[role])
        return self.refs[role]

    def kill(self, role: str) -> None:
        """Hard-kill a node (raylet, object store, workers): a host crash, made by the fault driver."""
        if role == ROLES[0]:
            raise ValueError("the head node is never killed (the driver is attached to it)")
        self.driver.kill_node(self.ref(role))

    def partition(self, role: str, seconds: float | None = None) -> None:
        if role == ROLES[0]:
            raise ValueError("the head node is never partitioned (the driver is attached to it)")
        self.driver.partition(self.ref(role), seconds)

    def heal(self, role: str) -> None:
        self.driver.heal(self.refs[role])

    def kill_local(self, node: NodeRef) -> None:
        """ClusterUtilsFaultDriver.kill_node: remove the role's cluster_utils node, not gracefully."""
        i = ROLES.index(node.labels.get(NODE_KEY, ""))
        self.handle.cluster.remove_node(self.handle.node_handles[i], allow_graceful=False)

    def wait_gone(self, clock: Clock, role: str, node_id: str, count: float, total_before: float,
                  bound_s: float) -> float:
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

    def view_after_loss(self, role: str, node_id: str, total_before: float) -> dict[str, Any]:
        """What the cluster view shows of a lost node (the evidence its judge reads): whether it is
        alive, the device total before and now, and how many live nodes carry its role's label."""
        nodes = _ray().nodes()
        return {"alive": any(n["NodeID"] == node_id and n.get("Alive") for n in nodes),
                "total_before": float(total_before), "total_after": total(self.resource),
                "labelled_live_nodes": sum(1 for n in nodes if n.get("Alive")
                                           and (n.get("Labels") or {}).get(NODE_KEY) == role)}

    def role_of(self, node_id: str) -> str:
        """The role of a live node (or the head of its id: a node of no role)."""
        for role, n in self.alive().items():
            if n["NodeID"] == node_id:
                return role
        return f"node {node_id[:8]}"

    def rejoin(self, role: str) -> None:
        """Start the role's node again (through the fault driver): it joins as a new node."""
        self.driver.restart_node(self.refs.get(role) or NodeRef("", "", {NODE_KEY: role}))

    def restart_local(self, node: NodeRef) -> Any:
        """ClusterUtilsFaultDriver.restart_node: add the role's node again, same env, resources, labels."""
        role = node.labels.get(NODE_KEY, "")
        i = ROLES.index(role)
        c = self.manifest.view.cluster
        with patched_environ(self.shape.env(i)), minimal_dashboard_agents():
            labels = shape_node_labels(self.shape, i, self.manager)
            added = self.handle.cluster.add_node(num_cpus=c.num_cpus_per_node,
                                                 object_store_memory=c.object_store_memory_mb * 1024 * 1024,
                                                 labels=labels or None, **detection_args(self.manifest))
        self.handle.node_handles[i] = added
        return added

    def missing(self) -> list[str]:
        """The roles with no live node now (an earlier check killed them), in role order."""
        alive = self.alive()
        return [r for r in ROLES if r not in alive]

    def start(self, roles: list[str]) -> None:
        """Start each role's node again (through the fault driver); the caller starts a role once."""
        for role in roles:
            self.rejoin(role)

    def seen(self, roles: list[str]) -> str:
        """What the cluster view shows of `roles` now: live and dead nodes carrying each role's label
        (what a rejoin that did not come is explained by)."""
        nodes = _ray().nodes()
        out = []
        for role in roles:
            labelled = [n for n in nodes if (n.get("Labels") or {}).get(NODE_KEY) == role]
            live = sum(1 for n in labelled if n.get("Alive"))
            out.append(f"{role}: {live} live and {len(labelled) - live} dead node(s) labelled {role}")
        return "; ".join(out)

    def without_devices(self) -> list[str]:
        """The live roles that advertise none of the resource (node scenarios need devices on each)."""
        return [r for r, n in self.alive().items() if n.get("Resources", {}).get(self.resource, 0) < 1]


def restore_layout(ctx: CheckContext, lab: NodeLab) -> None:
    """The setup of a node scenario: the roles an earlier check killed start again and register, every
    role advertises devices, every device is free. Both waits are Ray's machinery, through the
    check's budget (conformance.run.budget: stretched by the run's measurement, a fresh sample before
    blaming, recorded in metrics.waits), never the plugin's judged time:

    * a killed role's rejoin is a raylet starting and registering (`rejoin_s`); the node's start runs
      the plugin's detection, so a host that did its part leaves a node that never registers to the
      plugin (runs_plugin_code). Each missing role is started once: a fresh sample's extra time
      only waits longer, it never starts a second node for the role (timing.waits.polled);
    * the devices the previous check's actors held come back by Ray's accounting of a dead worker's
      resources (`device_release_s`): no code of the plugin runs on that path; a unit Ray reports
      still held by an alive actor is a leak (conformance.run.release, Budget.released)."""
    missing = lab.missing()
    if missing:
        what = f"node(s) {', '.join(missing)}, started again, to register"
        before = lab.seen(missing)   # a started node that registered and died shows as one more dead node
        ctx.budget.ray(polled(lambda: not lab.missing(), what, begin=lambda: lab.start(missing),
                              explain=lambda: f"{lab.seen(missing)} (before the start: {before})"),
                       what, param="rejoin_s", runs_plugin_code=True)
    empty = lab.without_devices()
    if empty:
        raise ScenarioFailed(f"[restore the node layout] node(s) {empty} advertise no {lab.resource}; node scenarios "
                             "need devices on every node")
    ctx.budget.released(lab.resource, "every device to be free before the scenario", param="device_release_s")


def rejoined(budget: Budget, clock: Clock, lab: NodeLab, role: str, replaces: str | None = None) -> tuple[dict[str, Any], float]:
    """Inside a scenario: start the role's node again (through the fault driver, once) and wait until
    it registers, a live node of the role (other than the node id `replaces`, when given); its
    live node and the seconds it took.

    A node's start and registration is Ray's machinery (a raylet starting, the GCS admitting it),
    bounded by the check's rejoin_s: through the check's budget (stretched by the run's measurement,
    a fresh sample before blaming, recorded in metrics.waits), left out of the scenario's bound
    (conformance.areas.recovery.groups.await_ray). The node's start runs the vendor's manager
    (device detection, labels), so a node that never registers on a host a fresh sample says did
    its part reaches the check as the plugin's (runs_plugin_code). Whether what it advertises is
    right is never this wait's: the scenario judges that after it, on its own clock."""
    from conformance.areas.recovery.groups import await_ray

    def registered() -> dict[str, Any] | None:
        node = lab.alive().get(role)
        return node if node is not None and node["NodeID"] != replaces else None

    before = lab.seen([role])   # a started node that registered and died shows as one more dead node
    t0 = time.monotonic()
    node = await_ray(budget, clock, registered, f"node {role}, started again, to register", "rejoin_s",
                     runs_plugin_code=True, begin=lambda: lab.rejoin(role),
                     explain=lambda: f"{lab.seen([role])} (before the start: {before})")
    return node, time.monotonic() - t0


def fill(clock: Clock, devs: list[DeviceNode], what: str, ready_s: float, machinery: MachineryRecord) -> list[Any]:
    """Blockers holding every device of each node in `devs`, so that placement elsewhere is forced:
    started on every node at once and awaited in one wait (a cluster of many hosts of no role costs
    one wait, not one per host). The nodes' devices are free by Ray's own accounting
    (restore_layout), so their start is a wait on Ray's machinery (conformance.run.machinery:
    `ready_s` stretched by the run's `machinery` record, a fresh sample, else the host's failure),
    left out of the scenario's bound; a blocker that raised reaches the caller."""
    blockers = [b for dev in devs for b in spawn_holders(dev, dev.count)]
    try:
        clock_ready(clock, ready_s, machinery)([b.state.remote() for b in blockers], f"blockers to fill {what}")
    except BaseException:
        kill_quietly(blockers)
        raise
    return blockers


def release(budget: Budget, clock: Clock, blockers: list[Any], devs: list[DeviceNode], what: str) -> None:
    """End the blockers (`fill`'s); each node's devices free again within the check's
    device_release_s. The blockers are the suite's own actors, so their units coming back is Ray's
    accounting of dead workers: a wait on Ray's machinery through the check's `budget` (stretched,
    recorded; conformance.run.release: a blocker Ray still reports alive is a leak), left out of
    the scenario's bound (`clock`). Every blocker is ended first, so the nodes' waits overlap."""
    kill_quietly(blockers)
    for dev in devs:
        budget.released(dev.resource, f"{what}: node {dev.node_id[:8]}'s devices to be free after its blockers ended",
                        param="device_release_s", node_id=dev.node_id, units=dev.count, clock=clock)


def labels_match(labels: dict[str, str], selector: dict[str, str]) -> bool:
    """Equality selectors only (what the scenarios use)."""
    return all(labels.get(k) == v for k, v in selector.items())
