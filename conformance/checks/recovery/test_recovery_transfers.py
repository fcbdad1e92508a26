"""Recovery area, transfers: Ray Direct Transport transfers that fail end in data or an error
within a bound, never in a hang, and the transport works again afterwards.

Not applicable when the manifest declares no transport. Runs on its own cluster shape
("recovery-transfers", conformance.cluster.shapes: the manifest's nodes with
RAY_rdt_fetch_fail_timeout_milliseconds lowered to 5 s in every node) with the driver's copy of
that timeout lowered too (see
conformance.areas.recovery.transfers for which process enforces what). Faults are injected around
the vendor's transport by a fault-injecting twin registration (conformance.rdt.faults).

Which nodes (issue 48, `run --nodes`): a scenario's source and receiver are wherever the RDT
pool places its pair (their nodes are in node_coverage); the scenarios are not run per failure
domain: a dead source or a failed transfer is a property of the transport between two endpoints,
and a wave of pairs per domain (as TR-006's `--nodes all` pair wave) is not built for them yet
(metrics.node_scope says so; docs/scale.md).
"""
from __future__ import annotations

import time
from typing import TYPE_CHECKING, Any

import pytest

from conformance import leftovers
from conformance.areas.recovery.context import TransferRecoveryCtx
from conformance.areas.recovery.transfers import (
    SMALL_BYTES,
    Pair,
    calls,
    digest_evidence,
    end_pair,
    judge_fetch_ran_out,
    large_bytes,
)
from conformance.exc_text import first_line
from conformance.rdt.payloads import same_bytes
from conformance.rdt.pool import alive, destroy_group, make_group
from conformance.rdt.transfer import outcome, short, wait_dead
from conformance.run.budget import CONTROL_CALL_S, CheckTimeout, Scenario
from conformance.run.fixtures import not_applicable

if TYPE_CHECKING:
    from conformance.areas.recovery.nodes import NodeLab

KILL_AFTER_S = 1.0          # FR-013: the source dies this far into the held receive (held_receive_s)
SOURCE_GONE_GRACE_S = 2.0   # knob: FR-012 pacing, after Ray reports the source dead, before the fetch
GONE_POLL_S = 0.05          # knob: polling interval


def _ray() -> Any:
    import ray
    return ray


def wait_process_gone(pid: int | None, limit_s: float) -> None:
    """Ray reports an actor dead before its process is gone: wait until the process has left this
    host (nodes the suite starts share it), at most limit_s; without a pid (the nodes of a
    --ray-address cluster are other hosts) pause limit_s."""
    import os

    end = time.monotonic() + limit_s
    while pid and os.path.exists(f"/proc/{pid}") and time.monotonic() < end:
        time.sleep(GONE_POLL_S)
    if not pid:
        time.sleep(limit_s)


def receiver_recovers(xc: TransferRecoveryCtx, clock: Scenario, pair: Pair, seed: int) -> Pair:
    """After the source died: a transport that can abort keeps its receiver, which must receive
    from a new source; otherwise (Ray may kill the receiver) a new pair must work."""
    x = xc.x
    if x.can_abort and not x.collective_backend:
        if not alive(pair.dst, 10):
            xc.metrics["recovered"] = {"how": "receiver died", "bitexact": None}
            xc.judge_now(clock)
        new_src = xc.peers(clock, 1)[0]
        pair.extra.append(new_src)
        t0 = clock.elapsed()
        xc.roundtrip(clock, new_src, pair.dst, SMALL_BYTES, seed, "a transfer from a new source to the same receiver")
        xc.metrics["recovered"] = {"how": "same receiver", "bitexact": True, "s": round(clock.elapsed() - t0, 3)}
        return pair
    end_pair(pair)
    fresh = xc.pair(clock)
    t0 = clock.elapsed()
    xc.roundtrip(clock, fresh.src, fresh.dst, SMALL_BYTES, seed, "a transfer between new actors")
    xc.metrics["recovered"] = {"how": "new pair", "bitexact": True, "s": round(clock.elapsed() - t0, 3)}
    return fresh


