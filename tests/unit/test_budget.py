"""The one owner of a check's time (conformance.run.budget) and the rule that judges its record
(conformance.timing.owned.wait_problems), which the live check and verify share. Fake waits and
fake samples: no Ray."""
from __future__ import annotations

import ast
import time
from pathlib import Path
from typing import Any

import pytest

from conformance.catalog.data import Check
from conformance.run import machinery
from conformance.run.budget import Budget
from conformance.timing import host_load
from conformance.timing.clock import Clock
from conformance.timing.host_load import HostNotReady, MachineryRecord
from conformance.timing.owned import MAX_RECORDED, RESAMPLE_S, Wait, wait_problems
from conformance.timing.waits import BoundRanOut

CHECKS = Path(__file__).resolve().parents[2] / "conformance" / "checks"


@pytest.fixture
def rec() -> MachineryRecord:
    """The record of Ray's machinery of this test's run (a run owns one; no module holds it)."""
    return MachineryRecord()


def check(**params: Any) -> Check:
    return Check(id="XX-001", title="t", area="device", level="MUST", requirement="r", rationale="r",
                 since="0.1.0", params=params)


def sample(monkeypatch: pytest.MonkeyPatch, seconds: float) -> None:
    def fake(timeout_s: float, *, machinery: MachineryRecord) -> float:
        machinery.note("worker_start", seconds)
        return seconds
    monkeypatch.setattr(machinery, "measure_worker_start", fake)


def ran_out(limit: float) -> str:
    raise BoundRanOut(f"nothing within {limit:.0f}s")


