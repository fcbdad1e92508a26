"""The give-backs judged from their records once the release declares handover_bound_s
(conformance/areas/transport/judges/handover.py): held-out round 38's N38_01..08, N38_28, N38_31/32.
Pure: records in the shape the real run writes (the committed example's TR-015..TR-020)."""
from __future__ import annotations

import copy
import json
import re
from pathlib import Path
from typing import Any

import pytest

from conformance.areas.transport.handover import HANDOVER_BOUND_S
from conformance.areas.transport.judges.common import Refused
from conformance.areas.transport.judges.handover import handover_record
from conformance.catalog.data import load_suite_data
from conformance.rdt.warm import STOP_REASONS
from conformance.report.judges import MissingEvidence

BOUND = 27.1
POOL = {"lent": 2, "born": 1}
GOOD = [{"returned": 1, "stopped": 2, "leaks": [], "took_s": 0.2, "bound_s": BOUND,
         "why_stopped": ["gone: ActorDiedError", "discarded by the check: left busy"]}]
USAGE = ("TR-015", "TR-016", "TR-017", "TR-018", "TR-019", "TR-020")


def judged(record: Any = GOOD, pool: Any = POOL, bound: float | None = BOUND, pooled: bool = True) -> None:
    handover_record("cpu", copy.deepcopy(record), copy.deepcopy(pool), bound, pooled)


def with_(**changes: Any) -> list[dict[str, Any]]:
    return [{**GOOD[0], **changes}]


def test_an_honest_give_back_passes() -> None:
    judged()
    judged(None, None, pooled=False)                      # GLOO/NCCL: the pool lends nothing, no tally
    judged(None, {"lent": 0, "born": 0}, pooled=False)


def test_a_zeroed_tally_of_a_pooled_transport_is_refused() -> None:
    """N38_04: the record dropped and the tally set to zero; every usage scenario of a transport
    the pool serves borrows its peers there, so none is no honest tally."""
    with pytest.raises(Refused, match="records no actor lent or born"):
        judged(None, {"lent": 0, "born": 0})


def test_which_transports_the_pool_serves_is_read_from_the_manifest() -> None:
    from conformance.areas.transport.judges.handover import pooled_transport

    assert pooled_transport({"transport": {"name": "SIMXFER", "manager": "pkg.mod:Cls"}})
    assert pooled_transport({"transport": {"name": "NIXL"}})
    assert not pooled_transport({"transport": {"name": "GLOO"}}) and not pooled_transport({"transport": {"name": "nccl"}})
    assert pooled_transport({"transport": {"name": "GLOO", "manager": "pkg.mod:Cls"}})   # a custom one named so


def test_a_leak_filed_as_a_reason_to_stop_is_refused() -> None:
    with pytest.raises(Refused, match="no reason the warm pool stops an actor for"):
        judged(with_(why_stopped=["SIMACC_VISIBLE_DEVICES changed from '0' to '3'"]))
    for leaks in ({}, False, "x", [1]):
        with pytest.raises(MissingEvidence, match="leaks is not a list of strings"):
            judged(with_(leaks=leaks))


def test_records_and_tallies_dropped_are_missing_evidence() -> None:
    with pytest.raises(MissingEvidence, match="metric warm_pool"):
        judged(GOOD, None)
    for pool in ({"lent": -1, "born": 0}, {"lent": True, "born": 0}, {"born": 3}):
        with pytest.raises(MissingEvidence, match="warm_pool"):
            judged(GOOD, pool)
    for record in (None, [], {}):
        with pytest.raises(MissingEvidence, match="metric handover"):
            judged(record, POOL)


def test_every_actor_of_the_tally_is_accounted_for_once() -> None:
    with pytest.raises(Refused, match="account for 2 actor"):
        judged(with_(returned=0))
    with pytest.raises(Refused, match="account for 6 actor"):
        judged(GOOD * 2)


def test_the_give_backs_time_is_judged_against_the_releases_bound() -> None:
    with pytest.raises(Refused, match="took 40s, past its bound 27.1s"):
        judged(with_(took_s=40))
    with pytest.raises(Refused, match="bounded by 600s; the release bounds it at 27.1s"):
        judged(with_(bound_s=600, took_s=500))
    with pytest.raises(MissingEvidence, match="took_s or bound_s"):
        judged(with_(took_s=None))


def test_a_release_before_the_param_is_judged_as_published() -> None:
    judged(None, None, None)                                          # no tally, no record
    judged(with_(why_stopped=["anything"], took_s=999), POOL, None)   # only leaks then
    with pytest.raises(Refused, match="held what it left"):
        judged(with_(leaks=["X changed from '0' to '1'"]), POOL, None)


def test_the_committed_examples_records_pass_the_rule() -> None:
    """Every usage record of a real run (reports/example) holds under the new rule."""
    report = json.loads((Path(__file__).resolve().parents[2] / "reports" / "example" / "report.json").read_text())
    seen = 0
    for check in report["checks"]:
        if check["id"] in USAGE:
            for record in check["metrics"].values():
                if isinstance(record, dict) and "warm_pool" in record:
                    handover_record(check["id"], record.get("handover"), record["warm_pool"], BOUND)
                    seen += 1
    assert seen == 2 * len(USAGE)


def test_the_guards_fit_the_releases_bound_and_each_writers_reason_is_in_the_vocabulary() -> None:
    checklist = load_suite_data().checklist
    for cid in USAGE:
        assert HANDOVER_BOUND_S <= checklist.by_id()[cid].params["handover_bound_s"], cid
    written = ["stopped by the check without a give-back", "it did not answer its handover", "busy: it did not answer its handover", "gone: ActorDiedError",
               "actor_has_tensor_transport raised", "actor_has_tensor_transport raised RuntimeError",
               "the transport did not answer actor_has_tensor_transport within 4s", "2 RDT object(s) still in its store",
               "1 process(es) below it started since its last handover (e.g. pid 3: python -c x)",
               "1 file(s) held open since its last handover (e.g. /tmp/x)", "discarded by the check: left busy"]
    for reason in written:
        assert any(re.fullmatch(p, reason) for p in STOP_REASONS), reason


def test_actors_stopped_without_a_give_back_are_accounted_for() -> None:
    """TR-019 on a two-sided transport stops its wave's four lent peers before its pair
    (UsageCtx.close mid-scenario): their record says so, and the tally of six adds up (a correct
    plugin's TR-019 failed in make test before the record existed)."""
    pool = {"lent": 0, "born": 6}
    unreturned = {"returned": 0, "stopped": 4, "leaks": [], "why_stopped": ["stopped by the check without a give-back"],
                  "took_s": 0.0, "bound_s": BOUND}
    judged([unreturned, *with_(returned=1, stopped=1)], pool)
    with pytest.raises(Refused, match="account for 2 actor"):
        judged(with_(returned=1, stopped=1), pool)
