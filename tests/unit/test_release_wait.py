"""The one wait for a resource's units to be free again (conformance.run.release), through a check's
budget (Budget.released): Ray's accounting of dead actors' units is Ray's machinery (stretched by
the run's measurement, a fresh sample before blaming, "not judged: host" when the host ran out),
recorded in metrics.waits as verify judges it; a unit Ray reports still held by an ALIVE actor or a
placement group is a leak, never the host's. Issue 42 ("time is owned"): the bare 20 s loop it
replaces was neither stretched nor recorded.

A stand-in for Ray's view (units free after `frees_s`, the holders Ray lists) and fake
worker-start samples: what is checked is whose time the wait is and what the check's record says;
the teeth rows run the real thing (tests/teeth.yaml)."""
from __future__ import annotations

import time
from typing import Any

import pytest

from conformance.catalog.data import Check
from conformance.run import machinery, release
from conformance.run.budget import Budget, HostNotReady
from conformance.run.release import Holder, NotReleased, holders, leak
from conformance.timing import host_load
from conformance.timing.host_load import MachineryRecord
from conformance.timing.owned import wait_problems

NOMINAL = host_load.NOMINAL_S["worker_start"]
PARAMS = {"device_release_s": 0.3}
NODE = "a1" * 28


# ------------------------------------------------------------------ Ray's tables, read (pure)
def actor(state: str = "ALIVE", required: dict[str, float] | None = None, node: str = NODE) -> dict[str, Any]:
    return {"ActorID": "ab" * 16, "ActorClassName": "Holder", "Name": "", "State": state, "NodeID": node,
            "RequiredResources": {"SIMACC": 1.0, "CPU": 0.0} if required is None else required}


def group(state: str = "CREATED", nodes: tuple[str, ...] = (NODE,)) -> dict[str, Any]:
    return {"placement_group_id": "cd" * 18, "name": "pg", "state": state,
            "bundles": {i: {"SIMACC": 1.0} for i in range(len(nodes))},
            "bundles_to_node_id": dict(enumerate(nodes))}


def test_what_ray_reports_alive_holding_units_is_named_and_nothing_else() -> None:
    assert [h.kind for h in holders([actor()], [group()], "SIMACC")] == ["actor", "placement group"]
    assert holders([actor("DEAD"), actor("RESTARTING"), actor(required={"CPU": 1.0})], [], "SIMACC") == []
    assert holders([], [group("REMOVED"), group("PENDING")], "SIMACC") == []
    # an actor in a group takes its units from the group's bundle: its resources name the group
    [inside] = holders([actor(required={"SIMACC_group_0_cdcd": 1.0, "SIMACC_group_cdcd": 1.0})], [], "SIMACC")
    assert inside.units == 1.0
    # on one node: only what is placed there
    other = "b2" * 28
    assert holders([actor(node=other)], [], "SIMACC", node_id=NODE) == []
    [half] = holders([], [group(nodes=(NODE, other))], "SIMACC", node_id=NODE)
    assert half.units == 1.0 and holders([], [group(nodes=(NODE, other))], "SIMACC")[0].units == 2.0


def test_a_task_still_running_is_named_from_its_events_and_an_ended_or_retried_one_is_not() -> None:
    """Ray's task events come in pieces (a task's info in one, its state changes in others, each
    attempt apart): merged by task and attempt, the latest attempt decides; only a normal task on a
    worker and not ended holds its resources (an actor task's are its actor's)."""
    task = "cd" * 12
    info = {"TaskID": task, "Attempt": 0, "Type": "NORMAL_TASK", "Name": "hold", "RequiredResources": {"SIMACC": 1.0}}
    running = {"TaskID": task, "Attempt": 0, "NodeID": NODE, "States": ["PENDING_NODE_ASSIGNMENT", "RUNNING"]}
    [row] = release.running_tasks([info, running])
    [held] = holders([], [], "SIMACC", tasks=[row])
    assert held.describe() == "task hold [cdcdcdcdcdcd] on node a1a1a1a1 holding 1"
    assert holders([], [], "SIMACC", node_id="b2" * 28, tasks=[row]) == []
    assert release.running_tasks([info, running, {"TaskID": task, "Attempt": 0, "States": ["FINISHED"]}]) == []
    # its first attempt's worker died and the retry has not started: the retry is the task's state now
    assert release.running_tasks([info, running, {**info, "Attempt": 1},
                                  {"TaskID": task, "Attempt": 1, "States": ["PENDING_NODE_ASSIGNMENT"]}]) == []
    assert release.running_tasks([{**info, "Type": "ACTOR_TASK"}, running]) == []
    assert release.running_tasks([{**info, "RequiredResources": {}}, running]) != []   # holds nothing: holders skips it
    assert holders([], [], "SIMACC", tasks=release.running_tasks([{**info, "RequiredResources": {}}, running])) == []


