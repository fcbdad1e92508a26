"""Handing lent peers back to the run's warm pool (conformance.rdt.warm) after a usage scenario.

Each lent actor's harness state is cleared (`reset`), its RDT store gets a short look to empty,
its handover reading is taken and the transport is asked, in the driver, whether the actor still
has it; the pool judges the readings. Every step ends within its own guard, so a give-back ends
within their sum (HANDOVER_BOUND_S), whatever a plugin does: an actor that does not answer a step
(killed, crashed or left busy by the check), or a transport that does not answer about it, is
stopped, never lent again, and metrics.handover says why. The give-back's time is recorded in
metrics.handover, after the scenario: it backs no time the scenario left out of its bound.
"""
from __future__ import annotations

import threading
import time
from typing import Any, Callable

from conformance.rdt.warm import HANDOVER_S, Handback, WarmActors
from conformance.timing.timeouts import CheckTimeout

DRAIN_S = 1.0   # knob: how long a give-back looks for the lent actors' RDT stores to empty (a correct free: ms)
# how long a give-back waits for a lent actor to answer its reset: one still busy with what the
# check left running is stopped rather than waited for (a birth is cheaper; a check that knows it
# leaves one busy discards it: UsageCtx.discard)
ANSWER_S = 2.0   # knob: see above
# how long the transport may take to answer actor_has_tensor_transport about all the actors of one
# give-back (Ray asks it at every submission; TR-014 judges its latency)
ASK_S = 4.0   # knob: see above
LOOK_POLL_S = 0.1   # knob: the pause between two looks at the stores
# the sum of the steps' guards: the resets, the look (its last read may start at DRAIN_S, after a
# pause), the readings, the transport's answers
HANDOVER_BOUND_S = ANSWER_S + 2 * HANDOVER_S + DRAIN_S + LOOK_POLL_S + ASK_S   # knob: a sum, not a threshold


def _ray() -> Any:
    import ray
    return ray


def hand_back(pool: WarmActors, lent: list[Any], watch: list[str], transport: str, bound_s: float,
              stopped: dict[int, str] | None = None) -> tuple[Handback, list[Any]]:
    """The pool's record of this give-back (its time in `took_s`, the release's `bound_s`: the
    check's handover_bound_s, which the guards' sum HANDOVER_BOUND_S fits, tests/unit/test_warm_pool.py)
    and the actors to stop; `stopped`: the lent actors the check already stopped, by id(actor), and
    why (UsageCtx.discard)."""
    t0 = time.monotonic()
    why: dict[int, str] = dict(stopped or {})
    asked = [a for a in lent if id(a) not in why]
    resets = answers([a.reset.remote() for a in asked], why, asked, ANSWER_S)
    answering = [a for a, r in zip(asked, resets) if r is not None]
    if answering:
        look_until_empty(answering)
    readings = dict(zip(map(id, answering), answers([a.handover.remote(watch) for a in answering],
                                                    why, answering, HANDOVER_S)))
    has = transport_has([a for a in answering if readings.get(id(a)) is not None], transport, why, ASK_S)
    for a, answer in has.items():
        reading = readings.get(a)
        if reading is not None:
            reading["has_transport"] = answer
    record, stop = pool.give_back(lent, readings, why)
    record.took_s, record.bound_s = round(time.monotonic() - t0, 3), bound_s
    return record, stop


def answers(refs: list[Any], why: dict[int, str], actors: list[Any], within_s: float) -> list[Any]:
    """Each call's answer within `within_s` in all, None where it gave none (`why` says so, by
    id(actor)): an actor the check killed, crashed or left busy."""
    ray = _ray()
    ready, _ = ray.wait(refs, num_returns=len(refs), timeout=within_s)
    out: list[Any] = []
    for a, r in zip(actors, refs):
        if r not in ready:
            why[id(a)] = "busy: it did not answer its handover"
            out.append(None)
            continue
        try:
            out.append(ray.get(r))
        except CheckTimeout:
            raise
        except Exception as exc:  # noqa: BLE001 - killed or crashed by the check
            why[id(a)] = f"gone: {type(exc).__name__}"
            out.append(None)
    return out


def look_until_empty(actors: list[Any]) -> None:
    """Up to DRAIN_S for the actors' RDT stores to empty (Ray's reference counting and the owner's
    free, after the check dropped its refs); each read within HANDOVER_S. What is still held is
    read at the handover: that actor is stopped, not lent again (no one is blamed)."""
    ray = _ray()
    t0 = time.monotonic()
    while True:
        try:
            if not any(ray.get([a.rdt_objects.remote() for a in actors], timeout=HANDOVER_S)):
                return
        except CheckTimeout:
            raise
        except Exception:  # noqa: BLE001 - an actor gone or busy: its handover reading says so
            return
        if time.monotonic() - t0 + LOOK_POLL_S >= DRAIN_S:
            return
        time.sleep(LOOK_POLL_S)


def transport_has(actors: list[Any], transport: str, why: dict[int, str], within_s: float,
                  ask: Callable[[Any], object] | None = None) -> dict[int, bool | None]:
    """The transport's own answer, in the driver, whether each actor still has it
    (actor_has_tensor_transport, what Ray asks at every submission), by id(actor): state the
    transport keeps about the actor that a borrower spoiled (credits never returned) shows here.
    Asked on a thread of its own, all within `within_s`: an answer that raised, or did not come,
    is None (TR-014 judges the method; the actor is stopped, `why` says so). `ask`: the question
    (default: the registered transport manager's method)."""
    if not actors:
        return {}
    if ask is None:
        from ray.experimental.rdt.util import get_tensor_transport_manager
        manager = get_tensor_transport_manager(transport)
        ask = manager.actor_has_tensor_transport
    got: dict[int, bool | None] = {}

    def run() -> None:
        for a in actors:
            try:
                got[id(a)] = bool(ask(a))
            except Exception as exc:  # noqa: BLE001 - TR-014's finding, not this handover's
                got[id(a)] = None
                why[id(a)] = f"actor_has_tensor_transport raised {type(exc).__name__}"

    asking = threading.Thread(target=run, name="handover-ask", daemon=True)   # a hung answer is left behind
    asking.start()
    asking.join(within_s)
    out = dict(got)
    for a in actors:
        if id(a) not in out:
            out[id(a)] = None
            why[id(a)] = f"the transport did not answer actor_has_tensor_transport within {within_s:g}s"
    return out
