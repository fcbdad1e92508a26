"""Recovery area, nodes: a node with devices dies hard; the view, the work placed on it and its
rejoin behave as Ray documents, with the plugin's devices correct throughout.

Needs nodes the suite starts and can kill (ray.cluster_utils, shape "recovery-nodes": head + two
pool nodes "b" and "c", fast health checks), or, with --conformance-ray-address, a fault driver
for that cluster (conformance.cluster.faults) and nodes labelled with the roles head, b, c. The
head is never killed; each check kills node "b" and the next check's setup brings it back.
"""
from __future__ import annotations

import time
from typing import Any

import pytest

from conformance.areas.recovery.actors import hold_until
from conformance.areas.recovery.audit import holder_problems
from conformance.areas.recovery.context import NodeRecoveryCtx
from conformance.areas.recovery.devices import kill_quietly, make_ledger, spawn_holders, states, total, wait_dead
from conformance.areas.recovery.nodes import fill, labels_match, release, signature
from conformance.cluster.requests import demand
from conformance.run.budget import CheckTimeout, Scenario

pytestmark = pytest.mark.cluster("recovery-nodes")
LONG_S = 600.0   # knob: a call/task still running when its node dies, not a bound


def _ray() -> Any:
    import ray
    return ray


def assert_clean(clock: Scenario, problems: list[str], when: str) -> None:
    if problems:
        raise clock.fail(f"{when}: " + "; ".join(problems[:6]))


def survivor_states(nc: NodeRecoveryCtx, clock: Scenario, holders: list[Any], ready_s: float) -> list[Any]:
    """Each holder's state, or why it did not answer (a dead survivor must not end the check early)."""
    from conformance.rdt.transfer import first_line

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
            return dict(n.get("Labels") or {})
    return {}


@pytest.mark.check("FR-007")
def test_dead_node_leaves_view_and_survivors_keep_running(recovery_ctx: NodeRecoveryCtx) -> None:
    nc = recovery_ctx
    lab = nc.lab
    holders: dict[str, Any] = {}
    with nc.timed("hard-kill-node-b", nc.bound()) as clock:
        try:
            for role in ("head", "b", "c"):
                holders[role] = spawn_holders(lab.dev(role), 1)[0]
            before = dict(zip(holders, states(clock, list(holders.values()), "one holder per node to start",
                                              nc.param("actor_ready_s"))))
            in_flight = holders["b"].busy.remote(LONG_S)
            b = lab.dev("b")
            total_before = total(lab.resource)
            nc.metrics["node_b_devices"] = b.count
            lab.kill("b")
            nc.metrics["gone_s"] = lab.wait_gone(clock, "b", b.node_id, b.count, total_before,
                                                 nc.param("node_gone_s"))
            nc.metrics["in_flight_call_error"] = wait_dead(clock, in_flight, "the call in flight on node b to fail",
                                                           nc.param("node_gone_s"))
            nc.metrics["call_failed_s"] = clock.mark("in-flight call failed")
            survivors = ["head", "c"]
            watch_end = clock.elapsed() + nc.param("survivor_watch_s")
            while True:   # a survivor that fate-shares with the dead node may go down a little later
                after = survivor_states(nc, clock, [holders[r] for r in survivors], nc.param("actor_ready_s"))
                problems = []
                for role, s in zip(survivors, after):
                    old = before[role]
                    if isinstance(s, str):
                        problems.append(f"holder on node {role} stopped answering after node b died ({s})")
                        continue
                    if (s["pid"], s["assigned"]) != (old["pid"], old["assigned"]):
                        problems.append(f"holder on node {role}: was pid {old['pid']} with {old['assigned']}, now "
                                        f"pid {s['pid']} with {s['assigned']}: disturbed by another node's death")
                    problems += holder_problems(s, b.env_var, 1, None, f"holder on node {role}")
                assert_clean(clock, problems, "after node b died")
                if clock.elapsed() >= watch_end:
                    break
                time.sleep(0.5)
            nc.metrics["survivors_watched_s"] = nc.param("survivor_watch_s")
        finally:
            kill_quietly(list(holders.values()))


