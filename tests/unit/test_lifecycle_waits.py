"""The transport lifecycle checks' waits for frees and for call records (TR-011, TR-012, TR-013;
conformance/areas/transport/lifecycle.py) go through the check's budget (issue 42: every wait a
check makes says whose time it is and is recorded): Ray frees an object and calls the transport's
`garbage_collect` for it, so each is a wait on Ray's machinery running the plugin's code,
stretched by the run's measurement, recorded in metrics.waits, "not judged: host" when a fresh
sample says the host got slower, and otherwise ended with what was still missing for the judge.

A stand-in for the endpoints' answers and fake worker-start samples: what is checked is whose time
the wait is and what the check's record says; the teeth rows run the real thing (tests/teeth.yaml:
transport/NoFree+ZeroDimLost+NonBoolHas, good/transport-reference-2node)."""
from __future__ import annotations

import time
from typing import Any

import pytest

from conformance.areas.transport import lifecycle
from conformance.catalog.data import Check
from conformance.run import machinery
from conformance.run.budget import Budget, HostNotReady
from conformance.timing import host_load
from conformance.timing.host_load import MachineryRecord
from conformance.timing.owned import wait_problems

NOMINAL = host_load.NOMINAL_S["worker_start"]


def budget_of(rec: MachineryRecord) -> tuple[Budget, dict[str, Any]]:
    check = Check(id="TR-012", title="t", area="transport", level="MUST", requirement="r", rationale="r",
                  since="0.1.0", params={"leftover_bound_s": 5})
    metrics: dict[str, Any] = {}
    return Budget(check, metrics, rec), metrics


@pytest.fixture
def samples(monkeypatch: pytest.MonkeyPatch) -> list[float]:
    """The fresh worker-start samples the budget takes when a wait runs out (set the next one)."""
    upcoming: list[float] = []

    def fake(timeout_s: float, *, machinery: MachineryRecord) -> float:
        seconds = upcoming.pop(0) if upcoming else NOMINAL / 10
        machinery.note("worker_start", seconds)
        return seconds
    monkeypatch.setattr(machinery, "measure_worker_start", fake)
    return upcoming


def held_after(monkeypatch: pytest.MonkeyPatch, freed_at_s: float | None, held: int = 3) -> None:
    """The endpoint's RDT store holds `held` objects until `freed_at_s` from now (None: for ever)."""
    t0 = time.monotonic()
    monkeypatch.setattr(lifecycle, "held_objects",
                        lambda eps, index: 0 if freed_at_s is not None and time.monotonic() - t0 >= freed_at_s else held)


def test_a_free_on_a_loaded_host_is_rays_time_stretched_and_recorded(monkeypatch: pytest.MonkeyPatch,
                                                                     samples: list[float]) -> None:
    """Freed 0.3 s in: past a 0.2 s bound, within it stretched x2 by the run's measured worker start."""
    rec = MachineryRecord()
    rec.note("worker_start", NOMINAL * 2)
    budget, metrics = budget_of(rec)
    held_after(monkeypatch, 0.3)
    assert lifecycle.wait_freed(budget, None, 0, timeout_s=0.2) == 0   # type: ignore[arg-type]  # no endpoint is read
    [w] = metrics["waits"]["each"]
    assert (w["owner"], w.get("param"), w["bound_s"], w["factor"], w["verdict"]) == ("ray", None, 0.2, 2.0, "met")
    assert w["took_s"] >= 0.3 and wait_problems(metrics["waits"], budget.check.params, passed=True) == []


def test_objects_still_held_when_the_host_did_its_part_are_the_judges_evidence(monkeypatch: pytest.MonkeyPatch,
                                                                               samples: list[float]) -> None:
    """Never freed, the fresh sample quick: the wait ends with the count the judge reads (a leak)."""
    budget, metrics = budget_of(MachineryRecord())
    held_after(monkeypatch, None, held=3)
    assert lifecycle.wait_freed(budget, None, 0, baseline=1, timeout_s=0.1) == 2   # type: ignore[arg-type]
    [w] = metrics["waits"]["each"]
    assert (w["owner"], w["verdict"]) == ("ray", "ran out")


def test_a_host_that_got_slower_is_not_judged(monkeypatch: pytest.MonkeyPatch, samples: list[float]) -> None:
    """Never freed, and the fresh sample says the host got 5 times slower than the bound assumed:
    the wait waits the difference, then "not judged: host", never the plugin's leak."""
    budget, metrics = budget_of(MachineryRecord())
    held_after(monkeypatch, None)
    samples.append(NOMINAL * 5)
    with pytest.raises(HostNotReady):
        lifecycle.wait_freed(budget, None, 0, timeout_s=0.1)   # type: ignore[arg-type]
    [w] = metrics["waits"]["each"]
    assert w["verdict"] == "host"


def test_call_records_are_awaited_as_rays_and_returned_whether_or_not_they_all_came(monkeypatch: pytest.MonkeyPatch,
                                                                                    samples: list[float]) -> None:
    budget, metrics = budget_of(MachineryRecord())
    records = [{"m": "garbage_collect", "obj": "a"}]
    monkeypatch.setattr(lifecycle, "ray_get", lambda ref, what: records)

    class Actor:
        class transport_calls:   # Ray's method.remote() shape
            @staticmethod
            def remote(transport: str) -> None:
                return None

    class Eps:
        actors = [Actor()]

    assert lifecycle.wait_calls(budget, Eps(), "T", 0, "garbage_collect", {"a"}) == records   # type: ignore[arg-type]
    assert lifecycle.wait_calls(budget, Eps(), "T", 0, "garbage_collect", {"a", "b"}, timeout_s=0.1) == records  # type: ignore[arg-type]
    assert [w["verdict"] for w in metrics["waits"]["each"]] == ["met", "ran out"]
    assert all(w["owner"] == "ray" for w in metrics["waits"]["each"])


def test_a_receivers_copies_are_rays_alone(monkeypatch: pytest.MonkeyPatch, samples: list[float]) -> None:
    """TR-013 waits for Ray to let go of its copies on the destination before reading memory: no
    code of the plugin's frees them, so a wait that runs out, even on a host that did its part, is
    "not judged: host", never a pass beside a wait that ran out (which verify refuses)."""
    budget, metrics = budget_of(MachineryRecord())
    held_after(monkeypatch, None)
    with pytest.raises(HostNotReady):
        lifecycle.wait_freed(budget, None, 1, timeout_s=0.1, runs_plugin_code=False)   # type: ignore[arg-type]
    assert [w["verdict"] for w in metrics["waits"]["each"]] == ["host"]
