"""Whose stall is it: transfers that did not finish, set against what the transport was asked to do.

When concurrent transfers do not finish in time (TR-019), the failure should say where they
stopped: in the vendor's transport, or before Ray handed them to it. The tracing wrapper
(conformance.rdt.tracing) records, per process, every transport call that returned and
every call still running. For each unfinished transfer this module reads the source's and the
receiver's records (through Ray's `_ray_system_error` concurrency group, which a task blocked
in the transport does not hold) and classifies it:

* `not_produced`   – the source's extract_tensor_transport_metadata never returned: the
                     transport's source side (or the producing task) holds it;
* `in_transport`   – the receiver's transport receive started and has not returned: the
                     transport holds it;
* `received`       – the receive returned (or raised) and the task still did not finish;
* `never_handed`   – the source produced it and Ray never called the receiver's transport for
                     it: the transfer never reached the vendor's code;
* `sent_to_silent` – the owner sent the receive to a receiver that does not answer: a receive
                     (in the transport, or Ray deserializing the argument that calls it) holds
                     the receiver, so the stall is the receiver's as surely as `in_transport`.

Each receiver that answers also says where its task threads stand and how many of Ray's RDT stores
its process holds: a task waiting in `RDTStore._wait_object` for an object its receive returned,
in a process with two stores, is Ray 2.60's unguarded RDT manager (conformance.rdt.manager_race),
which the suite's actors avoid by building the manager in their constructors.

The classes go into the failure's reason, so a reviewer (and the vendor) sees where the transfers
stopped. An asyncio receiver whose event loop is stuck deserializing a task's argument does not
answer even on that group (Ray 2.60 hands it no task meanwhile): it is named as silent, which is
itself evidence. The owner (this driver) is asked too, without any actor: Ray's RDT
manager in this process knows, per object, whether it still waits for the source's metadata
(`owner_waiting`: the producer did not finish) or has sent the receive to the receiver
(`owner_sent`). Other waits on actors that ran out (a workload round) ask `where_they_stand`:
the threads of each actor that hold a task or its argument's fetch, innermost frames first.
Pure except `transport_view`, `busy_threads_at`, `receiver_state` and `rdt_stores_here` (run inside
an actor), `owner_view` (reads Ray's private RDT state; unknown on another Ray), `gather` and
`where_they_stand` (ask the actors).
"""
from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Any, Callable

VIEW_TIMEOUT_S = 5.0   # knob: hang guard of the actors' answers about their transport calls
PRODUCED = "extract_tensor_transport_metadata"
RECEIVE = "recv_multiple_tensors"
RECEIVER_CHARS = 300   # knob: one receiver's thread positions in a stall's reason


@dataclass(frozen=True)
class Pending:
    """One unfinished transfer: its object id and the indexes of its source and receiver actors."""

    obj_id: str
    src: int
    dst: int


@dataclass(frozen=True)
class StallEvidence:
    """The unfinished transfers by class (see the module doc), and the actors that did not answer."""

    pending: int
    never_handed: int = 0
    in_transport: int = 0
    received: int = 0
    not_produced: int = 0
    silent: tuple[int, ...] = field(default_factory=tuple)
    owner_waiting: int = 0     # the owner still waits for the source's metadata
    owner_sent: int = 0        # the owner has sent the receive to the receiver
    sent_to_silent: int = 0    # sent by the owner to a receiver that did not answer
    # per receiver that answered (its index): where its task threads stand and how many of Ray's
    # RDT stores its process holds (more than one: Ray's manager race, conformance.rdt.manager_race)
    receivers: tuple[tuple[int, str, int], ...] = ()
    # the same of each source that answered and holds a transfer it never produced: where the
    # producing task (or the transport's extract) stands
    sources: tuple[tuple[int, str, int], ...] = ()

    def describe(self) -> str:
        """One line; whatever the receivers hold is said first, under "held at the receivers:"
        (whether or not they answered, the stall is theirs)."""
        held = [f"{n} {what}" for n, what in (
            (self.in_transport, "still inside the transport's receive"),
            (self.sent_to_silent, "sent to a receiver that did not answer (a receive holds it)")) if n]
        parts = [f"held at the receivers: {', '.join(held)}"] if held else []
        parts += [f"{n} {what}" for n, what in (
            (self.not_produced, "never produced (the source's extract_tensor_transport_metadata did not return)"),
            (self.received, "received by the transport, yet their tasks did not finish"),
            (self.never_handed, "produced but never handed to the receiver's transport by Ray")) if n]
        if self.silent:
            parts.append(f"actor(s) {list(self.silent)} did not say which transport calls they made "
                         f"within {VIEW_TIMEOUT_S:g}s")
        if self.owner_waiting or self.owner_sent:
            parts.append(f"the owner still waits for the source's metadata of {self.owner_waiting} and has sent "
                         f"{self.owner_sent} to their receivers")
        split = [i for i, _, stores in self.receivers if stores > 1]
        if split:
            parts.append(f"receiver(s) {split} hold two or more of Ray's RDT stores in one process (Ray's "
                         f"unguarded RDT manager: a receive added to one store, the task waits in another)")
        for who, states in (("receivers", self.receivers), ("sources", self.sources)):
            if states:
                parts.append(f"where the {who} stand: " + "; ".join(
                    f"actor {i}: {threads[:RECEIVER_CHARS]}" for i, threads, _ in states))
        return "; ".join(parts) or "no evidence"

    def as_dict(self) -> dict[str, Any]:
        return {"pending": self.pending, "never_handed": self.never_handed, "in_transport": self.in_transport,
                "received": self.received, "not_produced": self.not_produced, "silent_actors": list(self.silent),
                "owner_waiting": self.owner_waiting, "owner_sent": self.owner_sent,
                "sent_to_silent": self.sent_to_silent,
                "receivers": [{"actor": i, "threads": t, "rdt_stores": n} for i, t, n in self.receivers],
                "sources": [{"actor": i, "threads": t, "rdt_stores": n} for i, t, n in self.sources]}