@pytest.mark.check("FR-008")
def test_label_selected_work_moves_to_surviving_matching_node(recovery_ctx: NodeRecoveryCtx) -> None:
    nc = recovery_ctx
    lab = nc.lab
    ray = _ray()
    blockers: list[Any] = []
    actors: list[Any] = []
    ledger, task_ref = None, None
    with nc.timed("reschedule-pool-work-from-b-to-c", nc.bound()) as clock:
        try:
            b, c = lab.dev("b"), lab.dev("c")
            selector = lab.selector()
            nc.metrics["selector"] = selector
            blockers = fill(clock, c, "c", nc.param("actor_ready_s"))  # so that the pool work has to start on b
            actors = spawn_holders(b, 1, max_restarts=2, label_selector=selector)
            first = states(clock, actors, "the pool actor to start", nc.param("actor_ready_s"))[0]
            if first["node_id"] != b.node_id:
                raise clock.fail(f"with node c full, the pool actor started on {first['node_id'][:8]}, not on b")
            with_task = b.count >= 2  # knob: structure: the task needs a device beside the actor's
            if with_task:
                ledger = make_ledger()
                task = ray.remote(hold_until).options(num_cpus=0, **demand(lab.resource, 1), max_retries=2,
                                                      label_selector=selector)
                task_ref = task.remote(ledger, *b.probe_args, LONG_S)
                attempts = clock.wait_for(lambda: ray.get(ledger.history.remote(), timeout=10),  # knob: hang guard of one ledger read
                                          "the pool task to start", nc.param("actor_ready_s"), poll_s=0.2)
                if attempts[0]["node_id"] != b.node_id:
                    raise clock.fail(f"with node c full, the pool task started on {attempts[0]['node_id'][:8]}")
            else:
                nc.metrics["task"] = "skipped: node b has 1 device (the actor holds it)"
            release(clock, blockers, c, "c", nc.param("device_release_s"))
            total_before = total(lab.resource)
            lab.kill("b")
            lab.wait_gone(clock, "b", b.node_id, b.count, total_before, nc.param("node_gone_s"))
            moved = nc.budget.restarted(clock, actors[0], first["pid"], "the pool actor to run again", nc.param("reschedule_s"))
            nc.metrics["actor_moved_s"] = clock.mark("actor rescheduled")
            results = [("pool actor", moved)]
            if with_task:
                done = clock.get(task_ref, "the pool task to finish on retry", nc.param("reschedule_s"))
                nc.metrics["task_moved_s"] = clock.mark("task retried")
                results.append(("pool task", done))
            problems = []
            for what, s in results:
                labels = node_labels_of(s["node_id"])
                if not labels_match(labels, selector):
                    problems.append(f"{what} ran on node {s['node_id'][:8]} with labels {labels}, which do not match "
                                    f"its selector {selector}")
                elif s["node_id"] != c.node_id:
                    problems.append(f"{what} ran on {s['node_id'][:8]}; the only surviving matching node is c")
                problems += holder_problems(s, b.env_var, 1, None, what)
            assert_clean(clock, problems, "after rescheduling")
        finally:
            kill_quietly(blockers + actors + ([ledger] if ledger is not None else []))
            if task_ref is not None:
                try:
                    ray.cancel(task_ref, force=True)
                except CheckTimeout:
                    raise
                except Exception:  # noqa: BLE001 - already finished
                    pass


@pytest.mark.check("FR-009")
def test_work_without_matching_survivor_stays_pending(recovery_ctx: NodeRecoveryCtx) -> None:
    nc = recovery_ctx
    lab = nc.lab
    ray = _ray()
    from ray.exceptions import ActorUnavailableError, GetTimeoutError, RayActorError

    actors: list[Any] = []
    with nc.timed("pin-to-b-kill-b-wait-then-rejoin", nc.bound()) as clock:
        try:
            b = lab.dev("b")
            selector = lab.selector("b")
            actors = spawn_holders(b, 1, max_restarts=2, label_selector=selector)
            first = states(clock, actors, "the actor pinned to b by label", nc.param("actor_ready_s"))[0]
            total_before = total(lab.resource)
            lab.kill("b")
            lab.wait_gone(clock, "b", b.node_id, b.count, total_before, nc.param("node_gone_s"))
            window_start = clock.elapsed()
            seen: list[str] = []
            pending = actors[0].state.remote()
            while clock.elapsed() - window_start < nc.param("pending_window_s"):
                try:
                    s = ray.get(pending, timeout=0.5)  # knob: polling slice of the pending window
                except GetTimeoutError:
                    continue
                except ActorUnavailableError:
                    seen.append("ActorUnavailableError")
                    pending = actors[0].state.remote()
                    continue
                except RayActorError as exc:
                    raise clock.fail(f"the actor whose only matching node died failed with {type(exc).__name__} "
                                     "instead of waiting for a matching node") from None
                raise clock.fail(f"the actor pinned to node b by label ran on node {s['node_id'][:8]} "
                                 f"(labels {node_labels_of(s['node_id'])}) while no node matched {selector}")
            nc.metrics["pending_window_s"] = nc.param("pending_window_s")
            nc.metrics["transient_errors"] = sorted(set(seen))
            lab.rejoin("b")
            back = nc.budget.restarted(clock, actors[0], first["pid"], "the pending actor to run on the rejoined node b",
                                  nc.param("rejoin_s"))
            nc.metrics["ran_after_rejoin_s"] = clock.mark("ran on the rejoined node")
            labels = node_labels_of(back["node_id"])
            problems = [] if labels_match(labels, selector) else [
                f"after the rejoin the actor ran on a node with labels {labels}, not matching {selector}"]
            assert_clean(clock, problems + holder_problems(back, b.env_var, 1, None, "actor after the rejoin"),
                         "after the rejoin")
        finally:
            kill_quietly(actors)


