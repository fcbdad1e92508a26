"""WL-002's scenario on a live cluster: data-parallel workers over the nodes, one group of the
manifest's collective backend, K steps, every wait bounded.

The workers are collective group members (conformance.collective.members.CollectiveMember)
running dp_worker's functions: on host tensors the collective area's member pool itself (no actor
to start), on a device members of the check's own, each holding one unit of the accelerator. The
run's CollectiveContext registered the backend in the driver and names groups per run; a wait
that runs out is a Hang (conformance.collective.context) naming what was awaited, and the
members are discarded (the pool is rebuilt for the next check).
"""
from __future__ import annotations

import time
from typing import Any

from conformance.areas.workload import dp_worker
from conformance.areas.workload.dp import DpPlan, DpRecord
from conformance.collective.config import POOL_SIZE
from conformance.collective.context import CollectiveContext, bounded
from conformance.collective.members import CollectiveMember


def placement(nodes: list[tuple[str, int]], workers: int, device_units: bool) -> list[str]:
    """A node id per worker, round-robin over the nodes so they span as many as there are; with
    `device_units`, no node gets more workers than the units it has (pure). Fewer than `workers`
    when the units run out."""
    left = {node: (units if device_units else workers) for node, units in nodes}
    out: list[str] = []
    while len(out) < workers and any(left.values()):
        for node, _ in nodes:
            if left[node] > 0 and len(out) < workers:
                out.append(node)
                left[node] -= 1
    return out


def cluster_nodes(resource: str) -> list[tuple[str, int]]:
    """Alive nodes (head first) and the units of `resource` each has."""
    import ray

    nodes = [n for n in ray.nodes() if n.get("Alive")]
    nodes.sort(key=lambda n: (not n.get("Resources", {}).get("node:__internal_head__"), n["NodeID"]))
    return [(n["NodeID"], int(n.get("Resources", {}).get(resource, 0))) for n in nodes]


def workers_for(state: CollectiveContext, nodes: list[str], resource: str | None, bound_s: float) -> tuple[list[Any], bool]:
    """The workers, and whether they are the run's member pool (True: give them back, never kill).

    Host tensors (`resource` None): the collective area's member pool (POOL_SIZE members, rank i
    on node i mod nodes, already started for the collective checks; the same placement as
    `placement`) when the job needs no more members than it has, so the check starts no actor.
    Otherwise, and on a device (one unit of `resource` each), members of its own pinned to
    `nodes`, all answering within the bound."""
    if resource is None and len(nodes) <= POOL_SIZE:
        return state.pool()[:len(nodes)], True
    import ray
    from ray.util.scheduling_strategies import NodeAffinitySchedulingStrategy

    from conformance.cluster.requests import demand

    cfg = state.config
    remote: Any = ray.remote(CollectiveMember)   # Ray's hints type the handle as the class
    actors = []
    for node in nodes:
        opts: dict[str, Any] = {"num_cpus": 0,
                                "scheduling_strategy": NodeAffinitySchedulingStrategy(node, soft=False)}
        if resource:
            opts.update(demand(resource, 1))
        actors.append(remote.options(**opts).remote(cfg.backend, cfg.group_class, cfg.register, state.python_path))
    state.started_ids |= {a._actor_id.hex() for a in actors}
    try:
        bounded([a.info.remote() for a in actors], bound_s, "data-parallel workers to start")
    except BaseException:
        state.stop(actors)
        raise
    return actors, False


def run_steps(state: CollectiveContext, workers: list[Any], plan: DpPlan, device: str, bound_s: float) -> DpRecord:
    """Set up every rank, form the group (init_collective_group in each worker), take the plan's
    steps, read the final parameters, destroy the group. Any error or hang: CollectiveError."""
    ws = len(workers)
    group = state.group_name("wl-dp")
    record = DpRecord()
    where = state.guard(workers, lambda: bounded([w.call.remote(dp_worker.SETUP, plan.as_dict(), r, device)
                                                  for r, w in enumerate(workers)], bound_s, "the workers to build their shards"))
    wrong = sorted({f"{p['device']} {p['dtype']}" for p in where} - {f"{device} {plan.dtype}"})
    if wrong:
        raise AssertionError(f"the workers' parameters live on {', '.join(wrong)}, not on {device} {plan.dtype}")
    state.create(workers, group)
    try:
        for k in range(1, plan.steps + 1):
            t0 = time.perf_counter()
            what = f"step {k} of {ws} workers (allreduce in {group!r})"
            outs = state.guard(workers, lambda what=what: bounded([w.call.remote(dp_worker.STEP, group) for w in workers],
                                                                               bound_s, what))
            record.step_s.append(time.perf_counter() - t0)
            record.digests.append([o["digest"] for o in outs])
            record.allreduce_s.append([float(o["allreduce_s"]) for o in outs])
        record.final = state.guard(workers, lambda: bounded([w.call.remote(dp_worker.PARAMS) for w in workers],
                                                            bound_s, "the workers' final parameters"))
    finally:
        try:
            state.destroy(workers, group)
            bounded([w.call.remote(dp_worker.FORGET) for w in workers], bound_s, "the workers to drop their shards")
        except Exception:  # noqa: BLE001 - the workers are killed next; the steps' finding stands
            pass
    return record
