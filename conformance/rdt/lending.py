"""Warm actors, borrowed not born: a check borrows the actors it moves tensors between and gives
them back, and the next check with the same needs gets the same processes.

Every actor a check starts is a worker process that imports torch and warms its device (seconds
of CPU on a small host, most of what a certification spends); most checks need two or three
actors that any earlier check's would serve as well. A `Lender` (one per run, on the run's
TransportContext) keeps the actors checks gave back, by what they are (`LotKey`: class, tensor
transport on or off, device, node, whether they hold accelerator units, Ray's actor options):

* `borrow` hands out an idle lot of that key (at least n actors; exactly n when they form a
  collective group, which an actor joins once per backend), after a ping;
* `add` records a lot a check started itself (then it is lent to that check);
* `give_back` proves, before a lot is lent again, that the check that used it left nothing behind:
  every actor answers at once (a dead, restarting or busy one does not), the Ray RDT store of each
  is empty within `RETURN_SETTLE_S` (its frees are asynchronous), no receive fault is still armed,
  the visible-devices variables are the ones the process was born with, and the transport still
  says each actor has it (the plugin's `actor_has_tensor_transport`, what Ray asks before every
  submission: per-actor state a check leaked in the plugin, such as flow-control credits, shows
  there). The check's own
  state on the actors (digests, kept tensors, its puts) is cleared first. A lot that fails is
  stopped, and what it left is returned so the check records it in its evidence: a leak is the
  plugin's finding, named with the check that caused it. A lot that passes is idle again.
* `evict(node)` stops the idle lots holding units on a node before new actors that hold units start
  there, so borrowed-but-idle devices never starve a start.

Checks that must see a fresh process (a death, a restart, a first registration, the devices Ray
assigns at start) start one and say so (`fresh=True` where they call `UsageCtx.start`).
"""
from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Any, Hashable

from conformance.rdt.pool import Endpoints, destroy_group
from conformance.timing.timeouts import CheckTimeout
from conformance.timing.waits import BoundRanOut, bounded_get, call_on_thread

PING_S = 5.0            # knob: a borrowed or returned actor answers an empty call within this
RETURN_SETTLE_S = 5.0   # knob: a returned actor's RDT store empties within this (frees are asynchronous)
SETTLE_POLL_S = 0.1     # knob: how often the store is read meanwhile


@dataclass(frozen=True)
class LotKey:
    """What makes two lots interchangeable."""

    cls: str                 # the actor class's qualified name
    tensor_transport: bool
    device: str
    node: str
    units: bool              # each actor holds one accelerator unit
    options: tuple[tuple[str, Hashable], ...] = ()   # Ray's actor options, sorted
    grouped: bool = False    # its actors form one collective group (lent whole, never split)


@dataclass
class Lot:
    key: LotKey
    endpoints: Endpoints
    cluster: Any                        # the cluster handle it lives on
    born_env: list[dict[str, str]] = field(default_factory=list)   # visible-devices variables at birth
    transport: str | None = None        # the tensor transport its actors move tensors with
    lent: int = 0                       # how many checks borrowed it so far

    @property
    def actors(self) -> list[Any]:
        return self.endpoints.actors


def _visible_env() -> dict[str, str]:
    import os
    return {k: v for k, v in os.environ.items() if k.endswith("VISIBLE_DEVICES")}


def _born(actor_self: Any) -> dict[str, str]:
    """Run inside the actor (__ray_call__): its visible-devices variables."""
    return _visible_env()


def _cleared(actor_self: Any) -> dict[str, Any]:
    """Run inside the actor (__ray_call__): clear what a check kept on it (digests, cached
    buffers, kept tensors, retry counts, its own puts), disarm receive faults, and say what is
    left: the RDT store's objects, the faults that were armed, the visible-devices variables."""
    from conformance.rdt import faults

    for name in ("sent", "buffers", "kept", "attempts", "put_refs"):
        clear = getattr(getattr(actor_self, name, None), "clear", None)
        if clear is not None:
            clear()
    return {"armed": faults.disarm(), "env": _visible_env(), "rdt_objects": _rdt_objects()}


def _store(actor_self: Any) -> int:
    """Run inside the actor (__ray_call__): objects in its RDT store."""
    return _rdt_objects()


def _rdt_objects() -> int:
    import ray

    store = ray._private.worker.global_worker.rdt_manager._rdt_store
    return 0 if store is None else int(store.get_num_objects())


def call_each(actors: list[Any], fn: Any, bound_s: float, what: str) -> list[Any]:
    """fn run inside each actor (Ray's __ray_call__, queued like any call: an actor still busy
    with a check's long call does not answer, and is not lent again), within bound_s."""
    refs = [a.__ray_call__.remote(fn) for a in actors]
    return list(bounded_get(refs, bound_s, what))


def born_env(actors: list[Any]) -> list[dict[str, str]]:
    return call_each(actors, _born, PING_S, "the new actors' environment")


