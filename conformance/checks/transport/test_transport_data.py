"""Transport area, data: what arrives is exactly what was sent (TR-001 .. TR-009).

Every comparison is on bytes (sha256 of the elements in logical order), never allclose: a
transport moves memory, it does not compute. The payloads are random bytes reinterpreted as
the dtype (NaN payloads, infinities, denormals included). Cases move one at a time, except in
the concurrency check, so each failure names one case.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import pytest

from conformance.areas.transport import judges
from conformance.areas.transport.context import TransportCtx
from conformance.handles import Actor
from conformance.rdt import payloads
from conformance.rdt.accelerator_rule import endpoints_reason, one_node_reason
from conformance.rdt.config import INTRA_NODE_ENDPOINTS, format_size, max_bytes, record_size_cap
from conformance.rdt.context import CaseResult, TransportContext
from conformance.rdt.device import is_host
from conformance.rdt.pool import Endpoints, Ready, alive_nodes, harness_ready, start_endpoints
from conformance.rdt.tables import publish
from conformance.rdt.transfer import GET_TIMEOUT_S, TransferError, ray_get
from conformance.run.fixtures import not_applicable
from conformance.run.nodes import ALL, ring_pairs


def _ray() -> Any:
    import ray
    return ray


def supported_dtypes(tctx: TransportContext, device: str) -> tuple[list[str], dict[str, str]]:
    """(dtypes the device can hold, {dtype: why not} for the others), probed on an endpoint."""
    key = f"dtypes/{device}"
    if key not in tctx.cache:
        eps = tctx.intra_node(device)
        probe = ray_get(eps.actors[0].supported_dtypes.remote(list(payloads.ALL_DTYPES)), what="dtype probe")
        tctx.cache[key] = ([d for d in payloads.ALL_DTYPES if probe[d] is None],
                           {d: why for d, why in probe.items() if why is not None})
    found: tuple[list[str], dict[str, str]] = tctx.cache[key]
    return found


def record_cases(ctx: TransportCtx, results: list[CaseResult], **evidence: Any) -> None:
    """The type's evidence: how many cases moved, how many arrived other than sent (their bytes,
    structure or metadata compared by digest), the first few of those, and what else it names."""
    bad = [r.summary() for r in results if not r.ok]
    ctx.metrics.update({"cases": len(results), "wrong": len(bad), **evidence})
    if bad:
        ctx.metrics["failures"] = bad[:4]


def require_pair(tctx: TransportContext, device: str) -> None:
    if len(tctx.intra_node(device)) < 2:
        not_applicable(endpoints_reason(device, 2))


@pytest.mark.check("TR-001")
def test_every_dtype_and_shape_bit_exact(transport_ctx: TransportCtx) -> None:
    transport_ctx.each_device(lambda device, first: _every_dtype_and_shape(transport_ctx, device))
    transport_ctx.decide_over_types("cases", "wrong")


def _every_dtype_and_shape(ctx: TransportCtx, device: str) -> None:
    tctx = ctx.transport
    require_pair(tctx, device)
    dtypes, unsupported = supported_dtypes(tctx, device)
    missing_core = [d for d in payloads.CORE_DTYPES if d in unsupported]
    cases = [payloads.tensor_case(d, s) for d in dtypes for s in payloads.SHAPES]
    results = tctx.run_cases(device, cases, payloads.DATA_FIELDS)
    matrix: dict[str, dict[str, str]] = {}
    for case, r in zip(cases, results):
        matrix.setdefault(case["dtype"], {})[case["shape_name"]] = "ok" if r.ok else ("not run" if r.not_run else "FAIL")
    for d in unsupported:
        matrix[d] = {s: "n/s" for s in payloads.SHAPES}
    publish(tctx.run, "correctness", matrix, device)
    record_cases(ctx, results, dtypes=dtypes, shapes=list(payloads.SHAPES), unsupported_by_device=unsupported,
                 core_dtypes_unsupported=missing_core)


@pytest.mark.check("TR-002")
def test_non_contiguous_views_arrive_as_their_values(transport_ctx: TransportCtx) -> None:
    transport_ctx.each_device(lambda device, first: _non_contiguous_views(transport_ctx, device))
    transport_ctx.decide_over_types("cases", "wrong")


def _non_contiguous_views(ctx: TransportCtx, device: str) -> None:
    tctx = ctx.transport
    require_pair(tctx, device)
    cases = [payloads.view_case(d, v) for d in payloads.VIEW_DTYPES for v in payloads.VIEWS]
    results = tctx.run_cases(device, cases, payloads.DATA_FIELDS)
    record_cases(ctx, results, views=list(payloads.VIEWS), dtypes=list(payloads.VIEW_DTYPES))


@pytest.mark.check("TR-003")
def test_several_tensors_and_nested_containers(transport_ctx: TransportCtx) -> None:
    transport_ctx.each_device(lambda device, first: _containers(transport_ctx, device))
    transport_ctx.decide_over_types("cases", "wrong")


def _containers(ctx: TransportCtx, device: str) -> None:
    tctx = ctx.transport
    require_pair(tctx, device)
    cases = [payloads.container_case(c) for c in payloads.CONTAINERS]
    results = tctx.run_cases(device, cases, payloads.DATA_FIELDS)
    record_cases(ctx, results, containers=[c["id"] for c in cases])


def _free_memory_bytes() -> int | None:
    try:
        with open("/proc/meminfo") as f:
            for line in f:
                if line.startswith("MemAvailable:"):
                    return int(line.split()[1]) * 1024
    except OSError:
        return None
    return None


@pytest.mark.check("TR-004")
def test_large_tensor(transport_ctx: TransportCtx) -> None:
    size = max_bytes()
    avail = _free_memory_bytes()
    # source tensor + transport staging + received tensor (+ digests), with room to spare
    needed = int(transport_ctx.param("host_memory_factor")) * size
    if avail is not None and avail < needed:
        not_applicable(f"host has {avail >> 20} MiB available; moving {format_size(size)} needs about "
                       f"{needed >> 20} MiB (set RAY_CONFORMANCE_TRANSPORT_MAX_BYTES lower)")
    # the host's memory is the same for every type: checked once, before any
    transport_ctx.metrics["max_bytes"] = size
    record_size_cap(transport_ctx.metrics)
    transport_ctx.each_device(lambda device, first: _large_tensor(transport_ctx, device, size))
    transport_ctx.decide_over_types("cases", "wrong")


def _large_tensor(ctx: TransportCtx, device: str, size: int) -> None:
    tctx = ctx.transport
    require_pair(tctx, device)
    results = tctx.run_cases(device, [payloads.buffer_case(size, "/large")], payloads.DATA_FIELDS,
                             timeout=max(60.0, size / 20e6))  # knob: hang guard of one transfer, scaled to its size
    record_cases(ctx, results, bytes=size)


@pytest.mark.check("TR-005")
def test_received_metadata(transport_ctx: TransportCtx) -> None:
    transport_ctx.each_device(lambda device, first: _received_metadata(transport_ctx, device))
    transport_ctx.decide_over_types("cases", "wrong")


def _received_metadata(ctx: TransportCtx, device: str) -> None:
    tctx = ctx.transport
    require_pair(tctx, device)
    dtypes, _ = supported_dtypes(tctx, device)
    cases = ([payloads.tensor_case(d, "4-d") for d in dtypes] + [payloads.tensor_case("float32", s) for s in
                                                                  ("0-d", "empty", "empty-inner", "odd-7")]
             + [payloads.container_case("dict-nested")])
    assert len(cases) == len(dtypes) + judges.METADATA_EXTRA_CASES   # the judge's count of this check's cases
    results = tctx.run_cases(device, cases, payloads.META_FIELDS)
    record_cases(ctx, results, dtypes=dtypes)
    if not is_host(device):
        ctx.metrics["current_device"] = _on_current_device(tctx, device, ctx.budget.actors)


def _on_current_device(tctx: TransportContext, device: str, ready: Ready) -> dict[str, Any]:
    """Receive on an actor given two devices, twice: with its second one current
    (torch.<device>.set_device(1)), then with its first (set_device(0)): every received tensor must
    be on the current device, as Ray's own receive buffers are (`torch.empty(..., device=<type>)`
    allocates on the current device: torch's contract for a tensor made without an index). The
    order matters: with its second one current the current device is also the last visible one,
    and the first is the one a process starts with, so a transport that puts received tensors on
    the first device (ray-ascend's HCCL did) or on the last one each fail one of the two rounds.
    Returns what was seen per round (the current device, the received tensors checked, those on
    another device and the first of them), or why it could not run."""
    from conformance.cluster.requests import demand
    from conformance.rdt.pool import alive_nodes, start_endpoints

    eps = tctx.intra_node(device)
    if tctx.setup.collective_backend:
        return {"not_run": judges.CURRENT_IN_GROUP}

    def free_units() -> int:
        node = next((n for n in alive_nodes(tctx.resource) if n["NodeID"] == eps.node_of(0)), None)
        return int(node["Resources"].get(tctx.resource, 0)) - len(eps) if node else 0

    if free_units() < judges.CURRENT_UNITS and len(eps) > judges.PAIR:
        # a pool an earlier check grew holds the units this round needs: its judge asks for the
        # round wherever the node's units leave room beside a pair, so a pair it is
        tctx.pools.drop(f"intra/{device}")
        eps = tctx.intra_node(device)
    if free_units() < judges.CURRENT_UNITS:
        return {"not_run": judges.current_units_not_run(tctx.resource, len(eps))}
    rx = start_endpoints(tctx.setup, tctx.resource, device=device, nodes=[eps.node_of(0)], units=False,
                         group=False, ready=ready, what="a receiver with two devices", **demand(tctx.resource, judges.CURRENT_UNITS))
    try:
        seen: dict[str, Any] = {}
        for index, which in ((1, "its second, the last visible, current"), (0, "its first, not the last visible, current")):
            state = ray_get(rx.actors[0].use_device.remote(index), what=f"receiver use_device({index})")
            wrong, checked = [], 0
            for case in (payloads.tensor_case("float32", "2-d"), payloads.container_case("list-mixed")):
                _, got = tctx.transfer(eps.actors[0], rx.actors[0], case)
                received = list(payloads.tensors_in(got))
                checked += len(received)
                wrong += [f"{case['id']} {path}: {t['device']}:{t['device_index']}" for path, t in received
                          if t["device_index"] != state["current_device"]]
            seen[f"current_{index}"] = {**state, "checked": checked, "wrong": len(wrong), "when": which,
                                        **({"on_another_device": wrong[:3]} if wrong else {})}
        return seen
    finally:
        rx.shutdown()


@pytest.mark.check("TR-006")
def test_between_nodes(transport_ctx: TransportCtx) -> None:
    transport_ctx.each_device(lambda device, first: _between_nodes(transport_ctx, device))
    transport_ctx.decide_over_types("cases", "wrong")


def _between_nodes(ctx: TransportCtx, device: str) -> None:
    tctx = ctx.transport
    wave = _start_wave(ctx, device) if ctx.node_mode == ALL else None
    eps = tctx.cross_node(device) if wave is None else wave.first_pair()
    if eps is None:
        not_applicable(one_node_reason(device, tctx.resource))
    def cross() -> Endpoints:
        again = tctx.cross_node(device) if wave is None else wave.first_pair()
        if again is None:
            raise TransferError("the cluster lost its second node during the check")
        return again

    try:
        cases = [payloads.tensor_case("float32", "2-d"), payloads.view_case("float32", "transpose"),
                 payloads.container_case("list-mixed"), payloads.buffer_case(min(max_bytes(), 16 << 20), "/cross")]
        fwd = tctx.run_cases(device, cases, payloads.DATA_FIELDS + payloads.META_FIELDS,
                             endpoints=cross, src=0, dst=1)
        back = tctx.run_cases(device, [payloads.buffer_case(1 << 20, "/cross-back")], payloads.DATA_FIELDS,
                              endpoints=cross, src=1, dst=0)
        assert len(cases) + 1 == judges.CROSS_NODE_CASES   # the judge's count of this check's cases
        evidence = wave.transfer(ctx) if wave is not None else {}
    finally:
        if wave is not None:
            wave.eps.shutdown()
        tctx.release("cross/")
    record_cases(ctx, fwd + back, nodes=[eps.node_of(0)[:8], eps.node_of(1)[:8]],
                 errors=[r.error for r in fwd + back if r.error][:4], **evidence)


@dataclass
class PairWave:
    """`--nodes all`: one endpoint on every node (started together, one ready wait) and a wave of
    node pairs in which every node is an endpoint (conformance.run.nodes.ring_pairs, one read of
    Ray's view); the check's own pair is the wave's first (the two nodes cross_node would pick), so
    no endpoint starts twice, and with an odd count the first node's endpoint also receives."""

    nodes: list[str]
    pairs: list[tuple[str, str]]
    eps: Endpoints

    def first_pair(self) -> Endpoints:
        return Endpoints(actors=self.eps.actors[:2], infos=self.eps.infos[:2], device=self.eps.device,
                         group=self.eps.group)

    def transfer(self, ctx: TransportCtx) -> dict[str, Any]:
        """Each pair moves one buffer, every transfer submitted at once and gathered with one
        bounded wait (never pair by pair): the evidence `pair_wave` (the pairs by short id, how
        many moved, which arrived other than sent), judged beside the check's own pair
        (areas/transport/judges/pair_wave)."""
        import ray

        on = dict(zip(self.nodes, self.eps.actors))
        cases = [payloads.buffer_case(1 << 20, f"/pair-wave-{i}") for i in range(len(self.pairs))]
        made = [ctx.transport.produce(on[a], case) for (a, _), case in zip(self.pairs, cases)]
        got_refs = [on[b].receive.remote(ref) for (_, b), ref in zip(self.pairs, made)]
        sent_refs = [on[a].sent_digest.remote(case["id"]) for (a, _), case in zip(self.pairs, cases)]
        ready, _ = ray.wait(got_refs + sent_refs, num_returns=len(got_refs) + len(sent_refs), timeout=GET_TIMEOUT_S)
        done, failures = set(ready), []
        for (a, b), got_ref, sent_ref in zip(self.pairs, got_refs, sent_refs):
            name = f"{a[:8]}->{b[:8]}"
            if got_ref not in done or sent_ref not in done:
                failures.append(f"{name}: no answer within {GET_TIMEOUT_S:g} s")
                continue
            try:
                problems = payloads.compare(ray.get(sent_ref), ray.get(got_ref), payloads.DATA_FIELDS)
            except Exception as exc:  # noqa: BLE001 - a transfer that raised is this pair's failure
                problems = [f"{type(exc).__name__}: {str(exc)[:200]}"]
            if problems:
                failures.append(f"{name}: {'; '.join(problems)[:200]}")
        del made
        return {"pair_wave": {"pairs": [[a[:8], b[:8]] for a, b in self.pairs], "moved": len(self.pairs),
                              "wrong": len(failures), **({"failures": failures[:4]} if failures else {})}}


def _start_wave(ctx: TransportCtx, device: str) -> PairWave | None:
    """One endpoint on every node offering the device, and the wave's pairs (None with fewer than two nodes)."""
    tctx = ctx.transport
    nodes = [str(n["NodeID"]) for n in alive_nodes(None if is_host(device) else tctx.resource)]
    pairs = ring_pairs(nodes)
    if not pairs:
        return None
    tctx.release("cross/")   # the default pair's units back first: the wave's endpoints take every node's
    if not is_host(device):
        tctx.wait_units_free()
    ctx.exercised(nodes)
    eps = start_endpoints(tctx.setup, tctx.resource, device=device, nodes=list(nodes),
                          ready=harness_ready(ctx.run.machinery), what=f"endpoints on {len(nodes)} node(s), {len(pairs)} pair(s)")
    return PairWave(nodes, pairs, eps)


@pytest.mark.check("TR-007")
def test_concurrent_transfers(transport_ctx: TransportCtx) -> None:
    transport_ctx.each_device(lambda device, first: _concurrent_transfers(transport_ctx, device))
    transport_ctx.decide_over_types("cases", "wrong")


def _concurrent_transfers(ctx: TransportCtx, device: str) -> None:
    tctx = ctx.transport
    require_pair(tctx, device)
    eps = tctx.intra_node(device, INTRA_NODE_ENDPOINTS)   # three when the node allows: 12 routes in flight
    n = len(eps)
    # every ordered pair, twice, with distinct contents: 6 (2 endpoints: 4) .. 12 in flight
    routes = [(i, j) for i in range(n) for j in range(n) if i != j] * judges.CONCURRENT_ROUNDS
    cases = [payloads.buffer_case((64 << 10) * (k + 1), f"/conc{k}") for k in range(len(routes))]
    refs = [tctx.produce(eps.actors[i], c) for (i, _), c in zip(routes, cases)]
    ctx.metrics.update({"cases": len(routes), "endpoints": n, "wrong": 0,
                        "bytes_in_flight": sum(c["nbytes"] for c in cases)})
    try:
        got = ray_get([eps.actors[j].receive.remote(r) for (_, j), r in zip(routes, refs)], 60.0,
                      f"{len(routes)} concurrent transfers")
        sent = ray_get([eps.actors[i].sent_digest.remote(c["id"]) for (i, _), c in zip(routes, cases)],
                       what="digests")
    except TransferError as exc:   # the transfers' error is the evidence (their bytes never compared)
        ctx.metrics.update({"wrong": len(routes), "errors": [str(exc)[:300]]})
        return
    finally:
        del refs
    wrong = [f"{c['id']} {i}->{j}: {'; '.join(payloads.compare(s, g))}" for (i, j), c, s, g
             in zip(routes, cases, sent, got) if payloads.compare(s, g)]
    ctx.metrics["wrong"] = len(wrong)
    if wrong:
        ctx.metrics["failures"] = wrong[:3]


@pytest.mark.check("TR-008")
def test_same_ref_received_twice(transport_ctx: TransportCtx) -> None:
    transport_ctx.each_device(lambda device, first: _same_ref_twice(transport_ctx, device))
    transport_ctx.decide_over_types("cases", "wrong")


def _same_ref_twice(ctx: TransportCtx, device: str) -> None:
    tctx = ctx.transport
    require_pair(tctx, device)
    eps = tctx.intra_node(device, INTRA_NODE_ENDPOINTS)   # a third endpoint is "another consumer"
    src, dst = eps.actors[0], eps.actors[1]
    case = payloads.container_case("list-mixed")
    ref = tctx.produce(src, case)
    seen: dict[str, Any] = {}
    errors: list[str] = []
    try:
        first, second, twice0, twice1 = judges.SAME_REF_RECEIVES
        seen[first] = ray_get(dst.receive.remote(ref), what="first receive")
        seen[second] = ray_get(dst.receive.remote(ref), what="second receive")
        seen[twice0], seen[twice1] = ray_get(dst.receive_many.remote(ref, ref), what="receive twice in one call")
        if len(eps) > judges.PAIR:
            seen[judges.ANOTHER_CONSUMER] = ray_get(eps.actors[2].receive.remote(ref), what="other consumer")
        sent = ray_get(src.sent_digest.remote(case["id"]), what="digest")
    except TransferError as exc:   # a receive that raised: the evidence (what arrived before it is not compared)
        errors.append(str(exc)[:300])
        sent = None
    finally:
        del ref
    wrong = {k: payloads.compare(sent, v) for k, v in seen.items()} if sent is not None else {}
    wrong = {k: v for k, v in wrong.items() if v}
    ctx.metrics.update({"receives": list(seen), "endpoints": len(eps), "cases": len(seen), "wrong": len(wrong),
                        "errors": errors})
    if wrong:
        ctx.metrics["failures"] = [f"{k}: {v[0]}" for k, v in wrong.items()]


def _driver_get(ref: Any, sent: object, **options: Any) -> str:
    """What ray.get of an RDT ref does in the driver, in words ("returned bit-exact", "ValueError: ..")."""
    ray = _ray()
    try:
        value = ray.get(ref, timeout=GET_TIMEOUT_S, **options)
    except ValueError as exc:
        return f"ValueError: {str(exc)[:120]}"
    except Exception as exc:  # noqa: BLE001 - reported by the check
        return f"{type(exc).__name__}: {str(exc).splitlines()[0][:160] if str(exc) else ''}"
    diff = payloads.compare(sent, payloads.describe(value))
    return "returned bit-exact" if not diff else f"returned wrong data: {diff[0]}"


def _driver_put_to_actor(tctx: TransportContext, device: str, dst: Actor) -> str:
    """ray.put(_tensor_transport=...) in the driver, received by an actor: "bit-exact" or what went wrong."""
    ray = _ray()
    t = payloads.build(payloads.tensor_case("float32", "4-d"), device)
    try:
        ref = ray.put(t, _tensor_transport=tctx.name)
        try:
            got = ray_get(dst.receive.remote(ref), what="receive of a driver ray.put")
        finally:
            del ref
    except Exception as exc:  # noqa: BLE001
        return f"{type(exc).__name__}: {str(exc).splitlines()[0][:160] if str(exc) else ''}"
    diff = payloads.compare(payloads.describe(t), got)
    return "bit-exact" if not diff else diff[0]


@pytest.mark.check("TR-009")
def test_driver_get_follows_ray_semantics(transport_ctx: TransportCtx) -> None:
    """One-sided: ray.get in the driver returns the tensors. Two-sided: ValueError, unless
    _use_object_store=True. Both: _use_object_store=True returns them (Ray's RDT docs)."""
    transport_ctx.each_device(lambda device, first: _driver_get_semantics(transport_ctx, device))
    transport_ctx.decide_over_types("cases", "wrong")


def _driver_get_semantics(ctx: TransportCtx, device: str) -> None:
    tctx = ctx.transport
    one_sided = tctx.setup.one_sided
    require_pair(tctx, device)
    eps = tctx.intra_node(device)
    case = payloads.container_case("dict-nested")
    ref = tctx.produce(eps.actors[0], case)
    try:
        sent = ray_get(eps.actors[0].sent_digest.remote(case["id"]), what="digest")
        seen = {judges.DRIVER_GET: _driver_get(ref, sent),
                judges.DRIVER_GET_STORE: _driver_get(ref, sent, _use_object_store=True)}
    finally:
        del ref
    if one_sided:   # the driver as the source: Ray allows ray.put(_tensor_transport=) for one-sided transports
        seen[judges.DRIVER_PUT] = _driver_put_to_actor(tctx, device, eps.actors[1])
    # what the driver saw (the error's type and message, or whether the bytes matched), judged
    # against Ray's documented semantics for the transport's sidedness
    problems = judges.driver_semantics_problems(one_sided, seen)
    ctx.metrics.update({"one_sided": one_sided, "driver": seen, "cases": len(seen), "wrong": len(problems)})