def test_no_check_module_imports_timing_internals() -> None:
    """A check body names time only through its budget (conformance.run.budget)."""
    found = []
    for path in sorted(CHECKS.rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            names = [node.module or ""] if isinstance(node, ast.ImportFrom) else \
                [a.name for a in node.names] if isinstance(node, ast.Import) else []
            found += [f"{path.relative_to(CHECKS)}:{node.lineno} {n}" for n in names
                      if n.startswith("conformance.timing") or n == "conformance.run.machinery"]
    assert not found, "check modules that import timing internals:\n  " + "\n  ".join(found)


def test_a_plugin_scenario_records_its_bound_param_and_time(rec: MachineryRecord) -> None:
    metrics: dict[str, Any] = {}
    b = Budget(check(restart_s=5.0), metrics, rec)
    clock = b.scenario("restart", param="restart_s")
    clock.mark("done")
    [w] = metrics["waits"]["each"]
    assert w["owner"] == "plugin" and w["param"] == "restart_s" and w["bound_s"] == 5.0
    assert w["granted_s"] == 5.0 and w["verdict"] == "met" and w["took_s"] >= 0
    clock.exclude(2.0)           # time left to Ray's machinery widens the grant by exactly that
    assert metrics["waits"]["each"][0]["granted_s"] == 7.0 and metrics["waits"]["each"][0]["excluded_s"] == 2.0
    assert wait_problems(metrics["waits"], {"restart_s": 5.0}, passed=True) == []


def test_a_wait_on_rays_machinery_is_recorded_with_its_stretch(monkeypatch: pytest.MonkeyPatch, rec: MachineryRecord) -> None:
    rec.note("worker_start", host_load.NOMINAL_S["worker_start"] * 2)
    metrics: dict[str, Any] = {}
    b = Budget(check(), metrics, rec)
    with b.active():
        assert b.ray(lambda limit: limit, "actors to start", 10) == pytest.approx(20)
    [w] = metrics["waits"]["each"]
    assert (w["owner"], w["bound_s"], w["granted_s"], w["factor"], w["verdict"]) == ("ray", 10.0, 20.0, 2.0, "met")


def test_a_host_that_ran_out_is_recorded_as_the_hosts(monkeypatch: pytest.MonkeyPatch, rec: MachineryRecord) -> None:
    sample(monkeypatch, host_load.NOMINAL_S["worker_start"])
    metrics: dict[str, Any] = {}
    b = Budget(check(), metrics, rec)
    with b.active(), pytest.raises(HostNotReady):
        b.ray(ran_out, "actors to start", 1)
    assert metrics["waits"]["each"][0]["verdict"] == "host"


def test_two_runs_in_one_process_keep_their_own_record_of_rays_machinery(monkeypatch: pytest.MonkeyPatch) -> None:
    """The record is the run's, never a module's: what one run measured (a slow worker start, a
    fresh sample before blaming) stretches only its own checks' bounds and shows only in its own
    report; a second run in the same process (pytester, a test that runs pytest twice) starts from
    nothing."""
    loaded, idle = MachineryRecord(), MachineryRecord()
    loaded.note("worker_start", host_load.NOMINAL_S["worker_start"] * 3)     # the first run's preflight
    first, second = Budget(check(), {}, loaded), Budget(check(), {}, idle)
    assert first.factor() == pytest.approx(3.0) and second.factor() == 1.0
    assert first.measured() == pytest.approx(9.0) and second.measured() is None
    sample(monkeypatch, host_load.NOMINAL_S["worker_start"] * 5)            # the first run's fresh sample
    with first.active(), pytest.raises(HostNotReady):
        first.ray(ran_out, "actors to start", 1)
    assert loaded.slowest_s["worker_start"] == pytest.approx(15.0) and idle.slowest_s == {}
    assert second.factor() == 1.0 and idle.as_json()["factor"] == 1.0 and loaded.as_json()["factor"] == 5.0
    assert not [name for name, value in vars(host_load).items() if isinstance(value, MachineryRecord)], \
        "a module-level record would be shared by every run in the process"


def test_the_areas_helpers_waits_land_in_the_running_checks_budget(rec: MachineryRecord) -> None:
    metrics: dict[str, Any] = {}
    b = Budget(check(), metrics, rec)
    machinery.await_machinery(lambda limit: None, 1, "outside any check", machinery=rec)   # recorded nowhere
    with b.active():
        machinery.await_machinery(lambda limit: None, 1, "an endpoint pool's start", machinery=rec)
    assert [w["what"] for w in metrics["waits"]["each"]] == ["an endpoint pool's start"]


def test_a_long_wave_is_counted_beyond_what_it_lists(rec: MachineryRecord) -> None:
    metrics: dict[str, Any] = {}
    b = Budget(check(), metrics, rec)
    for i in range(MAX_RECORDED + 5):
        b.note(Wait("ray", f"w{i}", 1.0, 1.0, 0.1))
    assert len(metrics["waits"]["each"]) == MAX_RECORDED and metrics["waits"]["count"] == MAX_RECORDED + 5


def test_a_wave_given_more_time_by_a_fresh_sample_records_the_grant(monkeypatch: pytest.MonkeyPatch, rec: MachineryRecord) -> None:
    sample(monkeypatch, host_load.NOMINAL_S["worker_start"] * 3)
    metrics: dict[str, Any] = {}
    b = Budget(check(all_bound_s=10.0), metrics, rec)
    with b.wave("transfers", param="all_bound_s") as wave:
        assert wave.limit_s == pytest.approx(10.0)
        extra = wave.more(10.0)
    assert extra == pytest.approx(20.0)
    w = metrics["waits"]["each"][0]
    assert w["granted_s"] == pytest.approx(30.0)
    assert wait_problems(metrics["waits"], {"all_bound_s": 10.0}, passed=True) == []


def test_a_wave_leaves_out_of_its_scenario_only_the_more_it_used(monkeypatch: pytest.MonkeyPatch, rec: MachineryRecord) -> None:
    """make test-load (session 32): TR-019's wave given 300 s more ended 87 s later, and its scenario
    recorded 415 s left out of 248 s spent, which its judge refuses. The clock leaves the more out
    while the wave may use it, and counts the unused part against its bound again at the end."""
    sample(monkeypatch, host_load.NOMINAL_S["worker_start"] * 3)
    now = [1000.0]
    monkeypatch.setattr(time, "monotonic", lambda: now[0])
    clock = Clock("TR-019", "concurrent-transfers", 240.0)
    b = Budget(check(all_bound_s=10.0), {}, rec)
    with b.wave("transfers", param="all_bound_s", clock=clock) as wave:
        now[0] += 10.0
        extra = wave.more(10.0)
        assert clock.bound_s == pytest.approx(240.0 + extra)   # usable while the wave waits
        now[0] += 5.0                                          # the wave ended 5 s into its 20 s more
    assert extra == pytest.approx(20.0)
    assert clock.marks["excluded_s"] == pytest.approx(5.0) and clock.bound_s == pytest.approx(245.0)
    assert clock.marks["excluded_s"] <= clock.elapsed()


# --------------------------------------------------------------------------- the judge of the record
def record(*waits: dict[str, Any]) -> dict[str, Any]:
    return {"each": list(waits), "count": len(waits)}


def test_a_pass_whose_plugin_wait_ran_past_its_bound_is_refused() -> None:
    w = {"owner": "plugin", "what": "restart", "bound_s": 5.0, "granted_s": 5.0, "took_s": 9.0, "verdict": "met"}
    assert "took 9.0 s of its 5 s bound" in wait_problems(record(w), {}, passed=True)[0]
    assert wait_problems(record(w), {}, passed=False) == []          # a failure may record it


def test_a_plugin_wait_granted_more_than_its_bound_is_refused() -> None:
    w = {"owner": "plugin", "what": "restart", "bound_s": 5.0, "granted_s": 50.0, "took_s": 40.0, "verdict": "met"}
    assert "granted 50 s, more than its 5 s bound" in wait_problems(record(w), {}, passed=True)[0]


def test_a_bound_that_is_not_the_releases_param_is_refused() -> None:
    w = {"owner": "plugin", "what": "restart", "bound_s": 50.0, "granted_s": 50.0, "took_s": 40.0,
         "verdict": "met", "param": "restart_s"}
    assert "the release's restart_s is 5" in wait_problems(record(w), {"restart_s": 5}, passed=True)[0]
    assert "does not give" in wait_problems(record(w), {}, passed=True)[0]


def test_a_stretch_wider_than_the_suite_grants_is_refused() -> None:
    widest = 10 * host_load.MAX_FACTOR + RESAMPLE_S
    ok = {"owner": "ray", "what": "start", "bound_s": 10.0, "granted_s": widest, "took_s": 1.0, "verdict": "met"}
    assert wait_problems(record(ok), {}, passed=True) == []
    wide = dict(ok, granted_s=widest + 1)
    assert "more than its 10 s bound stretched" in wait_problems(record(wide), {}, passed=True)[0]


@pytest.mark.parametrize("bad, phrase", [
    ({"owner": "vendor"}, "names owner"),
    ({"bound_s": -1.0}, "no finite non-negative"),
    ({"took_s": "soon"}, "not a non-negative number"),
    ({"verdict": "fine"}, "records verdict"),
])
def test_a_malformed_wait_is_named(bad: dict[str, Any], phrase: str) -> None:
    w = {"owner": "plugin", "what": "x", "bound_s": 1.0, "granted_s": 1.0, "took_s": 0.5, "verdict": "met", **bad}
    assert phrase in " ".join(wait_problems(record(w), {}, passed=True))


def test_a_record_that_lists_more_than_it_counts_is_refused() -> None:
    w = {"owner": "ray", "what": "x", "bound_s": 1.0, "granted_s": 1.0, "took_s": 0.5, "verdict": "met"}
    assert "fewer than" in wait_problems({"each": [w, w], "count": 1}, {}, passed=True)[0]
    assert "not a record" in wait_problems([w], {}, passed=True)[0]


def test_verify_refuses_a_pass_whose_recorded_plugin_wait_ran_past_the_releases_bound() -> None:
    """The evidence line reads the same rule (conformance.signing.evidence.entry_problems)."""
    from conformance.signing.evidence import entry_problems

    c = Check(id="FR-003", title="t", area="recovery", level="MUST", requirement="r", rationale="r",
              since="0.1.0", params={"actor_ready_s": 60})
    w = {"owner": "plugin", "what": "the holder to come back", "bound_s": 600.0, "granted_s": 600.0,
         "took_s": 300.0, "verdict": "met", "param": "actor_ready_s"}
    entry = {"id": "FR-003", "outcome": "pass", "metrics": {"waits": record(w)}}
    problems = entry_problems(entry, c, {})
    assert any("claims pass but records wait 'the holder to come back' records bound_s 600" in p for p in problems)


def test_a_window_ray_did_not_fill_is_the_hosts_with_both_measurements(monkeypatch: pytest.MonkeyPatch, rec: MachineryRecord) -> None:
    rec.note("worker_start", 2.0)
    sample(monkeypatch, 9.5)
    metrics: dict[str, Any] = {}
    b = Budget(check(run_timeout_s=20.0), metrics, rec)
    with pytest.raises(HostNotReady) as exc, b.ray_window("the probes to start", param="run_timeout_s") as limit:
        assert limit == pytest.approx(20.0)
        b.host_failed("a selector was not placed within 20s")
    assert "the slowest worker start before: 2.0s" in str(exc.value) and "took 9.5s to start just now" in str(exc.value)
    w = metrics["waits"]["each"][0]
    assert w["verdict"] == "host" and w["took_s"] >= 0 and w["param"] == "run_timeout_s"
