"""Transport area, lifecycle: Ray calls the transport where and when its contract says (TR-010 .. TR-014).

The suite registers an instrumenting wrapper in place of the vendor's manager (see
conformance/rdt/tracing.py): every call is recorded in the process it ran in, with the
object id, and whether it raised. The checks compare those records with Ray's documented
contract (ray.experimental.rdt.TensorTransportManager): which side runs each method, how
often, and that the vendor's code returns without raising. Memory is judged from what the OS
and the device report, never from the transport's own accounting.
"""
from __future__ import annotations

import statistics
import time
from typing import Any

import pytest

from conformance import leftovers
from conformance.areas.transport import judges, lifecycle
from conformance.areas.transport.context import TransportCtx
from conformance.rdt import payloads
from conformance.rdt.accelerator_rule import endpoints_reason
from conformance.rdt.config import max_bytes, record_size_cap
from conformance.rdt.context import TransportContext, later_bytes
from conformance.rdt.memory import growth
from conformance.rdt.pool import Endpoints, start_endpoints
from conformance.rdt.transfer import TransferError, ray_get
from conformance.run.fixtures import not_applicable

MiB = 1 << 20


def _pair(tctx: TransportContext, device: str) -> Any:
    eps = tctx.intra_node(device)
    if len(eps) < 2:
        not_applicable(endpoints_reason(device, 2))
    return eps


def _transfer_all(tctx: TransportContext, eps: Endpoints, cases: list[dict[str, Any]], src: int = 0, dst: int = 1,
                  consume: bool = True, errors: list[str] | None = None) -> list[str]:
    """Move each case src -> dst with the traced transport; return the object ids (refs dropped).

    Whether the data arrived right is the data checks' business (TR-001..); here a transfer
    only has to complete. With `errors`, a transfer that fails is noted there and its object id
    is still returned (a check that judges the transport's call records reads them anyway).
    """
    ids = []
    for case in cases:
        ref = tctx.produce(eps.actors[src], case, tctx.setup.traced_name)
        try:
            if consume:
                ray_get(eps.actors[dst].receive.remote(ref), what=f"{case['id']}: consumer")
            else:
                ray_get(eps.actors[src].sent_digest.remote(case["id"]), what=f"{case['id']}: producer")
            ids.append(ref.hex())
        except TransferError as exc:
            if errors is None:
                raise
            errors.append(str(exc))
            ids.append(ref.hex())
        finally:
            del ref
    return ids


def _side(eps: Endpoints, key: str) -> str:
    return "driver" if key == "driver" else f"endpoint {key} (pid {eps.pid_of(int(key))})"


@pytest.mark.check("TR-010")
def test_send_called_only_for_two_sided(transport_ctx: TransportCtx) -> None:
    transport_ctx.each_device(lambda device, first: _sidedness(transport_ctx, device, first))
    transport_ctx.decide_over_types("transfers")


def _sidedness(transport_ctx: TransportCtx, device: str, first: bool) -> None:
    tctx, metrics = transport_ctx.transport, transport_ctx.metrics
    T, one_sided = tctx.setup.traced_name, tctx.setup.one_sided
    eps = _pair(tctx, device)
    lifecycle.clear_calls(eps, T)
    cases = [payloads.buffer_case(later_bytes(256 << 10, first), f"/side{k}") for k in range(judges.SIDEDNESS_TRANSFERS)]
    ids = set(_transfer_all(tctx, eps, cases))
    if not one_sided:   # sends may be recorded a moment after the receive returned
        deadline = time.monotonic() + 5
        while time.monotonic() < deadline and sum(
                r["m"] == "send_multiple_tensors" for r in ray_get(eps.actors[0].transport_calls.remote(T))) < len(ids):
            time.sleep(0.05)
    calls = lifecycle.gather_calls(eps, T)
    sends = {k: [r for r in recs if r["m"] == "send_multiple_tensors"] for k, recs in calls.items()}
    recvs = lifecycle.count(calls["1"], "recv_multiple_tensors", ids)
    failed = [f"{r['m']} on {_side(eps, k)} raised {r['err']}" for k, recs in calls.items() for r in recs
              if not r["ok"] and r["m"] in ("send_multiple_tensors", "recv_multiple_tensors")]
    # the call records, judged (data_path_matches_sidedness): sends by endpoint (0 the source;
    # the driver's key "driver"), receives per object on the destination, what raised
    metrics.update({"one_sided": one_sided, "transfers": len(ids),
                    "sends": {k: len(v) for k, v in sends.items() if v},
                    "receives_per_object": [recvs.get(i, 0) for i in sorted(ids)],
                    "receives_on_destination": sum(recvs.values()), "raised": failed[:3]})