def classify(pending: list[Pending], views: dict[int, dict[str, Any] | None],
             owner: dict[str, str] | None = None) -> StallEvidence:
    """Classify each unfinished transfer from the actors' views (None: the actor did not answer)
    and the owner's ("waiting" / "sent" per object id; others and missing ones are not counted)."""
    owner = owner or {}
    counts = {"never_handed": 0, "in_transport": 0, "received": 0, "not_produced": 0, "sent_to_silent": 0,
              "owner_waiting": sum(owner.get(p.obj_id) == "waiting" for p in pending),
              "owner_sent": sum(owner.get(p.obj_id) == "sent" for p in pending)}
    for p in pending:
        src, dst = views.get(p.src), views.get(p.dst)
        if dst is not None and any(c["m"] == RECEIVE and c["obj"] == p.obj_id for c in dst.get("in_flight", [])):
            counts["in_transport"] += 1
        elif dst is not None and RECEIVE in dst.get("done", {}).get(p.obj_id, []):
            counts["received"] += 1
        elif src is not None and PRODUCED not in src.get("done", {}).get(p.obj_id, []):
            counts["not_produced"] += 1
        elif src is not None and dst is not None:
            counts["never_handed"] += 1
        elif dst is None and owner.get(p.obj_id) == "sent":
            counts["sent_to_silent"] += 1
    silent = tuple(sorted(i for i, v in views.items() if v is None))
    return StallEvidence(pending=len(pending), silent=silent, never_handed=counts["never_handed"],
                         in_transport=counts["in_transport"], received=counts["received"],
                         not_produced=counts["not_produced"], sent_to_silent=counts["sent_to_silent"],
                         owner_waiting=counts["owner_waiting"], owner_sent=counts["owner_sent"])


def transport_view(actor_self: object, transport: str, obj_ids: list[str]) -> dict[str, Any]:
    """Runs in an actor (via __ray_call__): which transport calls returned, and which still run,
    for these objects."""
    from conformance.rdt import tracing

    done: dict[str, list[str]] = {}
    for rec in tracing.calls(transport, obj_ids):
        done.setdefault(rec["obj"], []).append(rec["m"])
    return {"done": done, "in_flight": tracing.in_flight(transport, obj_ids)}


def owner_view(obj_ids: list[str]) -> dict[str, str]:
    """Per object id, what this process's RDT manager (the owner's) knows: "waiting" (the source's
    metadata has not arrived: its producer did not finish), "sent" (a receive went to a receiver),
    "unknown" (not managed here). {} when Ray's private RDT state is not where Ray 2.60 keeps it."""
    try:
        import ray

        mgr = ray._private.worker.global_worker.rdt_manager
        with mgr._lock:
            out = {}
            for obj in obj_ids:
                meta = mgr._managed_rdt_metadata.get(obj)
                if meta is None:
                    out[obj] = "unknown"
                elif meta.tensor_transport_meta is None:
                    out[obj] = "waiting"
                else:
                    out[obj] = "sent" if meta.sent_dest_actors else "unknown"
            return out
    except Exception:  # noqa: BLE001 - another Ray keeps it elsewhere: no owner evidence
        return {}


# Where a thread of an actor stands in a task: Ray runs an actor's tasks on threads it starts
# (the task's frames under `actor_method_executor`) and deserializes their arguments, an RDT
# object's receive included, in serialization.py and experimental/rdt before that.
_TASK_MARKS = ("actor_method_executor", "serialization.py", "/rdt/")
_IDLE_FILES = ("threading.py", "selectors.py", "queue.py")


