"""Collective area, RDT over the backend: the manifest's CollectiveTensorTransport subclass carries
`tensor_transport=<backend>` objects between two actors in a group of the backend (CC-011), and a
transfer between actors in no such group fails within a bound instead of hanging (CC-012).

Ray 2.60's recipe (ray/experimental/rdt/collective_tensor_transport.py, util.register_tensor_transport;
Ray's test tests/rdt/test_rdt_gloo.py does the same for GLOO): register the backend in every
process, register the transport in the driver under the backend's name before creating the
actors, create the actors with enable_tensor_transport, make a group over them with
ray.experimental.collective.create_collective_group. Both checks are not applicable when the
manifest names no `collective.rdt_transport`. Both run on each device type the block says the
transport moves (`collective.rdt_devices`, conformance.rdt.each_device), the pair's tensors on
that type; a type the cluster cannot give the pair units of is not applicable on it, with the
reason.
"""
from __future__ import annotations

import time
from typing import Any

import pytest

from conformance.collective.context import CollectiveCtx, CollectiveError, Hang, bounded, bounded_driver_call
from conformance.collective.members import rdt_expected
from conformance.exc_text import first_line
from conformance.rdt.each_device import on_each_device
from conformance.run.fixtures import not_applicable

NO_RDT = "the manifest declares no RDT transport over the backend (collective.rdt_transport)"


def rdt_registered(ctx: CollectiveCtx) -> None:
    """The transport registered in the driver (not applicable without one; its error fails the check)."""
    config = ctx.config
    if not config.rdt_transport:
        not_applicable(NO_RDT)
    try:
        ctx.backend.register_rdt()
    except Exception as exc:  # noqa: BLE001 - the registration's error is the finding
        pytest.fail(f"register_tensor_transport({config.backend!r}, {list(config.rdt_devices)}, "
                    f"{config.rdt_transport}) in the driver: {first_line(exc)}", pytrace=False)


def each_rdt_device(ctx: CollectiveCtx, run_one: Any) -> None:
    """`run_one(device, pair)` on each type the transport moves, with the pair for that type:
    two members on different nodes (where there are two), created after the transport's
    registration with enable_tensor_transport, as Ray requires; in no group."""
    rdt_registered(ctx)
    on_each_device(ctx, ctx.config.rdt_devices, lambda device, first: run_one(device, ctx.backend.rdt_pair(device)))


def objects(dtypes: tuple[str, ...]) -> dict[str, list[dict[str, Any]]]:
    """The RDT objects a check moves: one tensor, and one object of a tensor per claimed dtype."""
    return {"one tensor": [{"dtype": "float32", "shape": [4, 3], "seed": 1}],
            "a tensor per dtype": [{"dtype": d, "shape": [2, 5], "seed": 3 + i} for i, d in enumerate(dtypes)]}


def compare(what: str, specs: list[dict[str, Any]], got: list[dict[str, Any]], device: str) -> list[str]:
    """What arrived wrong: dtype, shape, device type, values, and for a device tensor whether it
    is on the receiver's current device (the one Ray made visible to it)."""
    if len(got) != len(specs):
        return [f"{what}: {len(got)} tensor(s) arrived, {len(specs)} sent"]
    out = []
    for i, (spec, g) in enumerate(zip(specs, got)):
        want = {**rdt_expected(spec, device), "device_index": g.get("current_index")}
        wrong = [k for k in ("dtype", "shape", "device", "values", "device_index") if g.get(k) != want[k]]
        if wrong:
            out.append(f"{what}, tensor {i} ({spec['dtype']}): arrived wrong ({', '.join(wrong)}): "
                       f"{ {k: g.get(k) for k in wrong} }, sent { {k: want[k] for k in wrong} }")
    return out


def arrived(specs: list[dict[str, Any]], got: list[dict[str, Any]], device: str) -> dict[str, Any]:
    """One object's record: tensors sent, arrived, and how many arrived wrong (compare's count)."""
    return {"tensors": len(specs), "arrived": len(got), "wrong": len(compare("", specs, got, device))}


@pytest.mark.check("CC-011")
def test_rdt_objects_move_over_the_backend_two_sided(collective_ctx: CollectiveCtx) -> None:
    problems: list[str] = []
    transfers: list[int] = []

    def one(device: str, pair: list[Any]) -> None:
        problems.extend(_two_sided(collective_ctx, device, pair))
        transfers.append(len(collective_ctx.metrics.get("objects", {})))
    each_rdt_device(collective_ctx, one)
    collective_ctx.metrics["transfers"] = sum(transfers)
    collective_ctx.decide(detail=f" ({'; '.join(problems[:6])})" if problems else "")


