"""The warm pool's rule and bookkeeping (conformance.rdt.warm) and the usage judges' reading of its
record: pure, no Ray (the pool starts nothing itself; what it lends is the caller's)."""
from __future__ import annotations

from typing import Any

import pytest

from conformance.areas.transport.handover import transport_has
from conformance.areas.transport.judges.common import Refused
from conformance.areas.transport.judges.handover import handover_record
from conformance.rdt.warm import WarmActors, WarmKey, handover_changes, handover_leaks
from conformance.report.judges import MissingEvidence

BIRTH = {"rdt_objects": 0, "env": {"SIMACC_VISIBLE_DEVICES": "0"}, "processes": [], "files": []}
TRACKER = {"pid": 11, "parent": 10, "command": "python -c from multiprocessing.resource_tracker import main"}


def reading(**changes: Any) -> dict[str, Any]:
    return {**BIRTH, **changes}


def test_a_clean_handover_leaks_nothing() -> None:
    assert handover_leaks(BIRTH, None, reading()) == []
    assert handover_leaks(BIRTH, reading(), reading()) == []


def test_a_changed_visible_devices_variable_is_a_leak_from_the_first_borrower() -> None:
    leaks = handover_leaks(BIRTH, None, reading(env={"SIMACC_VISIBLE_DEVICES": "3"}))
    assert leaks == ["SIMACC_VISIBLE_DEVICES changed from '0' to '3'"]
    assert handover_leaks(BIRTH, None, reading(env={}))   # unset is a change too


def test_what_the_first_borrower_starts_or_opens_is_kept_for_the_process_s_life() -> None:
    first = reading(processes=[TRACKER], files=["/dev/shm/psm_1"])
    assert handover_changes(BIRTH, None, first) == [] and handover_leaks(BIRTH, None, first) == []
    assert handover_changes(BIRTH, first, first) == []   # the same helper and file later: nothing new


def test_a_later_borrower_s_new_processes_and_files_stop_the_actor_without_blame() -> None:
    """A later borrower may be the first to use the actor in another role (its first send): what
    it started or opened stops the actor (a fresh one for the next check), never a leak."""
    first = reading(processes=[TRACKER], files=["/dev/shm/psm_1"])
    helper = {"pid": 12, "parent": 10, "command": "python -c import time; time.sleep(120)"}
    later = reading(processes=[TRACKER, helper], files=["/dev/shm/psm_1", "/tmp/rc/descriptor-7"])
    assert handover_leaks(BIRTH, first, later) == []
    assert handover_changes(BIRTH, first, later) == [
        "1 process(es) below it started since its last handover (e.g. pid 12: python -c import time; time.sleep(120))",
        "1 file(s) held open since its last handover (e.g. /tmp/rc/descriptor-7)"]
    pool, s, cluster = WarmActors(), Starts(), object()
    a = pool.borrow(cluster, KEY, 1, s.start, s.read, s.stop)[0]
    pool.give_back([a], {id(a): first})
    assert pool.borrow(cluster, KEY, 1, s.start, s.read, s.stop)[0] is a
    record, stop = pool.give_back([a], {id(a): later})
    assert stop == [a] and record.leaks == [] and len(record.why_stopped) == 2


KEY = WarmKey.of("peer", "cpu", "node-a", False, {})


class Starts:
    """The caller's start and birth reading: new objects stand for actors."""

    def __init__(self) -> None:
        self.started: list[object] = []
        self.stopped: list[object] = []

    def stop(self, actors: list[object]) -> None:
        self.stopped += actors

    def start(self, k: int) -> list[object]:
        new = [object() for _ in range(k)]
        self.started += new
        return new

    @staticmethod
    def read(actors: list[object]) -> list[dict[str, Any]]:
        return [reading() for _ in actors]


def test_a_clean_actor_given_back_is_lent_again_and_a_leaking_one_is_stopped() -> None:
    pool, s, cluster = WarmActors(), Starts(), object()
    a, b = pool.borrow(cluster, KEY, 2, s.start, s.read, s.stop)
    record, stop = pool.give_back([a, b], {id(a): reading(), id(b): reading(env={"SIMACC_VISIBLE_DEVICES": "1"})})
    assert (record.returned, record.stopped, stop) == (1, 1, [b])
    assert record.leaks == ["SIMACC_VISIBLE_DEVICES changed from '0' to '1'"]
    again = pool.borrow(cluster, KEY, 2, s.start, s.read, s.stop)
    assert again[0] is a and len(s.started) == 3   # one lent, one born
    assert (pool.births, pool.loans) == (3, 1)


def test_dead_busy_or_still_holding_actors_are_stopped_not_judged() -> None:
    pool, s, cluster = WarmActors(), Starts(), object()
    a, b, c = pool.borrow(cluster, KEY, 3, s.start, s.read, s.stop)
    record, stop = pool.give_back([a, b, c], {id(a): None, id(b): reading(rdt_objects=1), id(c): reading()},
                                  {id(a): "gone: ActorDiedError"})
    assert stop == [a, b] and record.returned == 1 and record.leaks == []
    assert record.as_dict()["why_stopped"] == ["1 RDT object(s) still in its store", "gone: ActorDiedError"]


