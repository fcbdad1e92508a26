"""Warm actors, borrowed not born (issue 42): the RDT actors a check uses come from a pool of
live ones that already imported torch and registered the transports, and go back to it after.

A worker that imports torch costs seconds of CPU before it moves a byte; the transport-usage
checks started a fresh pair or three for every scenario on every device type, most of a
certification's transport births. Here an actor a check gives back is lent to the next check that
asks for the same kind (`WarmKey`: its class, whether it has the tensor transport, the device its
tensors live on, its node, whether it holds a unit, its Ray options).

Between two borrowers the pool proves that nothing leaked, since what one check left behind would
otherwise meet the next check as its own (`handover_leaks`, pure). The actor answers its
`handover` reading (conformance.rdt.endpoint.Endpoint.handover) after its harness state was
cleared (`reset`):

* its visible-devices variable changed since its birth: the next borrower would see other
  devices (a leak, from the first borrower on);
* the transport's own answer, in the driver, that the actor no longer has the tensor transport
  (`actor_has_tensor_transport`, what Ray asks at every submission): state the transport keeps
  about the actor that the borrower spoiled (credits never returned), which would fail the next
  borrower's transfers in the next check's name (a leak, from the first borrower on);
* RDT objects still in its store once every ref the check held is gone (after a short look): the
  actor is stopped, not lent again, and not blamed. On the reference transport TR-018's scenario
  leaves one object per device type in a store after every ref is gone, so Ray itself keeps some;
  whose it is has not been pinned down, and TR-013 and TR-017 judge the transport's free where
  the contract is exact;
* processes below it, and files it holds open, that it did not have at its previous handover:
  the actor is stopped, not lent again, and not blamed. The first borrower's are kept as the
  actor's own (a transport may start or open on its first transfer what it keeps for the process's
  life: Python's shared-memory resource tracker on the reference transport), and a later borrower
  may be the first to use the actor in another role (its first send); TR-012 and TR-013 judge what
  a transport leaves behind where the contract is exact.

A leak is the plugin's finding, named with the check that gave the actor back (its evidence:
metrics.handover, judged by its judge); the actor is stopped, never lent again. What the check
killed, crashed or left wedged is not given back: it is stopped. Actors whose birth, death or
restart a check judges (the recovery checks, device assignment at a start), and kinds only one
check uses (TR-019's asyncio wave, TR-020's receiver without the transport), are started for their
check: this pool lends only the kinds `UsageCtx` names (LENT_KINDS).

Actors that hold a unit of the accelerator are lent within a module only (the run's transport
context stops them when the module ends, so other areas' checks find every device free); when a
borrower needs units held by idle actors of another kind on its node, those are stopped first.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable, Iterable, Mapping

HANDOVER_S = 10.0   # knob: hang guard of one handover reading (an actor still busy is stopped, not lent)

# Every reason a give-back stops an actor without blame (metrics.handover's `why_stopped`), as the
# code below, conformance/areas/transport/handover.py and UsageCtx.discard write them: a closed
# vocabulary, so a leak (`leaks`, the plugin's finding) cannot be filed as a reason (held-out
# round 38, N38_01). tests/unit/test_warm_pool.py holds each writer's wording to it.
STOPPED_UNRETURNED = "stopped by the check without a give-back"   # UsageCtx.close: mid-scenario, or a scenario that did not end
STOP_REASONS = (
    STOPPED_UNRETURNED,
    r"it did not answer its handover",
    r"busy: it did not answer its handover",
    r"gone: [A-Za-z_][A-Za-z0-9_.]*",
    r"actor_has_tensor_transport raised( [A-Za-z_][A-Za-z0-9_.]*)?",
    r"the transport did not answer actor_has_tensor_transport within [0-9.]+s",
    r"[0-9]+ RDT object\(s\) still in its store",
    r"[0-9]+ process\(es\) below it started since its last handover \(e\.g\. .*\)",
    r"[0-9]+ file\(s\) held open since its last handover \(e\.g\. .*\)",
    r"discarded by the check: left busy",
)


@dataclass(frozen=True)
class WarmKey:
    """What makes two actors interchangeable for a borrower."""
    kind: str                                   # the harness's name of the actor class ("peer", "async", ...)
    device: str                                 # where its tensors live
    node: str                                   # the node it runs on
    units: bool                                 # whether it holds one unit of the accelerator
    options: tuple[tuple[str, Any], ...] = ()   # its Ray actor options (max_concurrency, ...)

    @staticmethod
    def of(kind: str, device: str, node: str, units: bool, options: Mapping[str, Any]) -> "WarmKey":
        return WarmKey(kind, device, node, units, tuple(sorted(options.items())))


@dataclass
class Warm:
    """One pooled actor: its key, what it read at birth and at its last handover."""
    actor: Any
    key: WarmKey
    birth: dict[str, Any]
    last: dict[str, Any] | None = None
    lent: int = 0                        # how many borrowers it has had


def handover_leaks(birth: Mapping[str, Any], last: Mapping[str, Any] | None, now: Mapping[str, Any]) -> list[str]:
    """What one actor's borrower left behind that is the plugin's finding (the module docstring's
    rules): pure, over its birth's and this handover's readings ({"env": {name: value|None},
    "has_transport": bool, ...}); `last`, the previous handover's, is None after the first borrower."""
    leaks: list[str] = []
    if now.get("has_transport") is False:
        leaks.append("the transport says it no longer has the tensor transport (actor_has_tensor_transport: False)")
    before_env, env = birth.get("env") or {}, now.get("env") or {}
    for name in sorted(set(before_env) | set(env)):
        if before_env.get(name) != env.get(name):
            leaks.append(f"{name} changed from {before_env.get(name)!r} to {env.get(name)!r}")
    return leaks


