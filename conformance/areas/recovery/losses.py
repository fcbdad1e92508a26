"""Losing a node of the recovery-nodes cluster, as the node checks do it: kill (or partition) a
role's node, wait until it left Ray's view, record the loss; and read the survivors and the view.

Shared by the checks of conformance/checks/recovery/ that lose a node (test_recovery_nodes,
test_recovery_domains): the loss is recorded the same way wherever a check causes it.
"""
from __future__ import annotations

from typing import Any

from conformance.areas.recovery.context import NodeRecoveryCtx
from conformance.areas.recovery.devices import DeviceNode
from conformance.exc_text import first_line
from conformance.run.budget import CheckTimeout, Scenario
from conformance.run.release import total


def _ray() -> Any:
    import ray
    return ray


def survivor_states(nc: NodeRecoveryCtx, clock: Scenario, holders: list[Any], ready_s: float) -> list[Any]:
    """Each holder's state, or why it did not answer (a dead survivor must not end the check early)."""
    out: list[Any] = []
    for h in holders:
        try:
            out.append(nc.budget.get(h.state.remote(), min(ready_s, max(clock.remaining(), 1.0)), "state"))
        except CheckTimeout:
            raise
        except Exception as exc:  # noqa: BLE001 - the finding
            out.append(first_line(exc))
    return out


def node_labels_of(node_id: str) -> dict[str, str]:
    for n in _ray().nodes():
        if n["NodeID"] == node_id:
            return {k: str(v) for k, v in (n.get("Labels") or {}).items()}
    return {}


def lose_b(nc: NodeRecoveryCtx, clock: Scenario, bound: str = "node_gone_s", partition: bool = False) -> DeviceNode:
    """Kill (or partition) node b and wait until it left the cluster view (lose_node)."""
    return lose_node(nc, clock, "b", bound, partition)


def lose_node(nc: NodeRecoveryCtx, clock: Scenario, role: str, bound: str = "node_gone_s", partition: bool = False,
              devices_key: str = "node_b_devices") -> DeviceNode:
    """Kill (or partition) the node of `role` and wait until it left the cluster view; records its
    device count (as `devices_key`), how long that took and what the view then shows (the
    evidence of the loss)."""
    lab = nc.lab
    node = lab.dev(role)
    total_before = total(lab.resource)
    nc.metrics[devices_key] = node.count
    t0 = clock.elapsed()
    if partition:
        lab.partition(role)
    else:
        lab.kill(role)
    lab.wait_gone(clock, role, node.node_id, node.count, total_before, nc.param(bound))
    nc.metrics["declared_dead_s" if partition else "gone_s"] = round(clock.elapsed() - t0, 3)
    nc.metrics["view_after"] = lab.view_after_loss(role, node.node_id, total_before)
    return node
