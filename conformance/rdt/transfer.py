"""The bounded transfer primitive: a transfer ends in data or an error within a bound, or the
check fails saying where it stopped.

Every wait on a transfer is `settle`: Ray's answer (the data, or the first line of the error Ray
raised) within the bound, or `Hang` when neither came. Two ways of reporting sit on it, one per
kind of caller:

* `ray_get` (the data, performance and lifecycle checks): an error or a hang raises
  TransferError naming what was awaited;
* `outcome` and the steps built on it (`expect_data`, `expect_error`, `roundtrip`: the usage and
  recovery scenarios, each on a `Clock`): an error is an outcome the scenario judges; a hang
  fails the scenario, with what `conformance.rdt.stalls` found about where each transfer
  stopped when the caller names the transfers behind it.

Payloads are `payloads.seeded` buffers and "arrived" means `payloads.same_bytes` (bit-exact).
"""
from __future__ import annotations

from typing import TYPE_CHECKING, Any, Callable

from conformance.exc_text import first_line
from conformance.handles import Actor
from conformance.rdt import payloads
from conformance.timing.clock import Clock
from conformance.timing.timeouts import CheckTimeout

if TYPE_CHECKING:
    from ray import ObjectRef

    from conformance.timing.waits import Refs


GET_TIMEOUT_S = 30.0          # knob: hang guard of one transfer (or consumer call) of a small payload
DIGEST_TIMEOUT_S = 30.0       # knob: hang guard of asking a producer for its digest


class TransferError(Exception):
    """A transfer raised or timed out; the message says which and with what."""


class Hang(Exception):
    """Neither data nor an error arrived within the bound."""


def settle(refs: Refs, bound_s: float, what: str) -> tuple[str, Any]:
    """("data", the values) or ("error", first line of what Ray raised) within bound_s (in short
    slices, interruptible by the check's hard timeout); Hang when neither came."""
    from conformance.timing.waits import bounded_get

    try:
        return "data", bounded_get(refs, bound_s, what)
    except CheckTimeout:
        raise
    except TimeoutError as exc:
        from ray.exceptions import RayError
        if not isinstance(exc, RayError):   # our bound ran out; Ray's own timeouts are errors it raised
            raise Hang(f"{what}: nothing within {bound_s:.0f}s") from None
        return "error", first_line(exc)
    except Exception as exc:  # noqa: BLE001 - whatever Ray raised is the finding
        return "error", first_line(exc)


def ray_get(refs: Refs, timeout: float = GET_TIMEOUT_S, what: str = "transfer") -> Any:
    """The values within the bound; an error or a hang raises TransferError naming `what`."""
    try:
        kind, value = settle(refs, timeout, what)
    except Hang:
        raise TransferError(f"{what}: no result within {timeout:.0f}s") from None
    if kind == "error":
        raise TransferError(f"{what}: {value}")
    return value


def outcome(clock: Clock, ref: ObjectRef[Any], what: str, bound_s: float,
            evidence: Callable[[], str] | None = None) -> tuple[str, Any]:
    """('data', digest) or ('error', first line) within the bound (and the clock's); a hang fails
    the scenario, with what `evidence()` says about where it stopped (asked only then)."""
    try:
        return settle(ref, max(min(bound_s, clock.remaining()), 0.01), what)
    except Hang:
        where = f" ({evidence()})" if evidence is not None else ""
        raise clock.fail(f"{what}: neither data nor an error within {bound_s:.0f}s (a hang){where}") from None


def submitted(clock: Clock, submit: Callable[[], Any], what: str) -> Any:
    """Submit a task; an exception at submission (Ray calls the transport's owner-side methods
    there) fails the scenario naming the step."""
    try:
        return submit()
    except CheckTimeout:
        raise
    except Exception as exc:  # noqa: BLE001 - the finding
        raise clock.fail(f"{what}: submitting it raised {first_line(exc)}") from None


def short(d: object) -> str:
    """A digest in a few words (for failure messages)."""
    if isinstance(d, dict) and "sha256" in d:
        return f"sha256 {d['sha256'][:12]} ({d.get('nbytes')} B {d.get('dtype')} {d.get('shape')})"
    return repr(d)[:120]


def produce(src: Actor, transport: str, nbytes: int, seed: int, **options: Any) -> Any:
    """The ref of a seeded payload `src` returns through `transport` (its digest: `sent`)."""
    return src.make.options(tensor_transport=transport, **options).remote(payloads.seeded(nbytes, seed))


def sent(clock: Clock, src: Actor, seed: int, bound_s: float = DIGEST_TIMEOUT_S) -> Any:
    """The digest of what `src` produced for `seed`."""
    return clock.get(src.sent_digest.remote(seed), "the producer's digest", bound_s)


def expect_data(clock: Clock, transport: str, submit: Callable[[], Any], expected: object, what: str, bound_s: float,
                stalled: list[tuple[Any, Any, Any]] | None = None) -> Any:
    """The task `submit()` starts must return `expected` (a digest; None: any data) within the
    bound. `stalled`: the transfers behind it as (ref, source actor, receiver actor); a hang then
    says where each stopped (conformance.rdt.stalls)."""
    evidence = None
    if stalled:
        def evidence() -> str:
            from conformance.rdt.stalls import Pending, gather
            actors = list(dict.fromkeys(a for _, src, dst in stalled for a in (src, dst)))
            return gather(actors, transport.upper(), [Pending(ref.hex(), actors.index(src), actors.index(dst))
                                                      for ref, src, dst in stalled]).describe()
    kind, got = outcome(clock, submitted(clock, submit, what), what, bound_s, evidence)
    if kind != "data":
        raise clock.fail(f"{what}: failed with {got}")
    if expected is not None and not payloads.same_bytes(expected, got):
        raise clock.fail(f"{what}: received {short(got)} but the source sent {short(expected)} (not bit-exact)")
    return got


def expect_error(clock: Clock, submit: Callable[[], Any], what: str, bound_s: float, text: str | None = None) -> str:
    """The task `submit()` starts must fail (with `text` in its error) within the bound."""
    kind, got = outcome(clock, submitted(clock, submit, what), what, bound_s)
    if kind == "data":
        raise clock.fail(f"{what}: returned data instead of an error")
    if text and text not in got:
        raise clock.fail(f"{what}: failed with {got!r}, which does not carry the error {text!r}")
    return str(got)


def roundtrip(clock: Clock, transport: str, src: Actor, dst: Actor, nbytes: int, seed: int, what: str,
              bound_s: float) -> None:
    """A transfer that must work: src -> dst bit-exact within the bound."""
    ref = submitted(clock, lambda: produce(src, transport, nbytes, seed), f"{what}: the producer")
    try:
        got = expect_data(clock, transport, lambda: dst.receive.remote(ref), None, what, bound_s)
        expected = sent(clock, src, seed)
        if not payloads.same_bytes(expected, got):
            raise clock.fail(f"{what}: received {short(got)} but the source sent {short(expected)} (not bit-exact)")
    finally:
        del ref   # a ref kept alive by a traceback would pin the object on the source


def wait_dead(clock: Clock, actor: Actor, what: str, bound_s: float) -> None:
    """Wait until the actor stops answering (dead, or not answering within a second)."""
    from conformance.rdt.pool import alive
    clock.wait_for(lambda: not alive(actor, 1.0), what, bound_s, poll_s=0.2)