def _without_transport(lot: Lot, transport: str) -> list[str]:
    """The actors of `lot` its transport says no longer have it (asked as Ray asks before a
    submission, each answer within PING_S)."""
    from functools import partial

    from ray.experimental.rdt.util import get_tensor_transport_manager

    mgr = get_tensor_transport_manager(transport)
    left = []
    for i, actor in enumerate(lot.actors):
        try:
            answer = call_on_thread(partial(mgr.actor_has_tensor_transport, actor), PING_S,
                                    f"{transport}'s actor_has_tensor_transport")
        except CheckTimeout:
            raise
        except Exception as exc:  # noqa: BLE001 - raised or did not answer: not lent again
            left.append(f"{lot.transport}'s actor_has_tensor_transport for actor {i} failed after the check: "
                        f"{type(exc).__name__}")
            continue
        if answer is not True:
            left.append(f"{lot.transport}'s actor_has_tensor_transport says actor {i} no longer has it "
                        f"(answered {answer!r} after the check)")
    return left


class Lender:
    """The run's idle and lent lots (see the module's docstring)."""

    def __init__(self) -> None:
        self.idle: list[Lot] = []
        self.lent: list[Lot] = []
        self.started = 0
        self.borrowed = 0

    def borrow(self, key: LotKey, n: int, cluster: Any) -> Lot | None:
        """An idle lot of `key` on `cluster` with enough actors (exactly n when grouped) that
        answers a ping now; None when there is none (the caller starts one and `add`s it). Lots
        of a cluster since replaced are forgotten (their actors ended with it)."""
        self.idle = [lot for lot in self.idle if lot.cluster is cluster]
        for lot in list(self.idle):
            if lot.key != key or lot.cluster is not cluster:
                continue
            if len(lot.actors) < n or (key.grouped and len(lot.actors) != n):
                continue
            self.idle.remove(lot)
            if not self._answers(lot):
                self._stop(lot)
                continue
            lot.lent += 1
            self.lent.append(lot)
            self.borrowed += len(lot.actors)
            return lot
        return None

    def add(self, key: LotKey, endpoints: Endpoints, cluster: Any, transport: str | None = None) -> Lot:
        """A lot a check started: lent to it now, kept for the next when it is given back;
        `transport`: the tensor transport its actors use (asked about them when they come back)."""
        lot = Lot(key, endpoints, cluster, lent=1, transport=transport)
        self.lent.append(lot)
        self.started += len(lot.actors)
        try:
            lot.born_env = born_env(lot.actors)
        except CheckTimeout:
            raise
        except Exception:  # noqa: BLE001 - not answering: never lent again (give_back stops it)
            lot.born_env = []
        return lot

    def give_back(self, lot: Lot) -> list[str]:
        """The lot back from its check: idle again when it proves clean (see the module's
        docstring), else stopped. Returns what it left (empty when clean)."""
        if lot in self.lent:
            self.lent.remove(lot)
        left = self._leftovers(lot)
        if left:
            self._stop(lot)
        else:
            self.idle.append(lot)
        return left

    def _leftovers(self, lot: Lot) -> list[str]:
        if not lot.born_env or len(lot.born_env) != len(lot.actors):
            return ["not reusable: its actors never answered after their start"]
        try:
            states = call_each(lot.actors, _cleared, PING_S, "the returned actors")
            deadline = time.monotonic() + RETURN_SETTLE_S
            while any(s["rdt_objects"] for s in states) and time.monotonic() < deadline:
                time.sleep(SETTLE_POLL_S)
                counts = call_each(lot.actors, _store, PING_S, "the returned actors' RDT stores")
                for s, c in zip(states, counts):
                    s["rdt_objects"] = c
        except CheckTimeout:
            raise
        except BoundRanOut:
            return ["not reusable: an actor did not answer (stuck or busy)"]
        except Exception as exc:  # noqa: BLE001 - dead or restarting: never lent again
            return [f"not reusable: an actor is gone ({type(exc).__name__})"]
        left = []
        for i, (state, env) in enumerate(zip(states, lot.born_env)):
            if state["rdt_objects"]:
                left.append(f"actor {i} still holds {state['rdt_objects']} RDT object(s) {RETURN_SETTLE_S:g}s after "
                            "the check dropped every ref")
            if state["env"] != env:
                left.append(f"actor {i}'s visible-devices variables changed: {env} -> {state['env']}")
        if lot.transport and not left:
            left.extend(_without_transport(lot, lot.transport))
        return left

    def _answers(self, lot: Lot) -> bool:
        try:
            call_each(lot.actors, _store, PING_S, "the borrowed actors")
            return True
        except CheckTimeout:
            raise
        except Exception:  # noqa: BLE001 - dead, restarting or stuck: start a fresh lot
            return False

    def evict(self, node: str) -> int:
        """Stop the idle lots whose actors hold units on `node`; how many actors were stopped."""
        stopped = 0
        for lot in [lot for lot in self.idle if lot.key.units and lot.key.node == node]:
            self.idle.remove(lot)
            stopped += len(lot.actors)
            self._stop(lot)
        return stopped

    def release(self, units_only: bool = False) -> None:
        """Stop the idle lots (only those holding units, with `units_only`)."""
        for lot in [lot for lot in self.idle if lot.key.units or not units_only]:
            self.idle.remove(lot)
            self._stop(lot)

    def close(self) -> None:
        for lot in self.idle + self.lent:
            self._stop(lot)
        self.idle.clear()
        self.lent.clear()

    @staticmethod
    def _stop(lot: Lot) -> None:
        import ray

        if not ray.is_initialized():
            return
        destroy_group(lot.endpoints.group)
        lot.endpoints.group = None
        lot.endpoints.shutdown()