def source_dies(xc: TransferRecoveryCtx, during: bool) -> None:
    ray, x = _ray(), xc.x
    nbytes = large_bytes() if during else SMALL_BYTES
    delay_s = xc.param("held_receive_s") if during else 0.0   # FR-013: the receive is held this long
    wait_s = xc.error_bound_s + delay_s
    name = "source-dies-during-transfer" if during else "source-dies-before-fetch"
    pair = None
    with xc.timed(name, xc.bound()) as clock:
        try:
            pair = xc.pair(clock)
            witness = leftovers.Witness()
            witness.baseline([clock.get(pair.src.leftovers_here.remote(), "the source's files", CONTROL_CALL_S)])
            if during:
                clock.get(pair.dst.arm.remote("delay", {"seconds": delay_s}), "arming the receiver", CONTROL_CALL_S)
            ref = xc.produce(clock, pair.src, nbytes, 11)
            witness.note([clock.get(pair.src.leftovers_here.remote(), "the source's files", CONTROL_CALL_S)])
            sent = clock.get(pair.src.sent_digest.remote(11), "the producer's digest", CONTROL_CALL_S)
            kill_wall = None
            if not during:
                pid = None if xc.run.ray_address else clock.get(pair.src.info.remote(), "the source's pid", CONTROL_CALL_S)["pid"]
                ray.kill(pair.src)
                wait_dead(clock, pair.src, "the source to be dead", xc.param("device_release_s"))
                wait_process_gone(pid, SOURCE_GONE_GRACE_S)
            t0 = clock.elapsed()
            out = pair.dst.receive.remote(ref)
            if during:
                time.sleep(KILL_AFTER_S)
                kill_wall = time.time()
                ray.kill(pair.src)
            kind, got = outcome(clock, out, "the receiver's task after its source died", wait_s)
            xc.metrics.update({"bytes": nbytes, "result": kind, "result_s": round(clock.elapsed() - t0, 3),
                               "sent": digest_evidence(sent)})
            if kind == "error":
                xc.metrics["error"] = got
            else:
                xc.metrics["got"] = digest_evidence(got)
                if not same_bytes(sent, got):   # corrupted, not an error: the judge says so
                    xc.judge_now(clock, final=False)
            if during:
                starts = [c for c in calls(clock, pair.dst, x.fault_name, "the receiver's transport calls")
                          if c["m"] == "fault:delay" and c.get("phase") == "start"] if alive(pair.dst, 5) else []
                xc.metrics["receive_began_before_kill"] = bool(starts and starts[0]["wall"] <= kill_wall)
            del ref
            pair = receiver_recovers(xc, clock, pair, seed=12)
            killed_source_left_nothing(xc, clock, pair, witness)
        finally:
            end_pair(pair)


def killed_source_left_nothing(xc: TransferRecoveryCtx, clock: Scenario, pair: Pair, witness: leftovers.Witness) -> None:
    """A killed source frees nothing itself (Ray calls no garbage_collect for a dead process): the
    files it held while it lived (conformance.leftovers.Witness), still there and held by nobody
    leftover_bound_s after the receiver recovered, are the transport's leftovers. Judged by a live
    peer on the source's node (the files are on that host)."""
    bound = float(xc.param("leftover_bound_s"))
    left = leftovers.orphaned(witness, lambda names, since: clock.get(
        pair.dst.leftovers_orphans.remote(names, since), "the files the killed source held", CONTROL_CALL_S), bound)
    xc.metrics.update({"killed_source_files_held": len(witness.suspects()), "left_by_killed_source": len(left),
                       "left_files": leftovers.describe(files=left)[:5]})
    xc.judge_now(clock)


@pytest.mark.check("FR-012")
def test_source_dies_before_fetch(recovery_ctx: TransferRecoveryCtx) -> None:
    recovery_ctx.each_device(lambda device: source_dies(recovery_ctx, during=False))
    recovery_ctx.decide()


@pytest.mark.check("FR-013")
def test_source_dies_during_large_transfer(recovery_ctx: TransferRecoveryCtx) -> None:
    recovery_ctx.each_device(lambda device: source_dies(recovery_ctx, during=True))
    recovery_ctx.decide()


@pytest.mark.check("FR-014")
def test_transfer_past_fetch_timeout_fails_cleanly(recovery_ctx: TransferRecoveryCtx) -> None:
    recovery_ctx.each_device(lambda device: _past_fetch_timeout(recovery_ctx))
    recovery_ctx.decide()