@pytest.mark.check("TR-011")
def test_extract_runs_once_on_source_and_describes_tensors(transport_ctx: TransportCtx) -> None:
    # the cases are small already (a few KiB): every type moves the same ones
    transport_ctx.each_device(lambda device, first: _extract(transport_ctx, device))
    transport_ctx.decide_over_types("cases")


def _extract(transport_ctx: TransportCtx, device: str) -> None:
    tctx, metrics = transport_ctx.transport, transport_ctx.metrics
    T = tctx.setup.traced_name
    eps = _pair(tctx, device)
    lifecycle.clear_calls(eps, T)
    cases = [payloads.tensor_case("float32", "4-d"), payloads.tensor_case("bfloat16", "odd-7"),
             payloads.container_case("list-mixed")]
    # a transfer Ray refuses (metadata naming a device the transport does not declare) still
    # leaves the extract's record: the metadata is judged first, the transfer errors after it
    transfer_errors: list[str] = []
    ids = _transfer_all(tctx, eps, cases, errors=transfer_errors)
    # a view is only produced: its metadata must describe the view; whether it can be moved is TR-002's
    cases.append(payloads.view_case("float32", "transpose"))
    ids += _transfer_all(tctx, eps, cases[-1:], consume=False, errors=transfer_errors)
    lifecycle.wait_calls(transport_ctx.budget, eps, T, 0, "extract_tensor_transport_metadata", set(ids), timeout_s=10)  # knob: hang guard for call records
    calls = lifecycle.gather_calls(eps, T)
    assert tuple(c["id"] for c in cases) == judges.EXTRACT_CASES   # the objects its judge expects, in order
    recv_start = {r["obj"]: r["t"] - r["dur_s"] for r in calls["1"] if r["m"] == "recv_multiple_tensors"}
    objects = []
    for case, obj in zip(cases, ids):
        ex = [r for r in calls["0"] if r["m"] == "extract_tensor_transport_metadata" and r["obj"] == obj]
        elsewhere = sum(lifecycle.count(recs, "extract_tensor_transport_metadata", {obj})[obj]
                        for key, recs in calls.items() if key != "0")
        record: dict[str, Any] = {"case": case["id"], "on_source": len(ex), "elsewhere": elsewhere}
        if len(ex) == 1:
            r = ex[0]
            if not r["ok"]:
                record["raised"] = str(r["err"])[:300]
            else:
                # what the metadata says beside what the tensors were (the tracer's record of them)
                record.update({"tensor_meta": r["meta"]["tensor_meta"],
                               "tensors": [[shape, dtype] for shape, dtype, _ in r["tensors"]],
                               "tensor_device": r["meta"]["tensor_device"],
                               "tensor_devices": sorted({dev for _, _, dev in r["tensors"]}),
                               "receive_started_first": bool(obj in recv_start
                                                             and r["t"] > recv_start[obj] + 1e-3)})  # knob: 1 ms clock slack when ordering call records
        objects.append(record)
    metrics.update({"cases": len(ids), "objects": objects, "transfer_errors": [e[:300] for e in transfer_errors[:2]],
                    "stray": sum(o["elsewhere"] for o in objects)})


@pytest.mark.check("TR-012")
def test_garbage_collect_once_per_freed_object_on_source(transport_ctx: TransportCtx) -> None:
    transport_ctx.each_device(lambda device, first: _garbage_collect(transport_ctx, device, first))
    transport_ctx.decide_over_types("freed_objects")


