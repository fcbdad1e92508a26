"""How a recovery check's context is opened (the area's Area.context `opens`; the core's one
fixture `recovery_ctx` calls it), for the kind the area's rule gives the check's cluster shape
(Area.context.by_shape in area.py; conformance.areas.recovery.context):

* DeviceRecoveryCtx (recovery-devices): the live cluster, the nodes of the run's seed's choice per
  failure domain (conformance.run.nodes.domain_choice; the devices all free before the scenario,
  within device_release_s as Ray's time, and again after it: a leak fails here at the latest);
* NodeRecoveryCtx (recovery-nodes): the node lab, the node layout restored (roles an earlier check killed rejoin);
  on a --ray-address cluster its fault driver, whose nodes must carry the role labels;
* TransferRecoveryCtx (recovery-transfers, recovery-fetch-timeout): the transport registered with its
  fault-injecting twin (not applicable without one, decided before the cluster starts), then
  the cluster, and the driver's copy of Ray's RDT fetch timeout lowered for the check;
* RecoveryCtx itself (recovery-restart, FR-006): the cluster it starts from; the check starts the fresh one itself.

A partition check (tag `partition`) first needs a fault driver that can partition a node; without
one it is not applicable, decided before any cluster starts.
"""
from __future__ import annotations

from contextlib import nullcontext
from typing import TYPE_CHECKING, Any, Iterator

import pytest

from conformance.areas.recovery.area import STATE, RecoveryState
from conformance.areas.recovery.context import (
    DeviceRecoveryCtx,
    NodeRecoveryCtx,
    RecoveryCtx,
    TransferRecoveryCtx,
)
from conformance.areas.recovery.devices import chosen_device_nodes
from conformance.areas.recovery.nodes import NodeLab, known_nodes, restore_layout
from conformance.areas.recovery.transfers import TIMEOUT_ENV, driver_fetch_timeout, run_fetch_timeout_s
from conformance.catalog.node_sample import RECOVERY_CHECKS
from conformance.cluster.faults import NODE_KEY, ROLES
from conformance.run.check_context import CheckContext
from conformance.run.fixtures import not_applicable, partitioning_driver
from conformance.run.state import stash_of
from conformance.timing.host_load import MAX_FACTOR

if TYPE_CHECKING:
    from conformance.run.contexts import Lifetimes


# Why a recovery check's scenario runs where it does (metrics.node_scope: the evidence says it,
# beside node_coverage; conformance.catalog.node_sample.RECOVERY_CHECKS run on each chosen node).
ONE_NODE = ("one node: the first of the run's seed's choice per failure domain; this scenario is not run on each "
            "chosen node in one wave (FR-001..FR-005 are: docs/scale.md)")
ROLE_NODES = ("the roles head, b and c (node labels the shape or the vendor gives): the scenario kills or partitions "
              "node b and places work by the roles' labels, so it is not sampled per failure domain (docs/scale.md)")
WHOLE_CLUSTER = "the whole cluster: the scenario shuts Ray down and starts every node again"
TRANSFER_PAIR = ("the nodes the RDT pool placed the scenario's endpoints on; not sampled per failure domain "
                 "(no wave of pairs per domain yet: docs/scale.md)")


def open_context(kind: type[RecoveryCtx], base: CheckContext, lifetimes: Lifetimes) -> Iterator[RecoveryCtx]:
    """The running recovery check's context of `kind` (the module docstring)."""
    run = base.run
    state = stash_of(run).setdefault(STATE, RecoveryState())
    driver = partitioning_driver(run) if "partition" in base.check.tags else None
    if issubclass(kind, DeviceRecoveryCtx):
        yield from _device_ctx(base, state)
    elif issubclass(kind, NodeRecoveryCtx):
        yield _node_ctx(base, state)
    elif issubclass(kind, TransferRecoveryCtx):
        yield from _transfer_ctx(base, state, driver)
    else:
        ctx = kind.derive(base, state=state)
        ctx.cluster()
        ctx.metrics["node_scope"] = WHOLE_CLUSTER
        yield ctx