def handover_changes(birth: Mapping[str, Any], last: Mapping[str, Any] | None, now: Mapping[str, Any]) -> list[str]:
    """What one actor's borrower started or opened and kept, since its previous handover (none
    after its first borrower: the module docstring): a reason to stop it, never a leak. Pure."""
    if last is None:
        return []
    changes: list[str] = []
    seen = {_process_key(p) for p in [*(birth.get("processes") or []), *(last.get("processes") or [])]}
    new = [p for p in now.get("processes") or [] if _process_key(p) not in seen]
    if new:
        changes.append(f"{len(new)} process(es) below it started since its last handover (e.g. {_describe(new[0])})")
    opened = sorted(set(now.get("files") or []) - set(last.get("files") or []) - set(birth.get("files") or []))
    if opened:
        changes.append(f"{len(opened)} file(s) held open since its last handover (e.g. {opened[0]})")
    return changes


def _process_key(p: Any) -> Any:
    return p.get("pid") if isinstance(p, Mapping) else p


def _describe(p: Any) -> str:
    if isinstance(p, Mapping):
        return f"pid {p.get('pid')}: {str(p.get('command') or '')[:100]}".rstrip()
    return str(p)[:80]


@dataclass
class Handback:
    """What one give-back found: the record a check's judge reads (metrics.handover)."""
    returned: int = 0                   # actors lent again from now on
    stopped: int = 0                    # actors not given back (dead, busy, leaked, or the check failed)
    leaks: list[str] = field(default_factory=list)
    why_stopped: list[str] = field(default_factory=list)
    took_s: float | None = None         # how long the give-back took (after the scenario)
    bound_s: float | None = None        # the sum of its steps' guards

    def as_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"returned": self.returned, "stopped": self.stopped, "leaks": list(self.leaks)}
        if self.why_stopped:
            out["why_stopped"] = sorted(set(self.why_stopped))
        if self.took_s is not None:
            out.update(took_s=self.took_s, bound_s=self.bound_s)
        return out