def _garbage_collect(transport_ctx: TransportCtx, device: str, first: bool) -> None:
    tctx, metrics = transport_ctx.transport, transport_ctx.metrics
    T = tctx.setup.traced_name
    eps = _pair(tctx, device)
    lifecycle.clear_calls(eps, T)
    nbytes = later_bytes(64 << 10, first)
    # one object moved and freed before the first reading: what a transport starts once per
    # process (a library's daemon, Python's resource tracker for shared memory) is there already;
    # what it starts per object shows again for the objects below
    _transfer_all(tctx, eps, [payloads.buffer_case(nbytes, "/gc-first")])
    audit = leftovers.Audit(lambda: ray_get([a.leftovers_here.remote() for a in eps.actors],
                                            what="the endpoints' processes and files"), set,
                            lambda i, names, since: ray_get(eps.actors[i].leftovers_orphans.remote(names, since),
                                                            what="the files the endpoints held"))
    baseline = lifecycle.held_objects(eps, 0)
    ids = _transfer_all(tctx, eps, [payloads.buffer_case(nbytes, f"/gc{k}") for k in range(5)])
    ids += _transfer_all(tctx, eps, [payloads.buffer_case(nbytes, "/gc-unsent")], consume=False)
    # one object received twice before it is freed
    case = payloads.buffer_case(nbytes, "/gc-twice")
    ref = tctx.produce(eps.actors[0], case, T)
    try:
        ray_get([eps.actors[1].receive.remote(ref), eps.actors[1].receive.remote(ref)], what="two receives")
        ids.append(ref.hex())
        audit.sample()   # what the endpoints hold while an object lives: still there, unheld, after the free?
    finally:
        del ref
    held = lifecycle.wait_freed(transport_ctx.budget, eps, 0, baseline)
    lifecycle.wait_calls(transport_ctx.budget, eps, T, 0, "garbage_collect", set(ids))
    calls = lifecycle.gather_calls(eps, T)
    on_src = lifecycle.count(calls["0"], "garbage_collect", set(ids))
    raised = [str(r["err"])[:300] for r in calls["0"] if r["m"] == "garbage_collect" and not r["ok"]]
    elsewhere = sum(sum(lifecycle.count(r, "garbage_collect", set(ids)).values()) for key, r in calls.items() if key != "0")
    bound = float(transport_ctx.param("leftover_bound_s"))
    left = audit.left(bound)
    # the evidence its judge reads (garbage_collect_once_on_source): Ray's count of objects still
    # held, garbage_collect's calls per freed object on the source, elsewhere and what raised,
    # and what the transport left behind `leftover_bound_s` after the frees
    metrics.update({"freed_objects": len(ids), "gc_per_object": [on_src.get(obj, 0) for obj in ids],
                    "gc_calls_on_source": sum(on_src.values()), "gc_raised": raised[:3], "gc_elsewhere": elsewhere,
                    "still_held": held, "leftover_bound_s": bound, "left_behind": left[:5]})


