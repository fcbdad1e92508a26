"""Recovery area, devices: actors and tasks that die give their devices back, and what Ray
restarts or retries holds a device nobody else holds.

Runs on cluster shape "recovery-devices" (conformance.cluster.shapes: the manifest's nodes, after every
check of the shared cluster, so that a plugin that leaks devices cannot spoil those); with
--conformance-ray-address it runs on the vendor's cluster (every scenario here only kills actors
and tasks the check created).
Every scenario is timed against the bound its requirement states (conformance.areas.recovery.bounds).
"""
from __future__ import annotations

from typing import Any

import pytest

from conformance.areas.recovery.actors import crash_first_attempt
from conformance.areas.recovery.audit import audit, holder_problems
from conformance.areas.recovery.context import DeviceRecoveryCtx, RecoveryCtx
from conformance.areas.recovery.devices import (
    census,
    first_device_node,
    kill_quietly,
    make_ledger,
    pinned,
    spawn_holders,
    states,
    wait_all_free,
    wait_dead,
    wait_free,
    wait_view_shows_held,
)
from conformance.cluster.manager import ClusterStartError
from conformance.cluster.requests import demand
from conformance.run.budget import Scenario

pytestmark = pytest.mark.cluster("recovery-devices")


def _ray() -> Any:
    import ray
    return ray


def assert_clean(clock: Scenario, problems: list[str], when: str) -> None:
    if problems:
        raise clock.fail(f"{when}: " + "; ".join(problems[:6]))


def kill_then_reuse(rc: DeviceRecoveryCtx, how: str) -> None:
    """All devices of a node held; one holder dies (`how`); its device returns and is reusable."""
    ray, dev = _ray(), rc.node
    ready_s, release_s = rc.param("actor_ready_s"), rc.param("device_release_s")
    holders: list[Any] = []
    with rc.timed(f"{how}-holder-then-reuse", rc.bound()) as clock:
        try:
            holders = spawn_holders(dev, dev.count)
            before, universe = census(clock, dev, holders, ready_s)
            clock.mark("all devices held")
            victim = holders[0]
            free_before = wait_view_shows_held(clock, dev, len(holders), release_s)
            if how == "kill":
                ray.kill(victim)
            else:
                rc.metrics["crash_error"] = wait_dead(clock, victim.crash.remote(),
                                                      "the crashing holder's call to fail", release_s)
            wait_free(clock, dev.resource, free_before + 1,
                      f"the device {before[0]['assigned']} of the {how}ed holder to return to the pool",
                      release_s, dev.node_id)
            rc.metrics["release_s"] = clock.mark("device released")
            holders += spawn_holders(dev, 1)
            new = states(clock, holders[-1:], "a new holder to start on the released device", ready_s)[0]
            rc.metrics["reuse_s"] = clock.mark("device reused")
            live = before[1:] + [new]
            assert_clean(clock, holder_problems(new, dev.env_var, 1, universe, "new holder")
                         + audit(live, dev.env_var, universe), "after the new holder started")
        finally:
            kill_quietly(holders)


@pytest.mark.check("FR-001")
def test_killed_actor_returns_its_device(recovery_ctx: DeviceRecoveryCtx) -> None:
    kill_then_reuse(recovery_ctx, "kill")


@pytest.mark.check("FR-002")
def test_crashed_actor_returns_its_device(recovery_ctx: DeviceRecoveryCtx) -> None:
    kill_then_reuse(recovery_ctx, "crash")


@pytest.mark.check("FR-003")
def test_restarted_actor_holds_a_device_again(recovery_ctx: DeviceRecoveryCtx) -> None:
    rc = recovery_ctx
    dev = rc.node
    ray = _ray()
    ready_s, release_s = rc.param("actor_ready_s"), rc.param("device_release_s")
    holders: list[Any] = []
    with rc.timed("crash-and-kill-restartable-holder", rc.bound()) as clock:
        try:
            holders = spawn_holders(dev, 1, max_restarts=2) + spawn_holders(dev, dev.count - 1)
            before, universe = census(clock, dev, holders, ready_s)
            current = before[0]
            for cause in ("crash", "ray.kill(no_restart=False)"):
                if cause == "crash":
                    wait_dead(clock, holders[0].crash.remote(), "the crashing call to fail", release_s)
                else:
                    ray.kill(holders[0], no_restart=False)
                current = rc.budget.restarted(clock, holders[0], current["pid"],
                                         f"the holder to come back after {cause}", ready_s)
                rc.metrics[f"restart_after_{cause.split('(')[0]}_s"] = clock.mark(f"restarted after {cause}")
                problems = holder_problems(current, dev.env_var, 1, universe, f"holder restarted after {cause}")
                if current.get("restarted") is False:
                    problems.append(f"holder restarted after {cause}: Ray does not report it as restarted")
                assert_clean(clock, problems + audit(before[1:] + [current], dev.env_var, universe),
                             f"after the restart ({cause})")
        finally:
            kill_quietly(holders)