def _past_fetch_timeout(xc: TransferRecoveryCtx) -> None:
    x = xc.x
    pair = None
    with xc.timed("receive-held-past-fetch-timeout", xc.bound()) as clock:
        try:
            pair = xc.pair(clock)
            clock.get(pair.dst.arm.remote("hang", {"seconds": 4 * xc.fetch_timeout_s}), "arming the receiver", CONTROL_CALL_S)
            ref = xc.produce(clock, pair.src, SMALL_BYTES, 21)
            obj = ref.hex()
            t0 = clock.elapsed()
            kind, got = outcome(clock, pair.dst.receive.remote(ref), "the receiver's task past the fetch timeout",
                                xc.error_bound_s)
            xc.metrics.update({"result": kind, "result_s": round(clock.elapsed() - t0, 3)})
            if kind == "data":
                xc.judge_now(clock, final=False)
            xc.metrics["error"] = got
            t0 = clock.elapsed()
            if x.can_abort:
                sides = {"receiver": pair.dst} if x.one_sided else {"receiver": pair.dst, "sender": pair.src}
                seen: dict[str, list[dict[str, Any]]] = {}

                def aborted() -> bool:
                    for side, actor in sides.items():
                        seen[side] = [c for c in calls(clock, actor, x.fault_name, f"the {side}'s transport calls")
                                      if c["m"] == "abort_transport" and c.get("obj") == obj]
                    return all(seen.values())

                clock.wait_for(aborted, f"Ray to call abort_transport on the {' and '.join(sides)}",
                               xc.param("abort_seen_s"), poll_s=0.5,
                               explain=lambda: f"abort calls seen: {({k: len(v) for k, v in seen.items()})}")
                xc.metrics["abort_calls"] = {k: len(v) for k, v in seen.items()}
                xc.metrics["abort_seen_s"] = round(clock.elapsed() - t0, 3)
                clock.mark("abort_transport seen")
                xc.metrics["abort_failed"] = [f"{side}: {c['err']}" for side, cs in seen.items() for c in cs
                                              if not c.get("ok")][:4]
                xc.metrics["alive_after_abort"] = {side: alive(actor, 10) for side, actor in sides.items()}
                xc.judge_now(clock, final=False)
                again: list[str] = []
                xc.metrics["transferred_again"] = again
                xc.roundtrip(clock, pair.src, pair.dst, SMALL_BYTES, 22, "the same pair transferring again")
                again.append("forward")
                xc.roundtrip(clock, pair.dst, pair.src, SMALL_BYTES, 23, "the same pair transferring the other way")
                again.append("backward")
            else:
                for side, actor in (("sender", pair.src), ("receiver", pair.dst)):
                    wait_dead(clock, actor, f"Ray to kill the {side} (the transport cannot abort)", xc.param("abort_seen_s"))
                xc.metrics["actors_killed_s"] = round(clock.elapsed() - t0, 3)
                clock.mark("both actors killed by Ray")
                end_pair(pair)
                pair = xc.pair(clock)
                xc.roundtrip(clock, pair.src, pair.dst, SMALL_BYTES, 22, "new actors after Ray killed the old ones")
                xc.metrics["transferred_again"] = ["new pair"]
            xc.judge_now(clock)
        finally:
            end_pair(pair)


@pytest.mark.check("FR-015")
def test_receive_error_reaches_caller_and_next_transfer_works(recovery_ctx: TransferRecoveryCtx) -> None:
    recovery_ctx.each_device(lambda device: _receive_error(recovery_ctx))
    recovery_ctx.decide()


def _receive_error(xc: TransferRecoveryCtx) -> None:
    pair = None
    with xc.timed("receive-raises", xc.bound()) as clock:
        try:
            pair = xc.pair(clock)
            clock.get(pair.dst.arm.remote("raise_after", {}), "arming the receiver", CONTROL_CALL_S)
            ref = xc.produce(clock, pair.src, SMALL_BYTES, 31)
            sent = clock.get(pair.src.sent_digest.remote(31), "the producer's digest", CONTROL_CALL_S)
            xc.metrics["sent"] = digest_evidence(sent)
            t0 = clock.elapsed()
            kind, got = outcome(clock, pair.dst.receive.remote(ref), "the receiver's task whose receive raised",
                                xc.param("transfer_error_s"))
            xc.metrics["error_s"] = round(clock.elapsed() - t0, 3)
            xc.metrics["error"] = got if kind == "error" else f"data instead of the error: {short(got)}"
            if kind == "error" and "InjectedReceiveError" not in got:
                judge_fetch_ran_out(got, "the receiver's task whose receive raised", xc.budget.machinery)
            xc.metrics["alive"] = {side: alive(actor, 10) for side, actor in (("sender", pair.src), ("receiver", pair.dst))}
            xc.judge_now(clock, final=False)
            t0 = clock.elapsed()
            kind, again = outcome(clock, pair.dst.receive.remote(ref), "the same object sent again", xc.param("transfer_error_s"))
            xc.metrics["again_s"] = round(clock.elapsed() - t0, 3)
            xc.metrics["again"] = digest_evidence(again) if kind == "data" else {"error": str(again)[:300]}
            xc.judge_now(clock, final=False)
            xc.metrics["new_transfer"] = False
            xc.roundtrip(clock, pair.src, pair.dst, SMALL_BYTES, 32, "a new transfer after the receive error")
            xc.metrics["new_transfer"] = True
            xc.judge_now(clock)
        finally:
            end_pair(pair)


@pytest.mark.check("FR-016")
def test_restarted_actor_transfers_again(recovery_ctx: TransferRecoveryCtx) -> None:
    recovery_ctx.each_device(lambda device: _restarted_actor(recovery_ctx))
    recovery_ctx.decide()


