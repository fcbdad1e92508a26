"""Transport area, failures: a receiver that dies and a producer that raises or is retried
cost neither a hang nor the transport (TR-015, TR-016).

They mirror Ray's own RDT tests (python/ray/tests/rdt/test_rdt_gloo.py: test_recv_actor_dies,
test_app_error_*, test_rdt_retry_then_succeeds, test_rdt_retries_exhausted_raises) for the
manifest's transport, one-sided or two-sided, on the shared cluster. See
conformance.areas.transport.usage for the actors, the fault-injecting twin and the bounds.
"""
from __future__ import annotations

import time
import uuid
from typing import Any

import pytest

from conformance.areas.transport.usage import UsageCtx, short
from conformance.exc_text import first_line
from conformance.handles import Actor
from conformance.rdt.payloads import same_bytes
from conformance.rdt.pool import alive
from conformance.rdt.transfer import wait_dead
from conformance.run.budget import CONTROL_CALL_S, CheckTimeout, Scenario


def _next_receiver(u: UsageCtx, clock: Scenario, src: Actor, ref: Any, seed: int, nbytes: int, step: str) -> tuple[Any, Any]:
    """After a receiver died: a transport that can abort keeps its source, which must serve the
    same object and a new one to a new receiver; a transport that cannot abort loses both
    actors (Ray kills them), and a new pair must transfer. Returns the (source, receiver) to go on with."""
    bound = float(u.param("recover_bound_s"))
    if u.x.can_abort and not u.x.collective_backend:
        if not alive(src, 10):
            raise clock.fail(f"{step}: the source died with its receiver although the transport can abort "
                             "(Ray kills actors only for transports that cannot)")
        dst = u.start(clock, 1)[0]
        sent = u.sent(clock, src, seed)
        u.expect_data(clock, lambda: dst.receive.remote(ref), sent,
                      f"{step}: the same object sent to a new receiver", bound)
        u.roundtrip(clock, src, dst, nbytes, seed + 100, f"{step}: a new object to the new receiver", bound)
        u.metrics.setdefault("after", []).append(f"{step}: the source served the same and a new object to a new receiver")
        return src, dst
    wait_dead(clock, src, f"{step}: Ray to kill the source (the transport cannot abort)", bound)
    src, dst = u.start(clock, 2)
    u.roundtrip(clock, src, dst, nbytes, seed + 100, f"{step}: a transfer between new actors", bound)
    u.metrics.setdefault("after", []).append(f"{step}: Ray killed both actors; a new pair transferred")
    return src, dst


@pytest.mark.check("TR-015")
def test_receiver_death_costs_no_hang_and_not_the_source(transport_ctx: UsageCtx) -> None:
    transport_ctx.each_device(lambda device, first: _receiver_death_costs_no_hang_and_not_the_source(transport_ctx))
    transport_ctx.decide_over_types("step_count")


def _receiver_death_costs_no_hang_and_not_the_source(transport_ctx: UsageCtx) -> None:
    u = transport_ctx
    ray = __import__("ray")
    error_s, settle_s = float(u.param("error_bound_s")), float(u.param("settle_s"))
    small, large = u.payload_bytes("payload_bytes"), u.payload_bytes("during_bytes", every_type=True)
    clock = u.clock("receiver-dies")
    src, dst = u.start(clock, 2)
    # 1. before: the suite holds the receive before the transport's receive begins; the receiver is killed
    clock.get(dst.arm.remote("hang", {"seconds": 4 * error_s}), "arming the receiver", CONTROL_CALL_S)
    ref = u.produce(src, small, seed=1)
    clock.get(src.sent_digest.remote(1), "the producer", error_s)
    out = u.submitted(clock, lambda: dst.receive.remote(ref), "the receiving task")
    time.sleep(settle_s)
    t0 = clock.elapsed()
    ray.kill(dst)
    u.expect_error(clock, lambda: out, "the caller of a receiver killed before the transfer", error_s)
    u.metrics["before_error_s"] = round(clock.elapsed() - t0, 3)
    src, dst = _next_receiver(u, clock, src, ref, 1, small, "killed before the transfer")
    del ref, out
    # 2. during: the receiving process ends while the transport's receive runs
    clock.get(dst.arm.remote("exit_during", {"seconds": float(u.param("exit_after_s"))}), "arming the receiver", CONTROL_CALL_S)
    ref = u.produce(src, large, seed=2)
    clock.get(src.sent_digest.remote(2), "the producer", error_s)
    t0 = clock.elapsed()
    u.expect_error(clock, lambda: dst.receive.remote(ref), "the caller of a receiver that died mid-transfer", error_s)
    u.metrics.update({"during_error_s": round(clock.elapsed() - t0, 3), "during_bytes": large})
    _next_receiver(u, clock, src, ref, 2, large, "died during the transfer")
    del ref
    u.metrics["elapsed_s"] = round(clock.elapsed(), 3)