@pytest.mark.check("TR-013")
def test_memory_returns_to_baseline(transport_ctx: TransportCtx) -> None:
    """K fresh payloads per round, moved and freed; the memory each probe gains per round must
    stay under half a round's payload (median of 3 rounds: a leak repeats every round, noise
    from other processes does not). A leak of one buffer per transfer gains a whole round.

    Every declared device type moves the same payloads (the bound is a fraction of a round's
    payload: a smaller one would judge a smaller leak); the judged growth is one table, its
    probes named by type when there are several."""
    judged = transport_ctx.metrics
    # 16 MiB payloads in a certification run (256 MiB max), 4 MiB with a 16 MiB max (make test)
    size = max(MiB, min(max_bytes() // 4, 16 * MiB))
    per_round, rounds = int(transport_ctx.param("transfers_per_round")), int(transport_ctx.param("rounds"))
    judged.update({"payload_bytes": size, "transfers_per_round": per_round, "rounds": rounds,
                   "growth_per_round_bytes": {}})
    record_size_cap(judged)
    transport_ctx.each_device(lambda device, first: _memory_rounds(transport_ctx, device, size, judged))
    transport_ctx.decide()


def _memory_rounds(transport_ctx: TransportCtx, device: str, size: int, judged: dict[str, Any]) -> None:
    """The rounds on one device type; its growth per probe joins judged["growth_per_round_bytes"]."""
    tctx, metrics = transport_ctx.transport, transport_ctx.metrics
    T = tctx.setup.traced_name
    eps = _pair(tctx, device)
    named = f"{device}:" if len(tctx.devices) > 1 else ""
    per_round, rounds = int(judged["transfers_per_round"]), int(judged["rounds"])
    src, dst = eps.actors[0], eps.actors[1]
    baseline, dst_baseline = lifecycle.held_objects(eps, 0), lifecycle.held_objects(eps, 1)
    dst_held: list[int] = []

    def one_round(tag: str) -> None:
        for k in range(per_round):
            ref = tctx.produce(src, payloads.buffer_case(size, f"/leak-{tag}-{k}"), T)
            try:
                ray_get(dst.sink.remote(ref), what="leak-check transfer")
            finally:
                del ref
        held = lifecycle.wait_freed(transport_ctx.budget, eps, 0, baseline)
        assert held == 0, f"Ray still holds {held} RDT object(s) on the source after the refs were dropped"
        # Ray's copies on the destination are Ray's, not the transport's: wait until it let go
        # of them too before reading memory (a wait on Ray alone: never the plugin's when it runs out)
        dst_held.append(lifecycle.wait_freed(transport_ctx.budget, eps, 1, dst_baseline, runs_plugin_code=False))

    def snap() -> dict[str, Any]:
        s, d = ray_get([src.memory.remote(shm=True), dst.memory.remote()], what="memory snapshot")
        # the cluster's shared memory is per node: read where the endpoints run (both on one node)
        return {"source": s, "destination": d, "node": {"cluster_shm_bytes": s["cluster_shm_bytes"]}}

    one_round("warmup")
    base = snap()
    per_probe: dict[str, list[int]] = {}
    for r in range(rounds):
        one_round(str(r))
        now = snap()
        for side in ("source", "destination", "node"):
            for probe, grown in growth(base[side], now[side]).items():
                if side != "node" and probe == "cluster_shm_bytes":
                    continue
                per_probe.setdefault(f"{side}.{probe}", []).append(grown)
        base = now
    metrics.update({"growth_per_round_mib": {k: [round(x / MiB, 1) for x in v] for k, v in per_probe.items()},
                    "destination_rdt_objects_after_round": dst_held})
    judged["growth_per_round_bytes"].update({named + k: v for k, v in per_probe.items()})


@pytest.mark.check("TR-014")
def test_actor_has_tensor_transport_answers_truthfully(transport_ctx: TransportCtx) -> None:
    judged = transport_ctx.metrics
    latencies: list[float] = []
    transport_ctx.each_device(lambda device, first: _has_transport(transport_ctx, device, first, latencies))
    # the judged figures, over every device type (the judge `verify` re-makes reads them here)
    judged.update({"actor_has_transport_latency_s": statistics.median(latencies),
                   "actor_has_transport_max_latency_s": max(latencies)})
    verdict = transport_ctx.verdict()
    assert verdict.outcome == "pass", str(verdict.reason)


def _has_transport(transport_ctx: TransportCtx, device: str, first: bool, latencies: list[float]) -> None:
    tctx, metrics = transport_ctx.transport, transport_ctx.metrics
    from ray.experimental.rdt.util import get_tensor_transport_manager

    T = tctx.setup.traced_name
    eps = _pair(tctx, device)
    lifecycle.clear_calls(eps, T)
    _transfer_all(tctx, eps, [payloads.buffer_case(4096, "/has")])  # knob: the smallest payload, on every type
    answers = [r for r in lifecycle.gather_calls(eps, T)["driver"] if r["m"] == "actor_has_tensor_transport"]
    problems = []
    if not answers:
        problems.append("Ray's .remote() with the transport did not consult actor_has_tensor_transport (no record)")
    odd = sorted({f"{r['result']} ({r['result_type']})" for r in answers if r["ok"] and r["result_type"] != "bool"})
    if odd:
        problems.append(f"actor_has_tensor_transport returned {odd}; expected a bool")
    raised = [r["err"] for r in answers if not r["ok"]]
    if raised:
        problems.append(f"actor_has_tensor_transport raised {raised[0]}")
    mgr = get_tensor_transport_manager(T)
    mine = []
    for i, actor in enumerate(eps.actors):
        t0 = time.perf_counter()
        answer = mgr.actor_has_tensor_transport(actor)
        mine.append(time.perf_counter() - t0)
        if answer is not True:
            problems.append(f"for endpoint {i}, which just moved tensors with it, it answered {answer!r}; expected True")
    latencies.extend(mine)
    outsider_answer = None
    if tctx.setup.config.collective_backend and first:
        # the negative case: an actor outside any collective group cannot use GLOO/NCCL (the
        # answer is about the group, not the tensors: once, on the first type)
        out = start_endpoints(tctx.setup, tctx.resource, device=device, nodes=[None], ready=transport_ctx.budget.actors)
        try:
            outsider_answer = mgr.actor_has_tensor_transport(out.actors[0])
            if outsider_answer is not False:
                problems.append(f"for an actor outside every {tctx.setup.config.collective_backend} group it answered "
                                f"{outsider_answer!r}; expected False")
            try:
                tctx.produce(out.actors[0], payloads.buffer_case(4096, "/outsider"), T)
                problems.append("a transport task on an actor outside the group was accepted at submission")
            except ValueError:
                pass
        finally:
            out.shutdown()
    metrics.update({"answers_checked": len(answers) + len(eps.actors), "latencies_s": [round(x, judges.LATENCY_DECIMALS) for x in mine],
                    "outsider_answer": repr(outsider_answer)})
    assert not problems, "; ".join(problems)