def test_other_keys_and_other_clusters_are_never_lent() -> None:
    pool, s, cluster = WarmActors(), Starts(), object()
    a = pool.borrow(cluster, KEY, 1, s.start, s.read, s.stop)[0]
    pool.give_back([a], {id(a): reading()})
    other = WarmKey.of("peer", "cpu", "node-a", False, {"max_concurrency": 8})
    assert pool.borrow(cluster, other, 1, s.start, s.read, s.stop)[0] is not a
    assert pool.borrow(object(), KEY, 1, s.start, s.read, s.stop)[0] is not a   # a new cluster: the old one's are gone
    assert pool.idle() == 0


def test_idle_actors_holding_units_are_taken_by_node() -> None:
    pool, s, cluster = WarmActors(), Starts(), object()
    units_a, units_b = (WarmKey.of("peer", "simacc", n, True, {}) for n in ("node-a", "node-b"))
    x = pool.borrow(cluster, units_a, 1, s.start, s.read, s.stop)[0]
    y = pool.borrow(cluster, units_b, 1, s.start, s.read, s.stop)[0]
    z = pool.borrow(cluster, KEY, 1, s.start, s.read, s.stop)[0]
    pool.give_back([x, y, z], {id(x): reading(), id(y): reading(), id(z): reading()})
    assert pool.take_idle(holding_units=True, node="node-a") == [x]
    assert pool.take_idle(holding_units=True) == [y]
    assert pool.take_idle() == [z]


def test_the_usage_judge_refuses_a_give_back_that_leaked() -> None:
    handover_record("cpu", None)   # nothing borrowed: nothing to judge
    handover_record("cpu", [{"returned": 2, "stopped": 0, "leaks": []}])
    with pytest.raises(Refused, match="on cpu: the actors it gave back to the warm pool held what it left: X changed"):
        handover_record("cpu", [{"returned": 1, "stopped": 1, "leaks": ["X changed from '0' to '1'"]}])
    with pytest.raises(MissingEvidence, match="metric handover"):
        handover_record("cpu", {"leaks": []})


def test_a_transport_that_no_longer_has_the_actor_is_a_leak_and_one_that_raised_is_stopped() -> None:
    assert handover_leaks(BIRTH, None, reading(has_transport=False)) == [
        "the transport says it no longer has the tensor transport (actor_has_tensor_transport: False)"]
    assert handover_leaks(BIRTH, None, reading(has_transport=True)) == []
    pool, s, cluster = WarmActors(), Starts(), object()
    a = pool.borrow(cluster, KEY, 1, s.start, s.read, s.stop)[0]
    record, stop = pool.give_back([a], {id(a): reading(has_transport=None)}, {id(a): "actor_has_tensor_transport raised X"})
    assert stop == [a] and record.leaks == [] and record.why_stopped == ["actor_has_tensor_transport raised X"]


def test_a_borrow_that_fails_to_start_or_read_stops_what_it_took_and_started() -> None:
    """The host ran out while the shortfall started or was read: the idle actor already taken and
    the ones started are stopped, not left holding units outside the pool and the borrower."""
    pool, s, cluster = WarmActors(), Starts(), object()
    a = pool.borrow(cluster, KEY, 1, s.start, s.read, s.stop)[0]
    pool.give_back([a], {id(a): reading()})

    def unreadable(actors: list[object]) -> list[dict[str, Any]]:
        raise TimeoutError("the host ran out")
    with pytest.raises(TimeoutError):
        pool.borrow(cluster, KEY, 3, s.start, unreadable, s.stop)
    assert s.stopped[0] is a and len(s.stopped) == 3 and pool.idle() == 0 and pool.take_lent() == []


def test_actors_still_lent_at_a_module_s_end_are_taken_to_be_stopped() -> None:
    pool, s, cluster = WarmActors(), Starts(), object()
    got = pool.borrow(cluster, KEY, 2, s.start, s.read, s.stop)
    assert pool.take_lent() == got and pool.take_lent() == []


def test_the_transport_s_answer_is_bounded_and_one_that_raised_or_hung_is_none() -> None:
    import threading

    a, b, c = object(), object(), object()
    hang = threading.Event()

    def ask(actor: object) -> object:
        if actor is b:
            raise RuntimeError("broken")
        if actor is c:
            hang.wait(5)
        return actor is a
    why: dict[int, str] = {}
    got = transport_has([a, b, c], "X", why, 0.5, ask)
    hang.set()
    assert got == {id(a): True, id(b): None, id(c): None}
    assert why == {id(b): "actor_has_tensor_transport raised RuntimeError",
                   id(c): "the transport did not answer actor_has_tensor_transport within 0.5s"}


def test_a_tally_of_lent_actors_without_a_handover_record_is_missing_evidence() -> None:
    with pytest.raises(MissingEvidence, match="metric handover"):
        handover_record("cpu", None, {"lent": 2, "born": 0})
    handover_record("cpu", None, {"lent": 0, "born": 0})