def _two_sided(collective_ctx: CollectiveCtx, device: str, pair: list[Any]) -> list[str]:
    """The transfers on `device`: their record lands in the check's metrics (of that device type);
    what arrived wrong, for the reason."""
    import ray
    from ray.experimental.rdt.util import get_tensor_transport_manager

    cc, config, metrics = collective_ctx.backend, collective_ctx.config, collective_ctx.metrics
    bound = float(collective_ctx.param("op_bound_s"))
    name = config.backend
    src, dst = pair
    problems: list[str] = []
    record: dict[str, Any] = {}
    try:
        handle = cc.create(pair, cc.group_name("rdt"), "experimental")
        for what, specs in objects(config.dtypes).items():
            ref = src.rdt_make.options(tensor_transport=name).remote(specs, device)
            got = bounded(dst.rdt_take.remote(ref), bound, f"an RDT transfer of {what}")
            problems += compare(what, specs, got, device)
            record[what] = arrived(specs, got, device)
        transport = type(get_tensor_transport_manager(name))
        metrics["one_sided"] = bool(transport.is_one_sided())
        ref = src.rdt_make.options(tensor_transport=name).remote(objects(())["one tensor"], device)
        try:
            bounded(ref, bound, "ray.get in the driver")
            metrics["driver_get"] = "returned"
        except Hang as exc:
            metrics["driver_get"] = f"hung: {exc}"[:300]
        except CollectiveError:
            metrics["driver_get"] = "refused"   # the refusal Ray documents
        local = bounded_driver_call(lambda: ray.get(ref, _use_object_store=True), bound,  # type: ignore[call-overload]  # Ray's hints: pyproject.toml
                                    "ray.get(ref, _use_object_store=True) in the driver")
        via_store = bounded(dst.rdt_take.remote(local), bound, "the object fetched through the object store")
        problems += compare("through the object store", objects(())["one tensor"], via_store, device)
        record["through the object store"] = arrived(objects(())["one tensor"], via_store, device)
        cc.destroy_handle(handle)
    except CollectiveError as exc:
        problems.append(str(exc))
        metrics["error"] = str(exc)[:300]
        cc.stop(pair)   # maybe stuck in a transfer: the next check starts a fresh pair
    metrics["objects"] = record
    return [f"on {device}: {p}" for p in problems]


@pytest.mark.check("CC-012")
def test_an_rdt_transfer_without_a_group_fails_within_a_bound(collective_ctx: CollectiveCtx) -> None:
    collective_ctx.metrics["error_bound_s"] = float(collective_ctx.param("error_bound_s"))
    each_rdt_device(collective_ctx, lambda device, pair: _without_a_group(collective_ctx, device, pair))
    collective_ctx.decide()


def _without_a_group(collective_ctx: CollectiveCtx, device: str, pair: list[Any]) -> None:
    """The transfer on `device`: how it ended (error, hang, delivered) lands in the check's metrics."""
    cc, metrics = collective_ctx.backend, collective_ctx.metrics
    bound = float(collective_ctx.param("error_bound_s"))
    name = collective_ctx.config.backend
    src, dst = pair
    spec = objects(())["one tensor"]
    t0 = time.monotonic()
    try:
        try:
            ref = src.rdt_make.options(tensor_transport=name).remote(spec, device)
            got = bounded(dst.rdt_take.remote(ref), bound, "a transfer between actors in no group")
        except CollectiveError as exc:
            if "(a hang)" in str(exc):
                metrics.update(outcome="hang", error_s=round(time.monotonic() - t0, 2))
                return
            metrics.update(outcome="error", error_s=round(time.monotonic() - t0, 2), error=str(exc)[:300])
            return
        except ValueError as exc:   # refused when submitted: the transport reported no group for the actor
            metrics.update(outcome="error", error_s=round(time.monotonic() - t0, 2), error=first_line(exc))
            return
        metrics.update(outcome="delivered", tensors=len(got), error_s=round(time.monotonic() - t0, 2))
    finally:
        cc.stop(pair)   # the receiver may still wait for the send (Ray gives up after 60 s)
