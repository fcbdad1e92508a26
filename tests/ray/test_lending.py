"""The warm actors checks borrow (conformance.rdt.lending), on a real one-node Ray instance:
a clean lot is lent again to the next borrower (the same processes), and one that is dead, busy
or changed its visible devices is stopped, with what it left named."""
from __future__ import annotations

import os
from typing import Any, Iterator

import pytest

from conformance.rdt import lending
from conformance.rdt.lending import Lender, LotKey
from conformance.rdt.pool import Endpoints, endpoint_class


@pytest.fixture(scope="module")
def ray_instance() -> Iterator[Any]:
    import ray

    ray.init(num_cpus=1, include_dashboard=False, log_to_driver=False)
    try:
        yield object()   # stands for the cluster handle a lot lives on
    finally:
        ray.shutdown()


def _lot_of(n: int) -> Endpoints:
    import ray

    cls = endpoint_class(tensor_transport=False)
    actors = [cls.options(num_cpus=0).remote("cpu") for _ in range(n)]
    return Endpoints(actors=actors, infos=ray.get([a.info.remote() for a in actors]), device="cpu")


def _pids(actors: list[Any]) -> list[int]:
    import ray
    return [info["pid"] for info in ray.get([a.info.remote() for a in actors])]


KEY = LotKey("Endpoint", False, "cpu", "node-a", False)


def test_a_clean_lot_is_lent_again_and_a_dirty_one_is_stopped_naming_what_it_left(ray_instance: Any,
                                                                                monkeypatch: pytest.MonkeyPatch) -> None:
    import ray

    monkeypatch.setattr(lending, "PING_S", 3.0)

    # functions a worker runs in the actor (__ray_call__): nested, so they travel by value
    def _set_visible(actor_self: Any) -> None:
        os.environ["SIMACC_VISIBLE_DEVICES"] = "3"

    def _sleep(actor_self: Any) -> None:
        import time
        time.sleep(30)

    lender = Lender()
    assert lender.borrow(KEY, 2, ray_instance) is None
    lot = lender.add(KEY, _lot_of(2), ray_instance)
    born = _pids(lot.actors)
    assert lender.give_back(lot) == [] and lot in lender.idle
    # another key, another cluster or more actors than the lot has: not lent
    assert lender.borrow(LotKey("Endpoint", False, "cpu", "node-b", False), 2, ray_instance) is None
    assert lender.borrow(KEY, 3, ray_instance) is None
    again = lender.borrow(KEY, 2, ray_instance)
    assert again is lot and _pids(again.actors) == born and lender.borrowed == 2 and lender.started == 2

    # a check that changed a process's visible devices: stopped, named
    again.actors[1].__ray_call__.remote(_set_visible)
    left = lender.give_back(again)
    assert left and "actor 1's visible-devices variables changed" in left[0] and not lender.idle

    # a check that killed one of its actors
    lot = lender.add(KEY, _lot_of(2), ray_instance)
    ray.kill(lot.actors[0])
    left = lender.give_back(lot)
    assert left and "gone" in left[0] and not lender.idle

    # an actor still busy with the check's long call does not answer: not lent again
    lot = lender.add(KEY, _lot_of(1), ray_instance)
    busy = lot.actors[0].__ray_call__.remote(_sleep)
    assert "did not answer" in lender.give_back(lot)[0]
    del busy


def test_idle_lots_holding_a_nodes_devices_are_evicted_before_a_start_there(ray_instance: Any) -> None:
    lender = Lender()
    holding = LotKey("Endpoint", True, "simacc", "node-a", True)
    elsewhere = LotKey("Endpoint", True, "simacc", "node-b", True)
    host = LotKey("Endpoint", True, "cpu", "node-a", False)
    lots = [lender.add(k, _lot_of(1), ray_instance) for k in (holding, elsewhere, host)]
    for lot in lots:
        lender.idle.append(lot)
    lender.lent.clear()
    assert lender.evict("node-a") == 1
    assert [lot.key for lot in lender.idle] == [elsewhere, host]
    lender.release(units_only=True)
    assert [lot.key for lot in lender.idle] == [host]
    lender.close()
    assert not lender.idle and not lender.lent
