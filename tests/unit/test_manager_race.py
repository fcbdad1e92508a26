"""Ray 2.60's RDT manager race (conformance.rdt.manager_race), on Ray's own Worker class in this
process: two threads that first use a fresh worker's RDT manager at once can get two RDT stores,
so a receive adds to one while the task's argument waits in the other (TR-019's stall on a correct
transport); built first by `settle`, every thread gets the one store."""
from __future__ import annotations

import sys
import threading
from collections.abc import Callable, Iterator
from typing import Any

import pytest
from ray._private.worker import Worker

from conformance.rdt import manager_race

TRIALS = 400   # knob: fresh workers raced with settle (none may split)
RACE_TRIALS = 20000   # knob: most fresh workers raced without it until one splits (about one in 100 on a loaded host)


@pytest.fixture
def eager_switches() -> Iterator[None]:
    """A GIL switch every microsecond: the race window (RDTManager() itself) is met often."""
    before = sys.getswitchinterval()
    sys.setswitchinterval(1e-6)
    try:
        yield
    finally:
        sys.setswitchinterval(before)


def _stores_seen(prepare: Callable[[Any], None], trials: int = TRIALS, until_split: bool = False) -> int:
    """How many of `trials` trials of two threads first using a fresh worker's RDT store saw two
    stores (`until_split`: stop at the first)."""
    split = 0
    for _ in range(trials):
        if until_split and split:
            break
        worker = Worker()
        prepare(worker)
        seen: list[int] = []
        start = threading.Barrier(2)

        def touch(worker: Any = worker, seen: list[int] = seen, start: threading.Barrier = start) -> None:
            start.wait()
            seen.append(id(worker.rdt_manager.rdt_store))   # what __ray_recv__ and get_rdt_objects each do

        threads = [threading.Thread(target=touch) for _ in range(2)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        split += len(set(seen)) > 1
    return split


def test_ray_builds_two_rdt_stores_when_two_threads_first_use_the_manager(eager_switches: None) -> None:
    """The cause, held on Ray itself: when this fails, Ray guards its manager and manager_race can go."""
    assert _stores_seen(lambda worker: None, RACE_TRIALS, until_split=True) > 0


def test_a_settled_worker_gives_every_thread_its_one_store(eager_switches: None) -> None:
    stores: list[int] = []
    assert _stores_seen(lambda worker: stores.append(id(manager_race.settle(worker)))) == 0
    assert len(stores) == TRIALS


def test_settle_returns_the_store_the_manager_keeps() -> None:
    worker = Worker()
    store = manager_race.settle(worker)
    assert store is worker.rdt_manager.rdt_store
    assert manager_race.settle(worker) is store


@pytest.mark.parametrize("kind", ["peer", "async"])
def test_the_usage_actors_build_the_manager_in_their_constructor(kind: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """Endpoint (and so every RDT harness actor) and the asyncio receiver of TR-019, built as
    Ray builds them in their process: the manager exists before any task or receive runs."""
    from ray._private.worker import global_worker

    from conformance.areas.transport.usage import actor_class

    monkeypatch.setattr(global_worker, "_rdt_manager", None)
    cls, _ = actor_class(kind)
    cls("cpu")
    assert global_worker._rdt_manager is not None


def test_an_rdt_collective_member_builds_the_manager_in_its_constructor(monkeypatch: pytest.MonkeyPatch) -> None:
    """CC-011's members move tensors over RDT too: made for RDT, the member settles the manager; a
    member of groups only does not build RDT's store (it would import what RDT imports for nothing)."""
    from ray._private.worker import global_worker

    from conformance.collective import members

    monkeypatch.setattr(members, "register_backend", lambda *args: "stub")   # the backend is not what is tested
    monkeypatch.setattr(global_worker, "_rdt_manager", None)
    members.CollectiveMember("SIMCOLL", None, None, [])
    assert global_worker._rdt_manager is None
    members.CollectiveMember("SIMCOLL", None, None, [], True, True)
    assert global_worker._rdt_manager is not None
