"""Endpoint actors for the transport checks: placement, collective groups, health, teardown.

Endpoints are expensive to start (a worker process that imports torch: ~1-2 s each here), so a
check module keeps one pool and reuses it across its checks. A pool is rebuilt when the
cluster it lives on was replaced (another check needed another cluster shape) or when an
endpoint stopped answering (Ray kills both actors after a failed transfer on a transport that
cannot abort, e.g. GLOO; a broken transport can also wedge a receiver).

Endpoints ask for no CPU (they must not starve the checks' own tasks on small nodes) and for
one accelerator unit each only when the transport moves device memory, so the tensors can be
created on a device Ray assigned to them.
"""
from __future__ import annotations

import itertools
from dataclasses import dataclass, field
from typing import Any

from conformance.areas.transport.registration import TransportSetup

HEALTH_TIMEOUT_S = 15.0  # knob: hang guard of endpoint health calls
START_TIMEOUT_S = 120.0  # knob: hang guard of endpoint start
_remote_cls: Any = None
_group_ids = itertools.count()


def endpoint_class() -> Any:
    global _remote_cls
    if _remote_cls is None:
        import ray

        from conformance.areas.transport.endpoint import Endpoint
        _remote_cls = ray.remote(enable_tensor_transport=True)(Endpoint)
    return _remote_cls


def alive_nodes(resource: str | None = None) -> list[dict[str, Any]]:
    """Alive nodes (with at least one unit of `resource` when given), head node first."""
    import ray

    nodes = [n for n in ray.nodes() if n.get("Alive")]
    if resource:
        nodes = [n for n in nodes if n.get("Resources", {}).get(resource, 0) >= 1]
    return sorted(nodes, key=lambda n: (not n.get("Resources", {}).get("node:__internal_head__"), n["NodeID"]))


@dataclass
class Endpoints:
    """A set of endpoint actors (one collective group over all of them when the transport needs one)."""

    actors: list[Any]
    infos: list[dict[str, Any]]
    device: str
    group: Any = None
    notes: list[str] = field(default_factory=list)

    def __len__(self) -> int:
        return len(self.actors)

    def node_of(self, i: int) -> str:
        return self.infos[i]["node_id"]

    def pid_of(self, i: int) -> int:
        return self.infos[i]["pid"]

    def healthy(self, timeout_s: float = HEALTH_TIMEOUT_S) -> bool:
        import ray

        try:
            ray.get([a.info.remote() for a in self.actors], timeout=timeout_s)
            return True
        except Exception:  # noqa: BLE001 - any failure means "rebuild"
            return False

    def shutdown(self) -> None:
        import ray

        if self.group is not None:
            try:
                from ray.experimental.collective import destroy_collective_group
                destroy_collective_group(self.group)
            except Exception:  # noqa: BLE001 - Ray may have destroyed it after a failure
                pass
            self.group = None
        for a in self.actors:
            try:
                ray.kill(a)
            except Exception:  # noqa: BLE001
                pass
        self.actors = []


def start_endpoints(setup: TransportSetup, resource: str, *, device: str, nodes: list[str | None],
                    units: bool | None = None) -> Endpoints:
    """One endpoint per entry of `nodes` (a node id to pin it to, or None for anywhere).

    Each holds one unit of the accelerator resource when `units` (default: when the tensors
    live on a device, so Ray assigns one to it).
    """
    import ray
    from ray.util.scheduling_strategies import NodeAffinitySchedulingStrategy

    cls = endpoint_class()
    actors = []
    for node in nodes:
        opts: dict[str, Any] = {"num_cpus": 0}
        if units if units is not None else device != "cpu":
            from conformance.cluster.requests import demand
            opts.update(demand(resource, 1))
        if node is not None:
            opts["scheduling_strategy"] = NodeAffinitySchedulingStrategy(node_id=node, soft=False)
        actors.append(cls.options(**opts).remote(device))
    eps = Endpoints(actors=actors, infos=[], device=device)
    try:
        eps.infos = ray.get([a.info.remote() for a in actors], timeout=START_TIMEOUT_S)
        backend = setup.config.collective_backend
        if backend and len(actors) > 1:
            from ray.experimental.collective import create_collective_group
            eps.group = create_collective_group(actors, backend=backend,
                                                name=f"conformance-{backend}-{next(_group_ids)}")
    except BaseException:
        eps.shutdown()
        raise
    return eps


class PoolCache:
    """At most one live Endpoints per key (e.g. "intra-node"), rebuilt when stale."""

    def __init__(self) -> None:
        self._pools: dict[str, tuple[Any, Endpoints]] = {}

    def get(self, key: str, cluster: Any, factory: Any) -> Endpoints:
        entry = self._pools.get(key)
        if entry is not None:
            owner, eps = entry
            if owner is cluster and len(eps) and eps.healthy():
                return eps
            self.drop(key)
        eps = factory()
        self._pools[key] = (cluster, eps)
        return eps

    def drop(self, key: str) -> None:
        entry = self._pools.pop(key, None)
        if entry is not None:
            owner, eps = entry
            import ray
            if ray.is_initialized():
                eps.shutdown()

    def close(self) -> None:
        for key in list(self._pools):
            self.drop(key)


def device_endpoint_nodes(resource: str, device: str, cap: int = 8) -> tuple[list[str | None], bool]:
    """Nodes for one endpoint per accelerator unit, round-robin over nodes, at most `cap`.

    Returns (node of each endpoint, whether each endpoint holds a unit). Without accelerator
    units in the cluster, one endpoint per node (not holding units) when the tensors are on
    the host; none when they must be on a device.
    """
    per_node = [[n["NodeID"]] * int(n.get("Resources", {}).get(resource, 0)) for n in alive_nodes()]
    with_units = any(per_node)
    if not with_units:
        if device != "cpu":
            return [], True
        per_node = [[n["NodeID"]] for n in alive_nodes()]
    nodes: list[str | None] = []
    while any(per_node) and len(nodes) < cap:
        for lst in per_node:
            if lst and len(nodes) < cap:
                nodes.append(lst.pop())
    return nodes, with_units