def _device_ctx(base: CheckContext, state: RecoveryState) -> Iterator[DeviceRecoveryCtx]:
    base.cluster()
    manifest = base.manifest
    devs = chosen_device_nodes(base.run, manifest, base.manager())
    if not devs:
        pytest.fail(f"no node advertises the {manifest.resource_name} resource; no device can fail over",
                    pytrace=False)
    dev = devs[0]
    base.budget.released(dev.resource, "every device to be free before the scenario", param="device_release_s")
    if base.check.id not in RECOVERY_CHECKS:   # else its scenario runs on each chosen node: decide_per_node records them
        base.metrics["node"] = dev.node_id[:8]
        base.metrics["devices_on_node"] = dev.count
        base.metrics["node_scope"] = ONE_NODE
        base.exercised([dev.node_id])
    yield DeviceRecoveryCtx.derive(base, state=state, devs=tuple(devs))
    # A scenario's devices must all be back before the next one (a leak fails here at the latest).
    base.budget.released(dev.resource, "every device to be free after the scenario", param="device_release_s")


def _node_ctx(base: CheckContext, state: RecoveryState) -> NodeRecoveryCtx:
    run = base.run
    shape, handle = base.shape, base.cluster()
    # With --conformance-ray-address the shape is the vendor's cluster as it is, and its fault
    # driver (without one the shape is not applicable: conformance.cluster.shapes.remote_reason).
    driver = run.fault_driver() if run.ray_address else None
    lab = NodeLab(handle, base.manifest, base.manager(), shape, driver, refs=known_nodes(run))
    if driver is not None:
        unknown = [r for r in ROLES if r not in lab.alive() and r not in lab.refs]
        if unknown:
            not_applicable(f"no live node labelled {NODE_KEY}={'|'.join(unknown)}: on a --ray-address cluster the "
                           f"nodes the fault driver may fail carry the roles {', '.join(ROLES)} as labels")
    restore_layout(base, lab)
    ctx = NodeRecoveryCtx.derive(base, state=state, node_lab=lab)
    ctx.exercised([n["NodeID"] for n in lab.alive().values()])   # the scenario's roles, each a node
    ctx.metrics["node_scope"] = ROLE_NODES
    return ctx


def remote_fetch_timeout() -> float:
    """The RDT fetch timeout a worker of an existing cluster runs with."""
    import ray

    def probe() -> float:
        from ray._private import ray_constants
        return float(ray_constants.RDT_FETCH_FAIL_TIMEOUT_SECONDS)

    return float(ray.get(ray.remote(probe).options(num_cpus=0).remote(), timeout=60))  # knob: hang guard of a one-off config probe


def _transfer_ctx(base: CheckContext, state: RecoveryState, driver: Any) -> Iterator[TransferRecoveryCtx]:
    from conformance.rdt.fixtures import transport_setup

    run = base.run
    x = transport_setup(run, faults=True)
    remote = bool(run.ray_address)
    base.cluster()   # after the transport's n/a
    timeout_s = remote_fetch_timeout() if remote else run_fetch_timeout_s(float(base.param("rdt_fetch_timeout_s")),
                                                                                 run.machinery)
    own = base.check.params.get("rdt_fetch_timeout_s")   # FR-018's partition runs with its own bounds
    most_s = float(own) * MAX_FACTOR if isinstance(own, (int, float)) else timeout_s
    if remote and timeout_s > most_s:
        not_applicable(f"the cluster's RDT fetch timeout is {timeout_s:g} s; the release judges these checks with at most "
                       f"{most_s:g} s (rdt_fetch_timeout_s x{MAX_FACTOR:g}): start its raylets with "
                       f"{TIMEOUT_ENV}={int(float(base.param('rdt_fetch_timeout_s')) * 1000)}")
    base.metrics["node_scope"] = TRANSFER_PAIR
    base.metrics["transport"] = {"name": x.name, "one_sided": x.one_sided, "can_abort": x.can_abort,
                                 "devices": list(x.config.devices), "rdt_fetch_timeout_s": timeout_s,
                                 "collective": bool(x.collective_backend)}
    with (nullcontext() if remote else driver_fetch_timeout(timeout_s)):
        yield TransferRecoveryCtx.derive(base, state=state, setup=x,
                                         fetch_timeout_s=timeout_s, partition_driver=driver)