class WarmActors:
    """The run's idle actors by key, and those out on loan (one per run, in the transport context).

    The pool starts nothing itself: `borrow` is given the function that starts the shortfall (the
    caller's wait on Ray's machinery) and the one that reads a new actor's birth; `give_back` is
    given the readings. The pool keeps only the bookkeeping and the rule, so a check's budget owns
    every wait."""

    def __init__(self) -> None:
        self._idle: list[Warm] = []
        self._lent: dict[int, Warm] = {}       # id(actor handle) -> its record
        self._owner: object = None             # the cluster the actors live on
        self.births = 0                        # actors this pool started (benchmarks read it)
        self.loans = 0                         # actors lent without a birth

    # ------------------------------------------------------------------ lending
    def borrow(self, cluster: object, key: WarmKey, n: int, start: Callable[[int], list[Any]],
               read: Callable[[list[Any]], list[dict[str, Any]]], stop: Callable[[list[Any]], None]) -> list[Any]:
        """n actors of `key`: idle ones first, the rest started by `start(k)` (which makes room for
        the units they need: `take_idle`) and read at birth by `read`. When starting or reading
        raises (the host ran out, the hard timeout), every actor taken or started is handed to
        `stop` first: none is left holding units outside the pool and the borrower."""
        if cluster is not self._owner:
            self._idle.clear()           # another cluster: its actors are gone with it
            self._lent.clear()
            self._owner = cluster
        taken = [w for w in self._idle if w.key == key][:n]
        for w in taken:
            self._idle.remove(w)
        self.loans += len(taken)
        if len(taken) < n:
            fresh: list[Any] = []
            try:
                fresh = start(n - len(taken))
                self.births += len(fresh)
                births = read(fresh)
            except BaseException:
                stop([w.actor for w in taken] + fresh)
                raise
            taken += [Warm(a, key, b) for a, b in zip(fresh, births)]
        for w in taken:
            w.lent += 1
            self._lent[id(w.actor)] = w
        return [w.actor for w in taken]

    def lent(self, actors: Iterable[Any]) -> list[Warm]:
        """The pool's records of these actors (those it lent)."""
        return [w for a in actors if (w := self._lent.get(id(a))) is not None]

    def give_back(self, actors: Iterable[Any], readings: Mapping[int, dict[str, Any] | None],
                  stopped_why: Mapping[int, str] | None = None) -> tuple[Handback, list[Any]]:
        """Take back lent actors: those whose reading (by id(actor)) shows no leak go idle; the rest
        (no reading: dead or busy; `stopped_why` names the reason; or leaked) are returned to the
        caller to stop. Returns the record and the actors to stop."""
        record, stop = Handback(), []
        for a in actors:
            w = self._lent.pop(id(a), None)
            if w is None:
                continue
            reading = readings.get(id(a))
            if reading is None:
                record.stopped += 1
                record.why_stopped.append((stopped_why or {}).get(id(a), "it did not answer its handover"))
                stop.append(a)
                continue
            if reading.get("has_transport", True) is None:   # the transport's answer raised: TR-014's
                record.stopped += 1
                record.why_stopped.append((stopped_why or {}).get(id(a), "actor_has_tensor_transport raised"))
                stop.append(a)
                continue
            held = int(reading.get("rdt_objects", 0) or 0)
            if held:   # not lent again, not judged here (the module docstring)
                record.stopped += 1
                record.why_stopped.append(f"{held} RDT object(s) still in its store")
                stop.append(a)
                continue
            leaks = handover_leaks(w.birth, w.last, reading)
            if leaks:
                record.stopped += 1
                record.leaks.extend(leaks)
                stop.append(a)
                continue
            changes = handover_changes(w.birth, w.last, reading)
            if changes:   # not lent again, not blamed (the module docstring)
                record.stopped += 1
                record.why_stopped.extend(changes)
                stop.append(a)
                continue
            w.last = reading
            self._idle.append(w)
            record.returned += 1
        return record, stop

    def forget(self, actors: Iterable[Any]) -> None:
        """Lent actors the caller stops itself (never given back)."""
        for a in actors:
            self._lent.pop(id(a), None)

    # ------------------------------------------------------------------ ending
    def take_idle(self, *, holding_units: bool | None = None, node: str | None = None) -> list[Any]:
        """Remove and return the idle actors (only those holding units, or not, when asked; only
        those on `node` when given): the caller stops them."""
        out = [w for w in self._idle if (holding_units is None or w.key.units == holding_units)
               and (node is None or w.key.node == node)]
        self._idle = [w for w in self._idle if w not in out]
        return [w.actor for w in out]

    def take_lent(self) -> list[Any]:
        """Remove and return every actor still out on loan: at a module's end none should be (a
        check that ended without closing its context left them), so the caller stops them."""
        out = [w.actor for w in self._lent.values()]
        self._lent.clear()
        return out

    def idle(self) -> int:
        return len(self._idle)