def test_a_leak_is_a_failure_naming_its_holders_and_nothing_alive_is_none() -> None:
    held = holders([actor()], [], "SIMACC")
    found = leak(held, "SIMACC", "every device to be free after the check")
    assert isinstance(found, AssertionError) and isinstance(found, NotReleased)
    assert "actor Holder [abababababab] on node a1a1a1a1 holding 1" in str(found) and "a leak" in str(found)
    assert leak([], "SIMACC", "x") is None and leak(None, "SIMACC", "x") is None   # unread: no owner named
    many = [Holder("actor", f"{i:032x}", "Holder", 1.0, NODE) for i in range(6)]
    assert "and 2 more" in str(leak(many, "SIMACC", "x"))


def test_a_wait_for_some_units_lets_the_other_holders_live() -> None:
    """FR-001's wait for the one freed unit (units = free before + 1) while the node's other holders
    live on: they account for no missing unit, so they are no leak; one alive holder more is."""
    others = [Holder("actor", f"{i:032x}", "Holder", 1.0, NODE) for i in range(3)]
    assert leak(others, "SIMACC", "x", may_hold=3.0) is None
    assert isinstance(leak(others + others[:1], "SIMACC", "x", may_hold=3.0), NotReleased)


def test_the_killed_holders_unit_late_beside_live_holders_is_the_hosts_and_one_more_alive_a_leak(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """FR-001's shape: 4 devices, 4 holders, one killed; the wait is for 1 unit free. Three holders
    Ray reports alive are the scenario's others (no leak): a host that ran out is the host's. A
    fourth alive holder (the killed one Ray still reports alive) is a leak however slow the host."""
    sample(monkeypatch, NOMINAL * 4)
    monkeypatch.setattr(release, "available", lambda resource, node_id=None: 0.0)
    monkeypatch.setattr(release, "total", lambda resource, node_id=None: 4.0)
    alive = [Holder("actor", f"{i:032x}", "Holder", 1.0, NODE) for i in range(4)]
    monkeypatch.setattr(release, "live_holders", lambda resource, node_id=None: alive[:3])
    budget, metrics = budget_of(MachineryRecord())
    with pytest.raises(HostNotReady):
        budget.released("SIMACC", "the killed holder's device", param="device_release_s", node_id=NODE, units=1)
    assert metrics["waits"]["each"][0]["verdict"] == "host"
    monkeypatch.setattr(release, "live_holders", lambda resource, node_id=None: alive)
    budget, metrics = budget_of(MachineryRecord())
    with pytest.raises(NotReleased, match="a leak"):
        budget.released("SIMACC", "the killed holder's device", param="device_release_s", node_id=NODE, units=1)


# ------------------------------------------------------------------ the wait, through a check's budget
class View:
    """Ray's view as the wait reads it: every unit free `frees_s` after the start (None: never),
    and the holders Ray lists meanwhile."""

    def __init__(self, frees_s: float | None, held: list[Holder] | None = None) -> None:
        self.t0, self.frees_s, self.held = time.monotonic(), frees_s, held or []
        self.asked: list[str | None] = []

    def available(self, resource: str, node_id: str | None = None) -> float:
        free = self.frees_s is not None and time.monotonic() - self.t0 >= self.frees_s
        return 4.0 if free else 3.0

    def total(self, resource: str, node_id: str | None = None) -> float:
        return 4.0

    def holders(self, resource: str, node_id: str | None = None) -> list[Holder]:
        self.asked.append(node_id)
        return self.held


@pytest.fixture
def view(monkeypatch: pytest.MonkeyPatch) -> Any:
    def install(frees_s: float | None, held: list[Holder] | None = None) -> View:
        v = View(frees_s, held)
        monkeypatch.setattr(release, "available", v.available)
        monkeypatch.setattr(release, "total", v.total)
        monkeypatch.setattr(release, "live_holders", v.holders)
        return v
    return install


def sample(monkeypatch: pytest.MonkeyPatch, seconds: float) -> list[float]:
    taken: list[float] = []

    def fake(timeout_s: float, *, machinery: MachineryRecord) -> float:
        taken.append(seconds)
        machinery.note("worker_start", seconds)
        return seconds
    monkeypatch.setattr(machinery, "measure_worker_start", fake)
    return taken


def budget_of(rec: MachineryRecord) -> tuple[Budget, dict[str, Any]]:
    check = Check(id="FR-001", title="t", area="recovery", level="MUST", requirement="r", rationale="r",
                  since="0.1.0", params=dict(PARAMS))
    metrics: dict[str, Any] = {}
    return Budget(check, metrics, rec), metrics


def test_units_freed_late_on_a_loaded_host_are_rays_time_stretched_and_recorded(view: Any) -> None:
    """Freed 0.35 s after the kill: past the nominal 0.3 s device_release_s (the old loop's kind of
    failure on a loaded host), within it stretched x2 by the run's measured worker start."""
    rec = MachineryRecord()
    rec.note("worker_start", NOMINAL * 2)
    budget, metrics = budget_of(rec)
    view(0.35)
    budget.released("SIMACC", "every device to be free after the scenario", param="device_release_s")
    [w] = metrics["waits"]["each"]
    assert (w["owner"], w["param"], w["bound_s"], w["factor"], w["verdict"]) == \
        ("ray", "device_release_s", 0.3, 2.0, "met")
    assert w["granted_s"] == pytest.approx(0.6) and 0.35 <= w["took_s"] <= w["granted_s"]
    assert wait_problems(metrics["waits"], PARAMS, passed=True) == []


def test_a_unit_still_held_by_an_alive_actor_is_a_leak_however_slow_the_host(
        monkeypatch: pytest.MonkeyPatch, view: Any) -> None:
    """The holder never ended: the fresh sample says the host got x4 slower, the wait goes on for the
    difference, and then the holder Ray reports alive makes it a leak, never "not judged: host"."""
    taken = sample(monkeypatch, NOMINAL * 4)
    budget, metrics = budget_of(MachineryRecord())
    v = view(None, holders([actor()], [], "SIMACC"))
    with pytest.raises(NotReleased, match=r"node c's devices .*still held by what Ray reports alive \(actor Holder"):
        budget.released("SIMACC", "node c's devices to be free after its blockers ended", param="device_release_s",
                        node_id=NODE, units=4)
    assert len(taken) == 1 and v.asked == [NODE]
    [w] = metrics["waits"]["each"]
    assert (w["verdict"], w["factor"]) == ("ran out", 4.0) and w["granted_s"] == pytest.approx(1.2)
    assert wait_problems(metrics["waits"], PARAMS, passed=False) == []


def test_units_nothing_alive_holds_on_a_host_that_ran_out_are_the_hosts(
        monkeypatch: pytest.MonkeyPatch, view: Any) -> None:
    sample(monkeypatch, NOMINAL * 4)
    budget, metrics = budget_of(MachineryRecord())
    view(None)
    with pytest.raises(HostNotReady, match="every device to be free.*the host was too slow for Ray"):
        budget.released("SIMACC", "every device to be free after the check", param="device_release_s")
    assert metrics["waits"]["each"][0]["verdict"] == "host"


def test_units_nothing_alive_holds_on_a_host_that_did_its_part_still_fail(
        monkeypatch: pytest.MonkeyPatch, view: Any) -> None:
    """As the old loop failed: the host is as fast as the bound assumed, so what holds the units is
    not Ray's accounting (a task still running the plugin's code), never excused as the host."""
    sample(monkeypatch, NOMINAL / 2)
    budget, metrics = budget_of(MachineryRecord())
    view(None)
    with pytest.raises(NotReleased, match=r"3 of 4 SIMACC free; nothing Ray reports alive holds them.*"
                                          r"the host did its part"):
        budget.released("SIMACC", "every device to be free after the check", bound_s=0.2)
    [w] = metrics["waits"]["each"]
    assert (w["verdict"], w.get("param"), w["bound_s"]) == ("ran out", None, 0.2)


def test_a_release_inside_a_scenario_is_left_out_of_its_bound_and_verify_agrees(view: Any) -> None:
    """FR-008's blockers end inside the scenario: the seconds their units take to come back are
    Ray's, recorded as its wait and left out of the plugin's scenario, whose record keeps verify's
    rule (a plugin wait's grant is its bound plus what it left to Ray's machinery)."""
    budget, metrics = budget_of(MachineryRecord())
    clock = budget.scenario("reschedule-pool-work-from-b-to-c", 0.5)
    view(0.2)
    budget.released("SIMACC", "node c's devices to be free after its blockers ended", param="device_release_s",
                    node_id=NODE, units=4, clock=clock)
    clock.mark("released")
    scenario, freed = metrics["waits"]["each"]
    assert (scenario["owner"], freed["owner"]) == ("plugin", "ray")
    assert scenario["excluded_s"] >= 0.2 and scenario["granted_s"] == pytest.approx(0.5 + scenario["excluded_s"], abs=0.002)
    assert wait_problems(metrics["waits"], PARAMS, passed=True, plugin_bound_s=0.5) == []


def test_harnesses_outside_a_checks_budget_record_in_the_check_running(view: Any) -> None:
    """The RDT pools and the collective members free their units with the run's record
    (await_released): the check running then (its body, its teardown) keeps the wait."""
    budget, metrics = budget_of(MachineryRecord())
    view(0.0)
    with budget.active():
        release.await_released("SIMACC", "every device to be free after the transport's endpoints ended",
                               machinery=budget.machinery)
    [w] = metrics["waits"]["each"]
    assert (w["owner"], w["bound_s"], w["verdict"]) == ("ray", release.RELEASE_S, "met")
    release.await_released("SIMACC", "outside any check", machinery=MachineryRecord())   # recorded nowhere
    assert metrics["waits"]["count"] == 1


def test_the_finding_hook_is_asked_only_when_the_wait_ended_without_its_answer(
        monkeypatch: pytest.MonkeyPatch) -> None:
    asked: list[int] = []

    def finding() -> AssertionError | None:
        asked.append(1)
        return None
    assert machinery.await_machinery(lambda limit: "answered", 1.0, "x", machinery=MachineryRecord(),
                                     finding=finding) == "answered"
    assert asked == []
