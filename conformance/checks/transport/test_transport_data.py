"""Transport area, data: what arrives is exactly what was sent (TR-001 .. TR-009).

Every comparison is on bytes (sha256 of the elements in logical order), never allclose: a
transport moves memory, it does not compute. The payloads are random bytes reinterpreted as
the dtype (NaN payloads, infinities, denormals included). Cases move one at a time, except in
the concurrency check, so each failure names one case.
"""
from __future__ import annotations

from typing import Any

import pytest

from conformance.areas.transport.context import TransportCtx
from conformance.rdt import payloads
from conformance.rdt.config import format_size, max_bytes
from conformance.rdt.context import INTRA_NODE_ENDPOINTS, TransportContext, failures
from conformance.rdt.device import is_host
from conformance.rdt.pool import Endpoints
from conformance.rdt.tables import publish
from conformance.rdt.transfer import GET_TIMEOUT_S, TransferError, ray_get
from conformance.run.fixtures import not_applicable

pytestmark = pytest.mark.cluster("shared")


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
    return tctx.cache[key]


def require_pair(tctx: TransportContext, device: str) -> None:
    if len(tctx.intra_node(device)) < 2:
        not_applicable(f"needs 2 endpoints with a {device} device on one node")


@pytest.mark.check("TR-001")
def test_every_dtype_and_shape_bit_exact(transport_ctx: TransportCtx) -> None:
    transport_ctx.each_device(lambda device, first: _every_dtype_and_shape(transport_ctx, device))


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
    ctx.metrics.update({"cases": len(results), "wrong": sum(not r.ok for r in results),
                        "unsupported_by_device": unsupported, "core_dtypes_unsupported": missing_core})
    assert all(r.ok for r in results), f"dtype x shape payloads did not arrive bit-exact: {failures(results)}"


@pytest.mark.check("TR-002")
def test_non_contiguous_views_arrive_as_their_values(transport_ctx: TransportCtx) -> None:
    transport_ctx.each_device(lambda device, first: _non_contiguous_views(transport_ctx, device))


def _non_contiguous_views(ctx: TransportCtx, device: str) -> None:
    tctx = ctx.transport
    require_pair(tctx, device)
    cases = [payloads.view_case(d, v) for d in payloads.VIEW_DTYPES for v in payloads.VIEWS]
    results = tctx.run_cases(device, cases, payloads.DATA_FIELDS)
    ctx.metrics.update({"cases": len(results), "wrong": sum(not r.ok for r in results)})
    assert all(r.ok for r in results), ("non-contiguous views (slices, transposes, strides, expand, unfold, "
                                        f"channels-last) did not arrive as their logical values: {failures(results)}")


@pytest.mark.check("TR-003")
def test_several_tensors_and_nested_containers(transport_ctx: TransportCtx) -> None:
    transport_ctx.each_device(lambda device, first: _containers(transport_ctx, device))


def _containers(ctx: TransportCtx, device: str) -> None:
    tctx = ctx.transport
    require_pair(tctx, device)
    cases = [payloads.container_case(c) for c in payloads.CONTAINERS]
    results = tctx.run_cases(device, cases, payloads.DATA_FIELDS)
    ctx.metrics.update({"cases": [c["id"] for c in cases], "wrong": sum(not r.ok for r in results)})
    assert all(r.ok for r in results), ("returns with several tensors / nested lists, dicts, tuples and non-tensor "
                                        f"data did not arrive with the same structure and bytes: {failures(results)}")


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
    transport_ctx.each_device(lambda device, first: _large_tensor(transport_ctx, device, size))


def _large_tensor(ctx: TransportCtx, device: str, size: int) -> None:
    tctx = ctx.transport
    require_pair(tctx, device)
    results = tctx.run_cases(device, [payloads.buffer_case(size, "/large")], payloads.DATA_FIELDS,
                             timeout=max(60.0, size / 20e6))  # knob: hang guard of one transfer, scaled to its size
    ctx.metrics["bytes"] = size
    assert all(r.ok for r in results), f"a {format_size(size)} tensor did not arrive bit-exact: {failures(results)}"


@pytest.mark.check("TR-005")
def test_received_metadata(transport_ctx: TransportCtx) -> None:
    transport_ctx.each_device(lambda device, first: _received_metadata(transport_ctx, device))


