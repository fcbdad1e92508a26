"""Whose stall is it (conformance.rdt.stalls): how TR-019 classifies transfers that did not
finish, and the tracing wrapper's record of calls still running."""
from __future__ import annotations

import threading
from typing import Any

from conformance.rdt import stalls, tracing
from conformance.rdt.stalls import Pending, StallEvidence, classify

SRC, DST = 0, 1


def view(done: dict[str, list[str]] | None = None, running: list[str] | None = None) -> dict[str, Any]:
    return {"done": done or {}, "in_flight": [{"m": stalls.RECEIVE, "obj": o, "running_s": 1.0} for o in running or []]}


def test_produced_but_never_received_was_never_handed_over() -> None:
    ev = classify([Pending("a", SRC, DST), Pending("b", SRC, DST)],
                  {SRC: view({"a": [stalls.PRODUCED], "b": [stalls.PRODUCED]}), DST: view()})
    assert ev == StallEvidence(pending=2, never_handed=2)
    assert "never handed to the receiver's transport by Ray" in ev.describe()


def test_a_receive_inside_the_transport_is_the_transports() -> None:
    ev = classify([Pending("a", SRC, DST), Pending("b", SRC, DST)],
                  {SRC: view({"a": [stalls.PRODUCED], "b": [stalls.PRODUCED]}), DST: view(running=["a"])})
    assert (ev.in_transport, ev.never_handed) == (1, 1)
    assert "held at the receivers: 1 still inside the transport's receive" in ev.describe()


def test_not_produced_and_received_are_evidence_too() -> None:
    ev = classify([Pending("a", SRC, DST), Pending("b", SRC, DST)],
                  {SRC: view({"b": [stalls.PRODUCED]}), DST: view({"b": [stalls.RECEIVE]})})
    assert (ev.not_produced, ev.received, ev.never_handed) == (1, 1, 0)


def test_an_actor_that_does_not_answer_is_named() -> None:
    ev = classify([Pending("a", SRC, DST)], {SRC: view({"a": [stalls.PRODUCED]}), DST: None})
    assert ev.silent == (DST,)
    assert "did not say which transport calls" in ev.describe()
    assert StallEvidence(pending=0).describe() == "no evidence"


def test_tracing_lists_calls_still_running_and_forgets_them_when_they_return() -> None:
    started, release = threading.Event(), threading.Event()

    class Inner:
        def recv_multiple_tensors(self, obj_id: str, meta: Any, comm: Any, bufs: Any = None) -> list[Any]:
            started.set()
            release.wait(10)
            return []

    traced = type("Traced_T", (tracing.TracedTransport,), {"INNER_REF": "", "TRANSPORT_NAME": "STALLTEST"})
    traced.inner_class = classmethod(lambda cls: Inner)   # type: ignore[method-assign]
    t = traced()
    worker = threading.Thread(target=t.recv_multiple_tensors, args=("obj1", None, None))
    worker.start()
    assert started.wait(10)
    running = tracing.in_flight("STALLTEST")
    assert [(c["m"], c["obj"]) for c in running] == [(stalls.RECEIVE, "obj1")]
    assert tracing.in_flight("STALLTEST", ["other"]) == []
    release.set()
    worker.join(10)
    assert tracing.in_flight("STALLTEST") == []
    assert [r["m"] for r in tracing.calls("STALLTEST", ["obj1"])] == [stalls.RECEIVE]
    view_now = stalls.transport_view(None, "STALLTEST", ["obj1"])
    assert view_now == {"done": {"obj1": [stalls.RECEIVE]}, "in_flight": []}


def test_the_owners_view_is_counted_and_named() -> None:
    ev = classify([Pending("a", SRC, DST), Pending("b", SRC, DST), Pending("c", SRC, DST)],
                  {SRC: view({"a": [stalls.PRODUCED]}), DST: None}, {"a": "sent", "b": "waiting", "c": "unknown"})
    assert (ev.owner_sent, ev.owner_waiting) == (1, 1)
    assert "the owner still waits for the source's metadata of 1 and has sent 1 to their receivers" in ev.describe()
    assert ev.as_dict()["owner_sent"] == 1


def test_the_owners_view_outside_a_ray_session_is_unknown_or_empty() -> None:
    assert stalls.owner_view(["x"]) in ({}, {"x": "unknown"})