def busy_threads_at(actor_self: object, frames: int = 4) -> str:
    """Runs in an actor (via __ray_call__, on a thread of its own): where each thread that holds a
    task or its argument's fetch stands, innermost frames first, the waits of threading itself left
    out ("idle" when none does)."""
    import sys
    import threading

    said = []
    for ident, frame in sys._current_frames().items():
        if ident == threading.get_ident():
            continue
        stack: list[str] = []
        f: Any = frame
        while f is not None:
            stack.append(f"{f.f_code.co_filename}|{f.f_lineno}|{f.f_code.co_name}")
            f = f.f_back
        if not any(mark in entry for entry in stack for mark in _TASK_MARKS):
            continue
        shown = [e for e in stack if not e.split("|")[0].endswith(_IDLE_FILES)][:frames]
        said.append(" < ".join(f"{path.rsplit('/', 1)[-1]}:{line} {name}"
                               for path, line, name in (e.split("|") for e in shown)))
    return " | ".join(said) or "idle"


def rdt_stores_here() -> int:
    """How many of Ray's RDT stores this process holds (one per RDT manager Ray built in it); 0
    without Ray's RDT."""
    import gc

    try:
        from ray.experimental.rdt.rdt_store import RDTStore
    except ImportError:   # another Ray: no such store
        return 0
    return sum(type(o) is RDTStore for o in gc.get_objects())   # type(): isinstance reads __class__, which some of torch's deprecated objects warn on


def receiver_state(actor_self: object) -> tuple[str, int]:
    """Runs in an actor (via __ray_call__): where its task threads stand (busy_threads_at) and how
    many RDT stores its process holds (rdt_stores_here)."""
    return busy_threads_at(actor_self), rdt_stores_here()


def ask_each(actors: dict[Any, Any], fn: Callable[..., Any], *args: Any) -> dict[Any, Any]:
    """`fn(actor_self, *args)` in each actor, asked on Ray's `_ray_system_error` concurrency group
    (a task blocked on the actor's own threads does not hold it), all at once and waited for once
    (VIEW_TIMEOUT_S): {key: answer} for the actors that answered; one without that group, gone,
    or silent is left out."""
    import ray

    from conformance.timing.timeouts import CheckTimeout

    asked: dict[Any, Any] = {}
    for key, actor in actors.items():
        try:
            asked[key] = actor.__ray_call__.options(concurrency_group="_ray_system_error").remote(fn, *args)
        except CheckTimeout:
            raise
        except Exception:  # noqa: BLE001 - an actor without that group, or gone: it does not answer
            pass
    ready, _ = ray.wait(list(asked.values()), num_returns=len(asked), timeout=VIEW_TIMEOUT_S) if asked else ([], [])
    done = {r.hex() for r in ready}
    answers: dict[Any, Any] = {}
    for key, ref in asked.items():
        if ref.hex() in done:
            try:
                answers[key] = ray.get(ref, timeout=VIEW_TIMEOUT_S)
            except CheckTimeout:
                raise
            except Exception:  # noqa: BLE001 - it died meanwhile: it does not answer
                pass
    return answers


def where_they_stand(actors: list[Any], labels: list[str]) -> str:
    """For a failure that a wait on these actors ran out: where each one's busy threads are now,
    asked on Ray's `_ray_system_error` concurrency group (one bounded wait, VIEW_TIMEOUT_S), so
    the reason says which actor holds the work and in what (the transport's receive, Ray's
    fetch of the argument, the vendor's allocator) instead of only that it did not end."""
    answers = ask_each(dict(zip(labels, actors)), busy_threads_at)
    said = [f"{label}: {answers.get(label) or 'did not answer'}" for label in labels]
    return "where they stand: " + "; ".join(said)


def unproduced_by(deadline: float, obj_ids: list[str]) -> list[str]:
    """The objects whose tensor-transport metadata the owner (this driver) still lacks at the
    monotonic `deadline`: their producers did not finish (Ray's RDT manager in this process
    receives the metadata with each producer's reply)."""
    import time

    import ray

    mgr = ray._private.worker.global_worker.rdt_manager
    missing = []
    for obj in obj_ids:
        if mgr.wait_for_tensor_transport_metadata(obj, max(deadline - time.monotonic(), 0.0)) is None:
            missing.append(obj)
    return missing


def gather(actors: list[Any], transport: str, pending: list[Pending]) -> StallEvidence:
    """Ask every actor involved in an unfinished transfer for its view (all at once, one bounded
    wait), then classify."""
    involved = sorted({i for p in pending for i in (p.src, p.dst)})
    objs = sorted({p.obj_id for p in pending})
    answers = ask_each({i: actors[i] for i in involved}, transport_view, transport, objs)
    views: dict[int, dict[str, Any] | None] = {i: answers.get(i) for i in involved}
    evidence = classify(pending, views, owner_view(objs))
    receivers = sorted({p.dst for p in pending})
    # a source is asked too when a transfer it holds was never produced (its task or the transport's
    # extract holds it: make test-load's "100 of 100 never produced" under a CPU hog)
    sources = sorted({p.src for p in pending
                      if PRODUCED not in ((views.get(p.src) or {}).get("done", {}).get(p.obj_id, []))} - set(receivers))
    states = ask_each({i: actors[i] for i in receivers + sources if views[i] is not None},
                      receiver_state)   # a silent one would only be waited for again
    return replace(evidence, receivers=tuple((i, *states[i]) for i in receivers if i in states),
                   sources=tuple((i, *states[i]) for i in sources if i in states))