def _restarted_actor(xc: TransferRecoveryCtx) -> None:
    x = xc.x
    pair = None
    with xc.timed("restart-then-transfer", xc.bound()) as clock:
        try:
            pair = xc.pair(clock, max_restarts=1, max_task_retries=0)
            xc.roundtrip(clock, pair.src, pair.dst, SMALL_BYTES, 41, "a transfer before any restart")
            restarts: dict[str, dict[str, Any]] = {}
            xc.metrics["restarts"] = restarts
            for role in ("source", "receiver"):
                actor = pair.src if role == "source" else pair.dst
                old = clock.get(actor.info.remote(), f"the {role}'s pid", CONTROL_CALL_S)
                t0 = clock.elapsed()
                actor.crash.remote()
                new = xc.budget.restarted(clock, actor, old["pid"], f"the {role} to restart", xc.param("actor_ready_s"),
                                          method="info")
                restarts[role] = {"old_pid": old["pid"], "new_pid": new["pid"], "restart_s": round(clock.elapsed() - t0, 3),
                                  "transferred": False}
                if x.collective_backend:   # the application re-creates its collective group after a restart
                    destroy_group(pair.group)
                    pair.group = None
                    try:
                        pair.group = make_group(x, [pair.src, pair.dst])
                    except CheckTimeout:
                        raise
                    except Exception as exc:  # noqa: BLE001 - the finding
                        raise clock.fail(f"re-creating the {x.collective_backend} group with the restarted {role} "
                                         f"failed: {first_line(exc)}") from None
                xc.roundtrip(clock, pair.src, pair.dst, SMALL_BYTES, 42 if role == "source" else 43,
                          f"a transfer with the restarted {role}")
                restarts[role]["transferred"] = True
            xc.judge_now(clock)
        finally:
            end_pair(pair)


@pytest.mark.check("FR-018")
def test_transfer_across_partition_ends_in_data_or_error(recovery_ctx: TransferRecoveryCtx) -> None:
    from conformance.areas.recovery.nodes import NodeLab, known_nodes, restore_layout

    xc = recovery_ctx
    handle = xc.cluster()
    lab = NodeLab(handle, xc.manifest, xc.manager(), handle.shape, xc.partition_driver, refs=known_nodes(xc.run))
    if all(r in lab.alive() or r in lab.refs for r in ("b", "c")):   # an earlier check may have failed b
        restore_layout(xc, lab)
    roles = lab.alive()
    if not {"b", "c"} <= set(roles):
        not_applicable("needs live nodes labelled conformance.areas.recovery/node=b and =c (docs/recovery.md)")
    xc.each_device(lambda device: _across_partition(xc, lab), units_per_node=1)   # one peer on b, one on c
    xc.decide()


def _across_partition(xc: TransferRecoveryCtx, lab: NodeLab) -> None:
    from conformance.areas.recovery.bounds import scenario_bound
    from conformance.areas.recovery.devices import pinned

    peers: list[Any] = []
    fresh = None
    partitioned = False
    roles = lab.alive()
    if not {"b", "c"} <= set(roles):   # the type before rejoined b; its node id is new
        not_applicable(f"node b or c is not alive after the partition on the type before (alive: {', '.join(sorted(roles))})")
    # Its bound is its own: the partition's transfer_end_s, not stretched by the cluster's fetch timeout.
    with xc.timed("transfer-from-a-partitioned-node", scenario_bound(xc.check)) as clock:
        try:
            src = xc.peers(clock, 1, scheduling_strategy=pinned(roles["b"]["NodeID"]))[0]
            dst = xc.peers(clock, 1, scheduling_strategy=pinned(roles["c"]["NodeID"]))[0]
            peers = [src, dst]
            group = make_group(xc.x, peers)
            ref = xc.produce(clock, src, SMALL_BYTES, 31)
            sent = clock.get(src.sent_digest.remote(31), "the producer's digest", CONTROL_CALL_S)
            lab.partition("b")
            partitioned = True
            t0 = clock.elapsed()
            kind, got = outcome(clock, dst.receive.remote(ref), "the transfer across the partition",
                                xc.param("transfer_end_s"))
            xc.metrics.update(result=kind, result_s=round(clock.elapsed() - t0, 3), sent=digest_evidence(sent))
            if kind == "data":
                xc.metrics["got"] = digest_evidence(got)
            else:
                xc.metrics["error"] = got
            xc.judge_now(clock, final=False)
            lab.heal("b")
            partitioned = False
            fresh = receiver_recovers(xc, clock, Pair(src, dst, group), seed=33)
            xc.judge_now(clock)
        finally:
            if partitioned:
                lab.heal("b")
            end_pair(fresh)
            from conformance.areas.recovery.devices import kill_quietly
            kill_quietly(peers)
            if "b" not in lab.alive():   # leave the layout as found: the healed host joins again
                lab.rejoin("b")