@pytest.mark.check("FR-010")
def test_placement_group_bundle_is_rescheduled(recovery_ctx: NodeRecoveryCtx) -> None:
    nc = recovery_ctx
    lab = nc.lab
    from ray.util.placement_group import placement_group, placement_group_table, remove_placement_group
    from ray.util.scheduling_strategies import PlacementGroupSchedulingStrategy

    blockers: list[Any] = []
    actors: list[Any] = []
    pg = None
    with nc.timed("strict-spread-bundle-on-b-lost", nc.bound()) as clock:
        try:
            head, b, c = lab.dev("head"), lab.dev("b"), lab.dev("c")
            blockers = fill(clock, head, "head", nc.param("actor_ready_s"))  # so that the two bundles land on b and c
            pg = placement_group([{lab.resource: 1}, {lab.resource: 1}], strategy="STRICT_SPREAD")
            # the bundles fit b's and c's free devices by Ray's own accounting: their placement is Ray's machinery
            nc.budget.started(clock, pg.ready(), "the placement group to be created", param="actor_ready_s")
            placed = dict(placement_group_table(pg)["bundles_to_node_id"])
            if sorted(placed.values()) != sorted([b.node_id, c.node_id]):
                raise clock.fail(f"with the head full the bundles were placed on {placed}, not on b and c")
            lost = next(i for i, n in placed.items() if n == b.node_id)
            kept = 1 - lost
            for i in (0, 1):
                actors += spawn_holders(b, 1, max_restarts=2, scheduling_strategy=PlacementGroupSchedulingStrategy(
                    placement_group=pg, placement_group_bundle_index=i))
            before = states(clock, actors, "an actor in each bundle", nc.param("actor_ready_s"))
            release(clock, blockers, head, "head", nc.param("device_release_s"))
            total_before = total(lab.resource)
            lab.kill("b")
            lab.wait_gone(clock, "b", b.node_id, b.count, total_before, nc.param("node_gone_s"))
            states_seen: list[str] = []

            def rescheduled() -> dict[str, Any] | None:
                table = placement_group_table(pg)
                states_seen.append(table["state"])
                where = table["bundles_to_node_id"].get(lost)
                if table["state"] == "CREATED" and where and where not in (b.node_id, placed[kept]):
                    return table
                return None

            table = clock.wait_for(rescheduled, "the lost bundle to be placed again (group CREATED)",
                                   nc.param("pg_reschedule_s"), poll_s=0.2,
                                   explain=lambda: f"states {sorted(set(states_seen))}")
            nc.metrics["pg_rescheduled_s"] = clock.mark("bundle rescheduled")
            nc.metrics["pg_states_seen"] = sorted(set(states_seen))
            new_node = table["bundles_to_node_id"][lost]
            moved = nc.budget.restarted(clock, actors[lost], before[lost]["pid"], "the lost bundle's actor to run again",
                                   nc.param("pg_reschedule_s"))
            survivor = states(clock, [actors[kept]], "the surviving bundle's actor", nc.param("actor_ready_s"))[0]
            problems = []
            if moved["node_id"] != new_node:
                problems.append(f"the lost bundle's actor runs on {moved['node_id'][:8]}, not on its bundle's new node "
                                f"{new_node[:8]}")
            if (survivor["pid"], survivor["assigned"]) != (before[kept]["pid"], before[kept]["assigned"]):
                problems.append("the actor in the surviving bundle was restarted or changed device: "
                                f"{before[kept]['assigned']} (pid {before[kept]['pid']}) -> {survivor['assigned']} "
                                f"(pid {survivor['pid']})")
            problems += holder_problems(moved, b.env_var, 1, None, "lost bundle's actor")
            assert_clean(clock, problems, "after the bundle was rescheduled")
        finally:
            kill_quietly(blockers + actors)
            if pg is not None:
                try:
                    remove_placement_group(pg)
                except CheckTimeout:
                    raise
                except Exception:  # noqa: BLE001 - already removed
                    pass


