"""TR-019's wave of concurrent transfers, one procedure for the plugin's transport and for the
reference that judges whose stall a stall is (conformance.areas.transport.reference_wave).

A reference must do the same work as what it judges: the same producers first, their metadata
awaited by the owner before any receive is submitted, then every receive at once, waited on
together. Session 31's reference submitted producers and receives together, so it did other work
than the plugin's wave (its receivers' event loops waited in Ray's fetch of arguments whose
producers had not finished); both now run this one function and differ only in the transport's
name and the actors they are given.
"""
from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Any, Callable

from conformance.rdt import transfer
from conformance.rdt.stalls import Pending, StallEvidence, gather, unproduced_by
from conformance.timing.clock import Clock

POLL_SLICE_S = 0.01   # knob: the smallest slice a wait on the receives polls in
PLUGIN_SEED = 1000     # the plugin's wave's payload seeds start here (the reference's: reference_wave.SEED)


@dataclass
class WaveRun:
    """What one wave did: the stall's evidence when transfers were still pending at the bound, else
    every receive's ref (all ready), their seeds and the order they finished in; how long the
    producers took, and the wave: until its last receive ended, or until it gave up."""

    stall: StallEvidence | None
    outs: list[Any] = field(default_factory=list)
    seeds: list[int] = field(default_factory=list)
    order: list[int] = field(default_factory=list)
    produced_s: float | None = None
    took_s: float | None = None


def ends(k: int, n_actors: int) -> tuple[int, int]:
    """Transfer k's source and receiver: half the actors only produce, the other half only consume,
    and every source sends to every receiver (an actor waiting for an argument blocks its task
    thread, so a ring of actors that both produce and consume can wait on each other whatever the
    transport does)."""
    half = n_actors // 2
    return k % half, half + (k // half) % (n_actors - half)


def concurrent_transfers(clock: Clock, actors: list[Any], transport: str, n: int, nbytes: int, bound_s: float,
        more: Callable[[float], float], first_seed: int) -> WaveRun:
    """n transfers of nbytes through `transport` between `actors`, all in flight at once, within
    `bound_s`. `more`: asked once, when the bound ran out with transfers still pending, after how
    long; the seconds the wave may still wait (0: none)."""
    import ray

    refs, seeds, pairs = [], [], []
    t0 = time.perf_counter()
    deadline = time.monotonic() + min(bound_s, max(clock.remaining(), 0.0))
    for k in range(n):
        s, d = ends(k, len(actors))
        refs.append(transfer.submitted(
            clock, lambda s=s, seed=first_seed + k: transfer.produce(actors[s], transport, nbytes, seed),  # type: ignore[misc]  # mypy cannot type a lambda whose defaults bind the loop's values
            f"producer {k}"))
        seeds.append(first_seed + k)
        pairs.append((s, d))
    asked: list[float] = []

    def later(deadline: float) -> float:
        """The deadline once `more` was asked (at most once)."""
        if asked:
            return deadline
        asked.append(more(time.perf_counter() - t0))
        return time.monotonic() + asked[0] if asked[0] > 0 else deadline

    # Every producer's metadata reaches the owner before any receive is submitted, so a stall
    # past this point is the receives' (not_produced is told apart first). An asyncio receiver's
    # event loop deserializes each task's argument and waits there for its receive (a receiver
    # whose loop sat in RDTStore.wait_and_pop_object with every receive returned was Ray 2.60's
    # unguarded RDT manager: conformance.rdt.manager_race).
    unproduced = set(unproduced_by(deadline, [r.hex() for r in refs]))
    if unproduced and (deadline := later(deadline)) > time.monotonic():
        unproduced = set(unproduced_by(deadline, [r.hex() for r in refs if r.hex() in unproduced]))
    if unproduced:
        took_s = round(time.perf_counter() - t0, 3)
        return WaveRun(gather(actors, transport.upper(), [Pending(refs[k].hex(), *pairs[k]) for k in range(n)
                                                           if refs[k].hex() in unproduced]), took_s=took_s)
    produced_s = time.perf_counter() - t0
    outs = [transfer.submitted(clock, lambda k=k, ref=ref: actors[pairs[k][1]].receive.remote(ref), f"transfer {k}")  # type: ignore[misc]  # as above
            for k, ref in enumerate(refs)]
    order: list[int] = []
    pending = list(outs)
    index = {o.hex(): i for i, o in enumerate(outs)}
    while pending and (time.monotonic() < deadline or (deadline := later(deadline)) > time.monotonic()):
        ready, pending = ray.wait(pending, num_returns=1, timeout=max(deadline - time.monotonic(), POLL_SLICE_S))
        order += [index[r.hex()] for r in ready]
    if pending:
        took_s = round(time.perf_counter() - t0, 3)
        stuck = [Pending(refs[index[o.hex()]].hex(), *pairs[index[o.hex()]]) for o in pending]
        return WaveRun(gather(actors, transport.upper(), stuck), produced_s=round(produced_s, 3), took_s=took_s)
    return WaveRun(None, outs, seeds, order, round(produced_s, 3), round(time.perf_counter() - t0, 3))