def _received_metadata(ctx: TransportCtx, device: str) -> None:
    tctx = ctx.transport
    problems: list[str] = []
    require_pair(tctx, device)
    dtypes, _ = supported_dtypes(tctx, device)
    cases = ([payloads.tensor_case(d, "4-d") for d in dtypes] + [payloads.tensor_case("float32", s) for s in
                                                                  ("0-d", "empty", "empty-inner", "odd-7")]
             + [payloads.container_case("dict-nested")])
    results = tctx.run_cases(device, cases, payloads.META_FIELDS)
    ctx.metrics.update({"cases": len(results), "wrong": sum(not r.ok for r in results)})
    if any(not r.ok for r in results):
        problems.append(failures(results))
    if not is_host(device):
        ctx.metrics["current_device"] = _on_current_device(tctx, device, problems)
    assert not problems, "received tensors do not have the sent dtype, shape and device type: " + " | ".join(problems)


def _on_current_device(tctx: TransportContext, device: str, problems: list[str]) -> dict[str, Any]:
    """Receive on an actor given two devices, twice: with its second one current
    (torch.<device>.set_device(1)), then with its first (set_device(0)): every received tensor must
    be on the current device, as Ray's own receive buffers are (`torch.empty(..., device=<type>)`
    allocates on the current device: torch's contract for a tensor made without an index). The
    order matters: with its second one current the current device is also the last visible one,
    and the first is the one a process starts with, so a transport that puts received tensors on
    the first device (ray-ascend's HCCL did) or on the last one each fail one of the two rounds.
    Returns what was seen, or why it could not run."""
    from conformance.cluster.requests import demand
    from conformance.rdt.pool import alive_nodes, start_endpoints

    eps = tctx.intra_node(device)
    if tctx.setup.collective_backend:
        return {"not_run": "the transport moves within a collective group the pool's actors already belong to"}
    node = next((n for n in alive_nodes(tctx.resource) if n["NodeID"] == eps.node_of(0)), None)
    free = int(node["Resources"].get(tctx.resource, 0)) - len(eps) if node else 0
    if free < 2:   # knob: the receiver holds two devices
        return {"not_run": f"needs 2 free {tctx.resource} units beside the {len(eps)} endpoints on one node"}
    rx = start_endpoints(tctx.setup, tctx.resource, device=device, nodes=[eps.node_of(0)], units=False,
                         group=False, what="a receiver with two devices", **demand(tctx.resource, 2))
    try:
        seen: dict[str, Any] = {}
        for index, which in ((1, "its second, the last visible, current"), (0, "its first, not the last visible, current")):
            state = ray_get(rx.actors[0].use_device.remote(index), what=f"receiver use_device({index})")
            wrong = []
            for case in (payloads.tensor_case("float32", "2-d"), payloads.container_case("list-mixed")):
                _, got = tctx.transfer(eps.actors[0], rx.actors[0], case)
                wrong += [f"{case['id']} {path}: {t['device']}:{t['device_index']}" for path, t in payloads.tensors_in(got)
                          if t["device_index"] != state["current_device"]]
            if wrong:
                problems.append(f"received on another device than the receiver's current {device}:{state['current_device']} "
                                f"(an actor given two devices, {which}): {', '.join(wrong[:3])}")
            seen[f"current_{index}"] = {**state, "wrong": len(wrong)}
        return seen
    finally:
        rx.shutdown()


@pytest.mark.check("TR-006")
def test_between_nodes(transport_ctx: TransportCtx) -> None:
    transport_ctx.each_device(lambda device, first: _between_nodes(transport_ctx, device))


def _between_nodes(ctx: TransportCtx, device: str) -> None:
    tctx = ctx.transport
    eps = tctx.cross_node(device)
    if eps is None:
        not_applicable(f"the cluster has one node{'' if is_host(device) else ' with ' + tctx.resource}; needs two")
    def cross() -> Endpoints:
        again = tctx.cross_node(device)
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
        ctx.metrics.update({"nodes": [eps.node_of(0)[:8], eps.node_of(1)[:8]], "cases": len(fwd) + len(back)})
        assert all(r.ok for r in fwd + back), f"transfers between actors on two nodes failed: {failures(fwd + back)}"
    finally:
        tctx.release("cross/")


@pytest.mark.check("TR-007")
def test_concurrent_transfers(transport_ctx: TransportCtx) -> None:
    transport_ctx.each_device(lambda device, first: _concurrent_transfers(transport_ctx, device))