@pytest.mark.check("TR-016")
def test_producer_errors_and_retries_propagate_and_transport_keeps_working(transport_ctx: UsageCtx) -> None:
    transport_ctx.each_device(lambda device, first: _producer_errors_and_retries_propagate_and_transport_keeps_working(transport_ctx))
    transport_ctx.decide_over_types("step_count")


def _producer_errors_and_retries_propagate_and_transport_keeps_working(transport_ctx: UsageCtx) -> None:
    u = transport_ctx
    error_s, nbytes = float(u.param("error_bound_s")), u.payload_bytes()
    clock = u.clock("producer-errors")
    src, dst = u.start(clock, 2)
    # 1. the producer raises: the error reaches another actor, the producer itself, and the driver
    text = f"conformance-app-error-{uuid.uuid4().hex[:8]}"
    ref = src.fail.options(tensor_transport=u.name).remote(text)
    u.expect_error(clock, lambda: dst.receive.remote(ref), "a consumer on another actor", error_s, text)
    u.expect_error(clock, lambda: src.receive.remote(ref), "a consumer on the producing actor", error_s, text)
    u.step(clock, "the driver's ray.get of the failed object", "error", error_s,
           lambda: _expect_driver_error(clock, ref, not u.x.one_sided, text, error_s), carries=text)
    del ref
    u.roundtrip(clock, src, dst, nbytes, 11, "a transfer after the producer's error", error_s)
    u.roundtrip(clock, src, src, nbytes, 12, "an intra-actor transfer after the producer's error", error_s)
    # 2. a retried producer: one object in Ray's store, bit-exact at the consumer
    u.wait_store(clock, src, 0, "the source's RDT store to empty before the retry", error_s)
    ref = src.flaky.options(tensor_transport=u.name).remote(nbytes, 13, 1)
    got = u.expect_data(clock, lambda: dst.receive.remote(ref), None, "a consumer of a producer retried once", error_s)
    attempts = clock.get(src.attempts_of.remote(13), "the producer's attempts", CONTROL_CALL_S)
    held = clock.get(src.rdt_objects.remote(), "the source's RDT store", CONTROL_CALL_S)
    sent = u.sent(clock, src, 13)
    if not same_bytes(sent, got):
        raise clock.fail(f"the retried producer's object arrived as {short(got)}, the source sent {short(sent)}")
    u.metrics.update({"retried_attempts": attempts, "objects_after_retry": held})
    if attempts != 2:
        raise clock.fail(f"the producer ran {attempts} times; expected a failed attempt and one retry")
    if held != 1:
        raise clock.fail(f"after one retried producer the source's RDT store holds {held} objects; expected exactly 1")
    del ref, got
    # 3. retries exhausted: the last attempt's error reaches the consumer
    ref = src.flaky.options(tensor_transport=u.name).remote(nbytes, 14, 10)
    u.expect_error(clock, lambda: dst.receive.remote(ref), "a consumer of a producer whose retries ran out",
                   error_s, "failed on purpose")
    del ref
    u.roundtrip(clock, src, dst, nbytes, 15, "a transfer after the retries ran out", error_s)
    u.metrics["elapsed_s"] = round(clock.elapsed(), 3)


def _expect_driver_error(clock: Scenario, ref: Any, use_object_store: bool, text: str, bound_s: float) -> str:
    """ray.get in the driver (a two-sided transport's object through the object store) must
    raise the producer's error within the bound; returns it (type and message)."""
    import ray
    from ray.exceptions import GetTimeoutError

    how = "ray.get(_use_object_store=True)" if use_object_store else "ray.get"
    try:
        ray.get(ref, timeout=bound_s, _use_object_store=use_object_store)  # type: ignore[call-overload]  # Ray's hints: pyproject.toml
    except CheckTimeout:
        raise
    except GetTimeoutError:
        raise clock.fail(f"{how} in the driver of an object whose producer raised: no error within {bound_s:g}s") from None
    except Exception as exc:  # noqa: BLE001 - the expected path
        if text not in str(exc):
            raise clock.fail(f"{how} in the driver raised {first_line(exc)!r}, not the producer's error {text!r}") from None
        return f"{type(exc).__name__}: {text}" if text not in first_line(exc) else first_line(exc)
    raise clock.fail(f"{how} in the driver returned data for an object whose producer raised")
