"""Collective area, ops on a live cluster: registration reaches every process (CC-003), every op's
semantics at several world sizes across nodes (CC-004), op ordering with point-to-point
messages interleaved (CC-005).

They mirror Ray's own tests (util/collective/tests/single_node_cpu_tests: test_allreduce,
test_reduce, test_broadcast, test_allgather, test_reducescatter, test_sendrecv; and
test_backend_registry) for the manifest's backend, through the public ray.util.collective API.
"""
from __future__ import annotations

from typing import Any

import pytest

from conformance.collective import programs
from conformance.collective.context import CollectiveCtx, CollectiveError
from conformance.run.fixtures import not_applicable


def hook_job(ctx: CollectiveCtx, bound_s: float) -> dict[str, Any]:
    """Run conformance.areas.collective.hook_driver as a second job on this cluster."""
    import json
    import os
    import subprocess
    import sys

    import ray

    from conformance.collective.members import spec_env

    cfg, cc = ctx.config, ctx.backend
    spec = spec_env(cfg.backend, cfg.group_class, cfg.register, cc.python_path)
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([*cc.python_path, os.environ.get("PYTHONPATH", "")])}
    from conformance.areas.collective.hook_driver import MACHINERY_ALLOWANCE_S

    measured = ctx.budget.measured("worker_start") or 0.0
    cmd = [sys.executable, "-m", "conformance.areas.collective.hook_driver", ray.get_runtime_context().gcs_address,
           spec, cfg.ray_backend, cc.group_name("hook"), str(bound_s), str(measured)]
    limit = bound_s + MACHINERY_ALLOWANCE_S   # its members' start is Ray's machinery, judged by the job itself
    try:
        with ctx.budget.granted(MACHINERY_ALLOWANCE_S, assumed_s=bound_s):
            out = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=limit)
    except subprocess.TimeoutExpired:
        return {"error": f"the second job did not finish within {limit:.0f}s"}
    last = (out.stdout.strip().splitlines() or [""])[-1]
    try:
        result = dict(json.loads(last))
    except ValueError:
        return {"error": f"the second job failed: {(out.stderr.strip().splitlines() or ['?'])[-1][:300]}"}
    if "host" in result:
        ctx.budget.host_failed(str(result["host"]))
    return result


@pytest.mark.check("CC-003")
def test_backend_registers_in_driver_and_workers(collective_ctx: CollectiveCtx) -> None:
    from ray.util.collective import is_backend_available

    cc, config, metrics = collective_ctx.backend, collective_ctx.config, collective_ctx.metrics
    bound = float(collective_ctx.param("op_bound_s"))
    driver = bool(is_backend_available(config.backend))
    pool = cc.pool()
    infos = cc.ask(pool, "info", timeout_s=bound, param="op_bound_s", what="the members' registry")
    hooked = hook_job(collective_ctx, float(collective_ctx.param("hook_bound_s")))
    metrics["registration"] = {"driver": cc.driver_registration, "workers": infos[0]["how"] if infos else None}
    collective_ctx.decide(pool_size=len(pool), driver_available=driver, hook_job=hooked,
                          members=[{"registered": i["registered"], "available": i["available"]} for i in infos])


@pytest.mark.check("CC-004")
def test_every_op_is_exact_at_each_world_size_across_nodes(collective_ctx: CollectiveCtx) -> None:
    cc, config, metrics = collective_ctx.backend, collective_ctx.config, collective_ctx.metrics
    bound = float(collective_ctx.param("op_bound_s"))
    libraries = collective_ctx.param("libraries")
    problems: list[str] = []
    log: Any = None     # the barrier log (members.BarrierLog), one for every world size: its keys name the group
    metrics["world_sizes"] = []
    for ws in collective_ctx.param("world_sizes"):
        metrics["world_sizes"].append(ws)
        members = cc.pool()[:ws]   # fresh members when a hang at the previous size discarded them
        infos = cc.ask(members, "info", timeout_s=bound, param="op_bound_s", what="member nodes")
        nodes = len({i["node"] for i in infos})
        steps = programs.op_matrix(ws, config.dtypes, libraries, config.ops,
                                   int(collective_ctx.param("elements")), seed0=100 * ws, devices=config.devices,
                                   barriers=int(collective_ctx.param("barriers")))
        group = cc.group_name(f"ops{ws}")
        try:
            if log is None:
                log = cc.barrier_log()
            cc.create(members, group)
            outputs: list[list[dict[str, Any]]] | None = cc.execute(members, steps, group, bound, log=log, param="op_bound_s")
            found = programs.judge(steps, outputs or [], ws)
            cc.destroy(members, group)
        except CollectiveError as exc:
            found = [f"world size {ws}: {exc}"]
            outputs = None
        problems += programs.each_op_first(found)[:6]   # every broken op named, not one op's six ranks
        metrics[f"world_size_{ws}"] = {**programs.group_evidence(steps, outputs, ws, len(found)), "nodes": nodes,
                                       # the devices Ray gave each member (none: the block declares no device type)
                                       "accelerator_ids": [i.get("accelerator_ids", {}) for i in infos]}
    if log is not None:
        cc.stop([log])
    cc.note("CC-004", f"{sum(v['steps'] for k, v in metrics.items() if k.startswith('world_size_'))} op steps "
                      f"over dtypes {', '.join(config.dtypes)} and {', '.join(libraries)} "
                      f"(torch on {', '.join(config.devices)})")
    reason = programs.wrong_results("CC-004", programs.each_op_first(problems), limit=len(problems)) if problems else ""
    collective_ctx.decide(detail=f" ({reason})" if reason else "")


@pytest.mark.check("CC-005")
def test_point_to_point_interleaved_with_collectives_stays_in_order(collective_ctx: CollectiveCtx) -> None:
    cc, config = collective_ctx.backend, collective_ctx.config
    if not (config.claims("sendrecv") and config.claims("allreduce") and config.claims("broadcast")):
        not_applicable("the backend does not claim send/recv, allreduce and broadcast (collective.ops)")
    bound = float(collective_ctx.param("op_bound_s"))
    members = cc.pool()
    ws = len(members)
    steps = [s for device in config.devices for s in programs.interleaved(ws, int(collective_ctx.param("rounds")),
                                                                            device=device)]
    group = cc.group_name("order")
    outputs: list[list[dict[str, Any]]] | None = None
    try:
        cc.create(members, group)
        outputs = cc.execute(members, steps, group, bound, param="op_bound_s")
        problems = programs.judge(steps, outputs, ws)
        cc.destroy(members, group)
    except CollectiveError as exc:
        problems = [str(exc)]
    collective_ctx.metrics["steps"] = len(steps)
    collective_ctx.decide(detail=f" ({programs.wrong_results('CC-005', problems)})" if problems else "",
                          order=programs.group_evidence(steps, outputs, ws, len(problems)))