def _concurrent_transfers(ctx: TransportCtx, device: str) -> None:
    tctx = ctx.transport
    require_pair(tctx, device)
    eps = tctx.intra_node(device, INTRA_NODE_ENDPOINTS)   # three when the node allows: 12 routes in flight
    n = len(eps)
    # every ordered pair, twice, with distinct contents: 6 (2 endpoints: 4) .. 12 in flight
    routes = [(i, j) for i in range(n) for j in range(n) if i != j] * 2
    cases = [payloads.buffer_case((64 << 10) * (k + 1), f"/conc{k}") for k in range(len(routes))]
    refs = [tctx.produce(eps.actors[i], c) for (i, _), c in zip(routes, cases)]
    try:
        got = ray_get([eps.actors[j].receive.remote(r) for (_, j), r in zip(routes, refs)], 60.0,
                      f"{len(routes)} concurrent transfers")
        sent = ray_get([eps.actors[i].sent_digest.remote(c["id"]) for (i, _), c in zip(routes, cases)],
                       what="digests")
    finally:
        del refs
    wrong = [f"{c['id']} {i}->{j}: {'; '.join(payloads.compare(s, g))}" for (i, j), c, s, g
             in zip(routes, cases, sent, got) if payloads.compare(s, g)]
    ctx.metrics.update({"in_flight": len(routes), "endpoints": n, "wrong": len(wrong)})
    assert not wrong, (f"transfers in flight at the same time did not each arrive intact: {len(wrong)}/{len(routes)} "
                       "wrong: " + " | ".join(wrong[:3]))


@pytest.mark.check("TR-008")
def test_same_ref_received_twice(transport_ctx: TransportCtx) -> None:
    transport_ctx.each_device(lambda device, first: _same_ref_twice(transport_ctx, device))


def _same_ref_twice(ctx: TransportCtx, device: str) -> None:
    tctx = ctx.transport
    require_pair(tctx, device)
    eps = tctx.intra_node(device, INTRA_NODE_ENDPOINTS)   # a third endpoint is "another consumer"
    src, dst = eps.actors[0], eps.actors[1]
    case = payloads.container_case("list-mixed")
    ref = tctx.produce(src, case)
    try:
        seen = {"first": ray_get(dst.receive.remote(ref), what="first receive"),
                "second (same consumer)": ray_get(dst.receive.remote(ref), what="second receive")}
        both = ray_get(dst.receive_many.remote(ref, ref), what="receive twice in one call")
        seen["twice in one call [0]"], seen["twice in one call [1]"] = both
        if len(eps) > 2:
            seen["another consumer"] = ray_get(eps.actors[2].receive.remote(ref), what="other consumer")
        sent = ray_get(src.sent_digest.remote(case["id"]), what="digest")
    finally:
        del ref
    wrong = {k: payloads.compare(sent, v) for k, v in seen.items()}
    wrong = {k: v for k, v in wrong.items() if v}
    ctx.metrics.update({"receives": len(seen), "wrong": sorted(wrong)})
    assert not wrong, ("the same ref received more than once did not arrive intact every time: "
                       + "; ".join(f"{k}: {v[0]}" for k, v in wrong.items()))


def _driver_get(ref: Any, sent: Any, **options: Any) -> str:
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


def _driver_put_to_actor(tctx: TransportContext, device: str, dst: Any) -> str:
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


def _driver_get_semantics(ctx: TransportCtx, device: str) -> None:
    tctx = ctx.transport
    one_sided = tctx.setup.one_sided
    problems = []
    require_pair(tctx, device)
    eps = tctx.intra_node(device)
    case = payloads.container_case("dict-nested")
    ref = tctx.produce(eps.actors[0], case)
    try:
        sent = ray_get(eps.actors[0].sent_digest.remote(case["id"]), what="digest")
        seen = {"ray.get": _driver_get(ref, sent),
                "ray.get(_use_object_store=True)": _driver_get(ref, sent, _use_object_store=True)}
    finally:
        del ref
    expected = "returned bit-exact" if one_sided else "ValueError"
    if not seen["ray.get"].startswith(expected):
        problems.append(f"ray.get in the driver of a {'one' if one_sided else 'two'}-sided transport's "
                        f"ref: {seen['ray.get']}; expected it to have {expected}")
    if seen["ray.get(_use_object_store=True)"] != "returned bit-exact":
        problems.append(f"ray.get(_use_object_store=True): {seen['ray.get(_use_object_store=True)']}")
    if one_sided:   # the driver as the source: Ray allows ray.put(_tensor_transport=) for one-sided transports
        seen["driver ray.put -> actor"] = _driver_put_to_actor(tctx, device, eps.actors[1])
        if seen["driver ray.put -> actor"] != "bit-exact":
            problems.append(f"ray.put(_tensor_transport) in the driver, received by an actor: "
                            f"{seen['driver ray.put -> actor']}")
    ctx.metrics.update(seen)
    assert not problems, " | ".join(problems)