@pytest.mark.check("FR-011")
def test_rejoined_node_is_detected_again(recovery_ctx: NodeRecoveryCtx) -> None:
    nc = recovery_ctx
    lab = nc.lab
    actors: list[Any] = []
    with nc.timed("kill-b-then-rejoin", nc.bound()) as clock:
        try:
            b = lab.dev("b")
            before = signature(lab.alive()["b"], lab.resource)
            nc.metrics["before"] = [str(x) for x in before]
            total_before = total(lab.resource)
            lab.kill("b")
            lab.wait_gone(clock, "b", b.node_id, b.count, total_before, nc.param("node_gone_s"))
            start = clock.elapsed()
            lab.rejoin("b")
            clock.wait_for(lambda: "b" in lab.alive(), "the rejoined node b to be alive", nc.param("rejoin_s"))
            last: list[Any] = []

            def detected() -> bool:
                node = lab.alive().get("b")
                last[:] = [signature(node, lab.resource) if node else "not alive"]
                return node is not None and last[0] == before

            clock.wait_for(detected, "the rejoined node b to advertise its devices and labels as before",
                           nc.param("view_settle_s"), explain=lambda: f"{last[0]} (before: {before})" if last else "nothing")
            nc.metrics["rejoin_s"] = round(clock.elapsed() - start, 3)
            b2 = lab.dev("b")
            actors = spawn_holders(b2, 1, label_selector=lab.selector("b"))
            s = states(clock, actors, "an actor selecting the rejoined node", nc.param("actor_ready_s"))[0]
            problems = [] if s["node_id"] == b2.node_id else [f"the actor ran on {s['node_id'][:8]}, not on b"]
            assert_clean(clock, problems + holder_problems(s, b2.env_var, 1, None, "actor on the rejoined node"),
                         "on the rejoined node")
        finally:
            kill_quietly(actors)


def stays_dead(clock: Scenario, node_id: str, watch_s: float) -> None:
    """The old node must not come back alive under its old identity while watched."""
    end = clock.elapsed() + watch_s
    while clock.elapsed() < end:
        back = [n for n in _ray().nodes() if n["NodeID"] == node_id and n.get("Alive")]
        if back:
            raise clock.fail(f"node {node_id[:8]} is alive again under its old id after the partition healed")
        time.sleep(0.5)


@pytest.mark.check("FR-017")
def test_partitioned_node_is_replaced_and_rejoins_as_new_node(recovery_ctx: NodeRecoveryCtx) -> None:
    nc = recovery_ctx
    lab = nc.lab

    blockers: list[Any] = []
    actors: list[Any] = []
    partitioned = False
    with nc.timed("partition-b-heal-restart", nc.bound()) as clock:
        try:
            b, c = lab.dev("b"), lab.dev("c")
            before = signature(lab.alive()["b"], lab.resource)
            selector = lab.selector()
            nc.metrics["selector"] = selector
            blockers = fill(clock, c, "c", nc.param("actor_ready_s"))  # so that the pool actor has to start on b
            actors = spawn_holders(b, 1, max_restarts=2, label_selector=selector)
            first = states(clock, actors, "the pool actor to start", nc.param("actor_ready_s"))[0]
            if first["node_id"] != b.node_id:
                raise clock.fail(f"with node c full, the pool actor started on {first['node_id'][:8]}, not on b")
            release(clock, blockers, c, "c", nc.param("device_release_s"))
            total_before = total(lab.resource)
            start = clock.elapsed()
            lab.partition("b")
            partitioned = True
            lab.wait_gone(clock, "b", b.node_id, b.count, total_before, bound_s=nc.param("dead_within_s"))
            nc.metrics["declared_dead_s"] = round(clock.elapsed() - start, 3)
            moved = nc.budget.restarted(clock, actors[0], first["pid"], "the pool actor to run again on a survivor",
                                   nc.param("reschedule_s"))
            nc.metrics["actor_moved_s"] = round(clock.elapsed() - start, 3)
            labels = node_labels_of(moved["node_id"])
            problems = holder_problems(moved, b.env_var, 1, None, "pool actor after the partition")
            if not labels_match(labels, selector) or moved["node_id"] != c.node_id:
                problems.append(f"the pool actor ran on {moved['node_id'][:8]} with labels {labels}; the only "
                                f"surviving node matching {selector} is c")
            assert_clean(clock, problems, "after the partition")
            lab.heal("b")
            partitioned = False
            stays_dead(clock, b.node_id, nc.param("healed_watch_s"))
            healed = clock.elapsed()
            lab.rejoin("b")
            last: list[Any] = []

            def rejoined() -> bool:
                node = lab.alive().get("b")
                last[:] = [signature(node, lab.resource) if node else "not alive"]
                return node is not None and node["NodeID"] != b.node_id and last[0] == before

            clock.wait_for(rejoined, "the healed host to join as a new node with its devices and labels",
                           nc.param("rejoin_s"), explain=lambda: f"{last[0]} (before: {before})" if last else "")
            nc.metrics["rejoin_s"] = round(clock.elapsed() - healed, 3)
        finally:
            if partitioned:
                lab.heal("b")
            kill_quietly(blockers + actors)
