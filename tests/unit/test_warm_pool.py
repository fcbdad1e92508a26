"""The warm pool's rule and bookkeeping (conformance.rdt.warm) and the usage judges' reading of its
record: pure, no Ray (the pool starts nothing itself; what it lends is the caller's)."""
from __future__ import annotations

from typing import Any

import pytest

from conformance.areas.transport.judges.common import Refused
from conformance.areas.transport.judges.usage import handover_record
from conformance.rdt.warm import WarmActors, WarmKey, handover_leaks
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
    assert handover_leaks(BIRTH, None, first) == []
    assert handover_leaks(BIRTH, first, first) == []   # the same helper and file later: no leak


def test_a_later_borrower_s_new_processes_and_files_are_leaks() -> None:
    first = reading(processes=[TRACKER], files=["/dev/shm/psm_1"])
    helper = {"pid": 12, "parent": 10, "command": "python -c import time; time.sleep(120)"}
    later = reading(processes=[TRACKER, helper], files=["/dev/shm/psm_1", "/tmp/rc/descriptor-7"])
    leaks = handover_leaks(BIRTH, first, later)
    assert leaks == ["1 process(es) below it started since its last handover (e.g. pid 12: python -c import time; "
                     "time.sleep(120))", "1 file(s) held open since its last handover (e.g. /tmp/rc/descriptor-7)"]


KEY = WarmKey.of("peer", "cpu", "node-a", False, {})


class Starts:
    """The caller's start and birth reading: new objects stand for actors."""

    def __init__(self) -> None:
        self.started: list[object] = []

    def start(self, k: int) -> list[object]:
        new = [object() for _ in range(k)]
        self.started += new
        return new

    @staticmethod
    def read(actors: list[object]) -> list[dict[str, Any]]:
        return [reading() for _ in actors]


def test_a_clean_actor_given_back_is_lent_again_and_a_leaking_one_is_stopped() -> None:
    pool, s, cluster = WarmActors(), Starts(), object()
    a, b = pool.borrow(cluster, KEY, 2, s.start, s.read)
    record, stop = pool.give_back([a, b], {id(a): reading(), id(b): reading(env={"SIMACC_VISIBLE_DEVICES": "1"})})
    assert (record.returned, record.stopped, stop) == (1, 1, [b])
    assert record.leaks == ["SIMACC_VISIBLE_DEVICES changed from '0' to '1'"]
    again = pool.borrow(cluster, KEY, 2, s.start, s.read)
    assert again[0] is a and len(s.started) == 3   # one lent, one born
    assert (pool.births, pool.loans) == (3, 1)


def test_dead_busy_or_still_holding_actors_are_stopped_not_judged() -> None:
    pool, s, cluster = WarmActors(), Starts(), object()
    a, b, c = pool.borrow(cluster, KEY, 3, s.start, s.read)
    record, stop = pool.give_back([a, b, c], {id(a): None, id(b): reading(rdt_objects=1), id(c): reading()},
                                  {id(a): "gone: ActorDiedError"})
    assert stop == [a, b] and record.returned == 1 and record.leaks == []
    assert record.as_dict()["why_stopped"] == ["1 RDT object(s) still in its store", "gone: ActorDiedError"]


def test_other_keys_and_other_clusters_are_never_lent() -> None:
    pool, s, cluster = WarmActors(), Starts(), object()
    a = pool.borrow(cluster, KEY, 1, s.start, s.read)[0]
    pool.give_back([a], {id(a): reading()})
    other = WarmKey.of("peer", "cpu", "node-a", False, {"max_concurrency": 8})
    assert pool.borrow(cluster, other, 1, s.start, s.read)[0] is not a
    assert pool.borrow(object(), KEY, 1, s.start, s.read)[0] is not a   # a new cluster: the old one's are gone
    assert pool.idle() == 0


def test_idle_actors_holding_units_are_taken_by_node() -> None:
    pool, s, cluster = WarmActors(), Starts(), object()
    units_a, units_b = (WarmKey.of("peer", "simacc", n, True, {}) for n in ("node-a", "node-b"))
    x = pool.borrow(cluster, units_a, 1, s.start, s.read)[0]
    y = pool.borrow(cluster, units_b, 1, s.start, s.read)[0]
    z = pool.borrow(cluster, KEY, 1, s.start, s.read)[0]
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
    a = pool.borrow(cluster, KEY, 1, s.start, s.read)[0]
    record, stop = pool.give_back([a], {id(a): reading(has_transport=None)}, {id(a): "actor_has_tensor_transport raised X"})
    assert stop == [a] and record.leaks == [] and record.why_stopped == ["actor_has_tensor_transport raised X"]
