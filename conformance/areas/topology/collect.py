"""Driver side: run the probe on every alive node and join it with Ray's view of the node.

One probe per node, pinned with NodeAffinitySchedulingStrategy(soft=False) and num_cpus=0,
holding every device of the node so Ray hands it the node's full id list. If the devices
stay busy (another workload on a real cluster), the probe is cancelled and rerun without
devices: labels and description are still collected and the ids are reported as unknown.
Every wait is bounded.
"""
from __future__ import annotations

from types import ModuleType
from typing import Any

from conformance.areas.topology.facts import NodeFacts
from conformance.areas.topology.probe import node_facts_probe
from conformance.timing.waits import NO_RESULT, per_node_results

PROBE_TIMEOUT_S = 45.0  # knob: hang guard of the per-node probe


def _schedule(ray: ModuleType, node_id: str, resources: dict[str, float], args: tuple[Any, ...]) -> Any:
    from ray.util.scheduling_strategies import NodeAffinitySchedulingStrategy

    from conformance.cluster.requests import demand_all

    fn = ray.remote(node_facts_probe).options(
        num_cpus=0, **demand_all(resources), max_retries=0,
        scheduling_strategy=NodeAffinitySchedulingStrategy(node_id=node_id, soft=False))
    return fn.remote(*args)


def collect_node_facts(resource: str, manager_ref: str, provider_ref: str | None,
                       timeout_s: float = PROBE_TIMEOUT_S) -> list[NodeFacts]:
    import ray

    nodes = [n for n in ray.nodes() if n.get("Alive")]
    facts = {n["NodeID"]: NodeFacts(node_id=n["NodeID"], address=n.get("NodeManagerAddress", ""),
                                    resources=dict(n.get("Resources") or {}), ray_labels=dict(n.get("Labels") or {}),
                                    device_count=float((n.get("Resources") or {}).get(resource, 0)),
                                    provider_declared=bool(provider_ref))
             for n in nodes}
    args = (resource, manager_ref, provider_ref)

    def holding(f: NodeFacts) -> dict[str, float]:
        return {resource: f.device_count} if f.has_devices and float(f.device_count).is_integer() else {}

    results = per_node_results({nid: _schedule(ray, nid, holding(f), args) for nid, f in facts.items()}, timeout_s)
    retry = {nid for nid, r in results.items() if isinstance(r, str) and r.startswith(NO_RESULT) and holding(facts[nid])}
    if retry:
        again = per_node_results({nid: _schedule(ray, nid, {}, args) for nid in retry}, timeout_s)
        for nid in retry:
            if isinstance(again[nid], dict):
                again[nid]["ray_ids"] = None
                again[nid]["ray_ids_error"] = (f"could not hold all {facts[nid].device_count:g} {resource} of the "
                                               f"node ({results[nid]}); ids unknown")
            results[nid] = again[nid]
    for nid, r in results.items():
        f = facts[nid]
        if isinstance(r, str):
            f.probe_error = r
            continue
        for key in ("ray_ids", "ray_ids_error", "manager_type", "manager_error",
                    "plugin_labels", "plugin_labels_error", "description", "description_error"):
            if key in r:
                setattr(f, key, r[key])
        if not f.has_devices and not f.ray_ids_error:
            f.ray_ids = []
    return list(facts.values())