@pytest.mark.check("FR-004")
def test_restart_storm_keeps_ids_disjoint(recovery_ctx: DeviceRecoveryCtx) -> None:
    rc = recovery_ctx
    dev = rc.node
    ray = _ray()
    rounds, round_s = rc.param("stress_rounds"), rc.param("stress_round_s")
    holders: list[Any] = []
    with rc.timed(f"{rounds}-rounds-of-kills-and-crashes", rc.bound()) as clock:
        try:
            holders = spawn_holders(dev, dev.count, max_restarts=rounds)
            current, universe = census(clock, dev, holders, rc.param("actor_ready_s"))
            round_times = []
            for r in range(rounds):
                start = clock.elapsed()
                victims = [i for i in range(len(holders)) if i % 2 == r % 2] or [0]
                cause = "ray.kill(no_restart=False)" if r % 2 == 0 else "crash"
                for i in victims:
                    if cause == "crash":
                        holders[i].crash.remote()
                    else:
                        ray.kill(holders[i], no_restart=False)
                round_end = start + round_s
                for i in victims:
                    current[i] = rc.budget.restarted(clock, holders[i], current[i]["pid"],
                                                f"round {r + 1}: holder {i} to come back after {cause}",
                                                max(round_end - clock.elapsed(), 0.0))
                labels = [f"round {r + 1} holder {i}" for i in range(len(holders))]
                assert_clean(clock, audit(current, dev.env_var, universe, labels), f"audit after round {r + 1}")
                round_times.append(round(clock.elapsed() - start, 2))
            rc.metrics["round_s"] = round_times
            rc.metrics["restarts"] = sum(len([i for i in range(len(holders)) if i % 2 == r % 2] or [0])
                                         for r in range(rounds))
        finally:
            kill_quietly(holders)


@pytest.mark.check("FR-005")
def test_retried_task_gets_a_valid_device(recovery_ctx: DeviceRecoveryCtx) -> None:
    rc = recovery_ctx
    dev = rc.node
    ray = _ray()
    ready_s = rc.param("actor_ready_s")
    holders: list[Any] = []
    ledger = None
    with rc.timed("task-worker-crash-then-retry", rc.bound()) as clock:
        try:
            holders = spawn_holders(dev, dev.count - 1)
            others = states(clock, holders, "holders of the other devices to start", ready_s)
            ledger = make_ledger()
            task = ray.remote(crash_first_attempt).options(
                num_cpus=0, **demand(dev.resource, 1), max_retries=2, scheduling_strategy=pinned(dev.node_id))
            result = clock.get(task.remote(ledger, *dev.probe_args),
                               "the retried task's result (its first worker crashed)", ready_s)
            rc.metrics["retry_done_s"] = clock.mark("retry returned")
            attempts = clock.get(ledger.history.remote(), "the attempt ledger", 10)
            crashed = attempts[0]
            rc.metrics["attempts"] = len(attempts)
            universe = sorted({i for s in others for i in s["assigned"]} | set(crashed["assigned"]))
            problems = holder_problems(result, dev.env_var, 1, universe, "retried task")
            if sorted(result["assigned"]) != sorted(crashed["assigned"]):
                problems.append(f"the retry holds {result['assigned']} although the only free device was "
                                f"{crashed['assigned']} (held by the crashed attempt)")
            assert_clean(clock, problems + audit(others + [result], dev.env_var), "after the retry")
        finally:
            kill_quietly(holders + ([ledger] if ledger is not None else []))


def node_signature(resource: str) -> list[tuple[Any, ...]]:
    """What the plugin made each node advertise: device count, type resources, labels (ids dropped)."""
    sig = []
    for n in _ray().nodes():
        if not n.get("Alive"):
            continue
        res = n.get("Resources", {})
        types = tuple(sorted(k for k in res if k.startswith("accelerator_type:")))
        labels = tuple(sorted((k, v) for k, v in (n.get("Labels") or {}).items() if k != "ray.io/node-id"))
        sig.append((res.get(resource, 0.0), types, labels))
    return sorted(sig)


@pytest.mark.cluster("recovery-restart")
@pytest.mark.check("FR-006")
def test_fresh_start_in_same_process_detects_same_devices(recovery_ctx: RecoveryCtx) -> None:
    ctx = recovery_ctx
    manifest, metrics = ctx.manifest, ctx.metrics
    resource = manifest.resource_name
    ready_s, release_s = ctx.param("actor_ready_s"), ctx.param("device_release_s")
    with ctx.timed("shutdown-then-fresh-start", ctx.bound()) as clock:
        before = node_signature(resource)
        metrics["before"] = [list(map(str, s)) for s in before]
        try:
            ctx.use_cluster(ctx.shape, fresh=True)   # ray.shutdown(), then a fresh start here
        except ClusterStartError as exc:
            raise clock.fail(f"the fresh start failed: {exc}") from None
        metrics["restart_s"] = clock.mark("fresh cluster up")
        verdict = ctx.verdict()
        if verdict.outcome != "pass":
            raise clock.fail(str(verdict.reason))
        after = node_signature(resource)
        metrics["after"] = [list(map(str, s)) for s in after]
        if after != before:
            raise clock.fail(f"after a fresh start the nodes advertise {after}; before the shutdown: {before}")
        dev = first_device_node(manifest, ctx.manager())
        if dev is None:
            raise clock.fail(f"after a fresh start no node advertises {resource}")
        holders = spawn_holders(dev, 1)
        try:
            s = states(clock, holders, "a holder on the fresh cluster", ready_s)[0]
            assert_clean(clock, holder_problems(s, dev.env_var, 1, None, "holder on the fresh cluster"),
                         "on the fresh cluster")
        finally:
            kill_quietly(holders)
        wait_all_free(clock, resource, "devices free again on the fresh cluster", release_s)