def test_a_receive_sent_to_a_receiver_that_does_not_answer_is_held_at_the_receiver() -> None:
    # an asyncio receiver whose loop a blocked receive holds answers nothing (make test's
    # transport/LeakedRecvCredits row, one run in three): the owner's "sent" places the stall there
    ev = classify([Pending("a", SRC, DST), Pending("b", SRC, DST)],
                  {SRC: view({"a": [stalls.PRODUCED], "b": [stalls.PRODUCED]}), DST: None},
                  {"a": "sent", "b": "unknown"})
    assert (ev.sent_to_silent, ev.never_handed, ev.silent) == (1, 0, (DST,))
    assert ev.describe().startswith("held at the receivers: 1 sent to a receiver that did not answer")
    # a silent source whose object the owner still waits for is not the receiver's
    ev = classify([Pending("a", SRC, DST)], {SRC: None, DST: None}, {"a": "waiting"})
    assert ev.sent_to_silent == 0 and "held at the receivers" not in ev.describe()


def test_an_actors_busy_threads_are_told_innermost_first() -> None:
    # what where_they_stand asks each actor of a stalled round, from a thread of its own (as Ray's
    # _ray_system_error group asks), while a task thread waits inside a receive
    told: list[str] = []
    started, release = threading.Event(), threading.Event()

    def recv_multiple_tensors() -> None:   # a name the marks below do not hold
        started.set()
        release.wait(10)

    def actor_method_executor() -> None:   # Ray's frame under every actor task
        recv_multiple_tensors()

    task = threading.Thread(target=actor_method_executor)
    task.start()
    assert started.wait(10)
    told.append(stalls.busy_threads_at(None))
    release.set()
    task.join(10)
    assert told[0].startswith("test_stall_evidence.py:") and "recv_multiple_tensors <" in told[0], told
    assert "threading.py" not in told[0] and told[0].count(" < ") == 1, told   # the thread's own bootstrap is threading's
    assert stalls.busy_threads_at(None) == "idle"


def test_a_receiver_holding_two_rdt_stores_is_named_with_where_its_threads_stand() -> None:
    """TR-019's stall on a correct transport: every receive returned, the receiver's event loop waits
    in Ray's store for one of them, its process holds two stores (conformance.rdt.manager_race)."""
    ev = StallEvidence(pending=50, received=50, owner_sent=50,
                       receivers=((2, "rdt_store.py:323 _wait_object < rdt_manager.py:888 get_rdt_objects", 2),
                                  (3, "idle", 1)))
    said = ev.describe()
    assert "50 received by the transport, yet their tasks did not finish" in said
    assert "receiver(s) [2] hold two or more of Ray's RDT stores" in said
    assert "actor 2: rdt_store.py:323 _wait_object" in said and "actor 3: idle" in said
    assert ev.as_dict()["receivers"][1] == {"actor": 3, "threads": "idle", "rdt_stores": 1}


def test_a_source_that_never_produced_says_where_its_threads_stand() -> None:
    """make test-load's TR-019 under a CPU hog: 100 of 100 never produced, the receivers idle; the
    sources holding them say where their producing tasks stand, after the receivers."""
    ev = StallEvidence(pending=100, not_produced=100, owner_waiting=100, receivers=((2, "idle", 1),),
                       sources=((0, "usage_actors.py:113 make < function_manager.py:689 actor_method_executor", 1),))
    said = ev.describe()
    assert said.index("where the receivers stand: actor 2: idle") < said.index("where the sources stand: actor 0: usage")
    assert ev.as_dict()["sources"] == [{"actor": 0, "threads": ev.sources[0][1], "rdt_stores": 1}]


def test_one_store_per_receiver_names_no_split() -> None:
    ev = StallEvidence(pending=1, received=1, receivers=((1, "idle", 1),))
    assert "Ray's RDT stores" not in ev.describe()


def test_the_rdt_stores_of_this_process_are_counted() -> None:
    import gc

    from ray._private.worker import Worker

    gc.collect()   # stores of earlier tests' workers, left in cycles, go now and not while counting
    before = stalls.rdt_stores_here()
    workers = [Worker(), Worker()]
    stores = [w.rdt_manager.rdt_store for w in workers]
    assert stalls.rdt_stores_here() == before + 2
    del stores, workers
