"""Recovery area, pure parts: holder audits, scenario timing and the Recovery section, and the
bounds the checklist states (no Ray cluster)."""
from __future__ import annotations

import dataclasses
import time
from types import SimpleNamespace
from typing import Any

import pytest

from conformance.areas.recovery.audit import audit, disjointness_problems, holder_problems
from conformance.areas.recovery.bounds import scenario_bound
from conformance.areas.recovery.scenario import recorder_for, render_markdown, scenario
from conformance.catalog.data import load_checklist
from conformance.errors import UserError
from conformance.timing.clock import Clock, ScenarioFailed
from conformance.timing.timeouts import CheckTimeout

ENV = "SIMACC_VISIBLE_DEVICES"


def state(ids: list[str], env: str | None = None, node: str = "n1", view: Any = "same") -> dict[str, Any]:
    env_value = ",".join(ids) if env is None else env
    return {"assigned": ids, "env_set": env_value is not None, "env_value": env_value, "node_id": node,
            "manager_view": list(ids) if view == "same" else view, "pid": 1}


def test_a_correct_holder_has_no_problems() -> None:
    assert holder_problems(state(["2"]), ENV, 1, ["0", "1", "2", "3"]) == []


@pytest.mark.parametrize("s, fragment", [
    (state(["2"], env="3"), "SIMACC_VISIBLE_DEVICES='3' but Ray assigned ['2']"),
    (state(["2"], env=""), "SIMACC_VISIBLE_DEVICES='' but Ray assigned"),
    (state(["2"], view=["1"]), "the manager reports visible ids ['1']"),
    (state(["2"], view="raised KeyError: x"), "raised KeyError"),
    (state([]), "expected 1 device"),
    (state(["9"]), "not devices of its node"),
])
def test_holder_problems_name_what_disagrees(s: dict[str, Any], fragment: str) -> None:
    problems = holder_problems(s, ENV, 1, ["0", "1", "2", "3"])
    assert any(fragment in p for p in problems), problems


def test_unset_variable_is_a_problem_for_a_holder() -> None:
    s = state(["1"])
    s["env_set"], s["env_value"] = False, None
    assert any("is not set" in p for p in holder_problems(s, ENV))


def test_disjointness_per_node_and_coverage() -> None:
    ok = [state(["0"]), state(["1"]), state(["0"], node="n2")]
    assert disjointness_problems(ok, ENV) == []
    dup = [state(["0"]), state(["1"]), state(["1"], env="1")]
    assert "held by more than one live holder" in disjointness_problems(dup, ENV)[0]
    partial = [state(["0"]), state(["1"])]
    assert "held by no live holder" in disjointness_problems(partial, ENV, ["0", "1", "2"])[0]


def test_audit_uses_the_variable_as_what_a_process_really_uses() -> None:
    # Ray assigned 0 and 1, but both processes see device 1: an id collision (after a restart).
    problems = audit([state(["0"], env="1"), state(["1"])], ENV, ["0", "1"])
    assert any("but Ray assigned ['0']" in p for p in problems)
    assert any("more than one live holder" in p for p in problems)


# ------------------------------------------------------------------------------ scenario timing
class FakeRun:
    """What scenario recording needs of a run: its sections and its config's stash."""

    def __init__(self) -> None:
        self.sections: dict[str, Any] = {}
        self.config = SimpleNamespace(stash=pytest.Stash())

    def publish(self, section: str, value: dict[str, Any]) -> None:
        self.sections[section] = value


def test_wait_for_fails_naming_the_scenario_and_the_elapsed_time() -> None:
    clock = Clock("FR-000", "demo", 10)
    with pytest.raises(ScenarioFailed) as exc:
        clock.wait_for(lambda: False, "the impossible", bound_s=0.3, explain=lambda: "still nothing")
    msg = str(exc.value)
    assert msg.startswith("[demo] the impossible: not within 0s") and "last seen: still nothing" in msg
    assert "elapsed 0." in msg and "of the 10s bound" in msg


def test_wait_for_returns_the_value_and_never_outlives_the_scenario_bound() -> None:
    clock = Clock("FR-000", "demo", 0.2)
    assert clock.wait_for(lambda: 42, "x") == 42
    t0 = time.monotonic()
    with pytest.raises(ScenarioFailed):
        clock.wait_for(lambda: False, "never", bound_s=60)
    assert time.monotonic() - t0 < 1.0


def test_scenarios_are_recorded_in_metrics_and_the_recovery_section() -> None:
    run, metrics = FakeRun(), {}
    with scenario(run, metrics, "FR-900", "fine", 5) as clock:
        clock.mark("step")
    with pytest.raises(ScenarioFailed):
        with scenario(run, metrics, "FR-901", "broken", 5) as clock:
            raise clock.fail("devices lost")
    with pytest.raises(CheckTimeout) as exc:
        with scenario(run, metrics, "FR-902", "hung", 5):
            raise CheckTimeout("FR-902: no result within the hard timeout of 1s")
    assert "scenario 'hung' still running after" in str(exc.value) and "treated as a hang" in str(exc.value)
    data = run.sections["Recovery"]["data"]
    assert [(s["check"], s["outcome"]) for s in data["scenarios"]] == [
        ("FR-900", "ok"), ("FR-901", "fail"), ("FR-902", "timeout")]
    assert data["failed"] == 2 and metrics["scenarios"]["fine"]["steps_s"]["step"] >= 0
    assert "| FR-902 | hung | 5 |" in run.sections["Recovery"]["markdown"]
    assert len(recorder_for(run).records) == 3
    assert recorder_for(FakeRun()).records == []   # per run, not per process


def test_a_scenario_over_its_bound_fails_even_if_every_step_passed() -> None:
    with pytest.raises(ScenarioFailed, match="longer than its bound"):
        with scenario(None, None, "FR-903", "slow", 0.05):
            time.sleep(0.1)


def test_render_markdown_is_a_table() -> None:
    md = render_markdown([])
    assert "| check | scenario | bound s | elapsed s | outcome | detail |" in md and "over 0 scenario(s)" in md


# ------------------------------------------------------------------------------ bounds vs checklist
def recovery_checks() -> dict[str, Any]:
    return {c.id: c for c in load_checklist().checks if c.area == "recovery"}


def test_every_recovery_check_states_the_bounds_it_enforces() -> None:
    """Each recovery check carries its time bounds as params, and its requirement states each."""
    checks = recovery_checks()
    assert all(c.scenario for c in checks.values()), "every recovery check times its scenario (scenario_bound:)"
    for cid, c in checks.items():
        bounds = {k: v for k, v in c.params.items() if k.endswith("_s")}
        assert bounds, f"{cid}: no time bound in params"
        missing = [f"{k}={v:g}" for k, v in bounds.items() if f"{v:g} s" not in c.requirement]
        assert not missing, f"{cid}: the requirement does not state the bound(s) {missing} s the check enforces"


def test_shared_bounds_agree_across_the_checks_that_carry_them() -> None:
    block = load_checklist().area_params["recovery"]
    for cid, c in recovery_checks().items():
        for name in c.shared:
            assert c.param(name) == block[name], f"{cid}.{name}"
    assert recovery_checks()["FR-003"].param("actor_ready_s") == block["actor_ready_s"]


def test_a_scenario_bound_names_the_param_its_check_lacks() -> None:
    fr003 = recovery_checks()["FR-003"]
    assert scenario_bound(fr003) == 3 * fr003.param("actor_ready_s") + fr003.param("device_release_s")
    lacking = dataclasses.replace(fr003, params={k: v for k, v in fr003.params.items() if k != "device_release_s"})
    with pytest.raises(UserError, match=r"FR-003\.params\.device_release_s: missing"):
        scenario_bound(lacking)


def test_hard_timeouts_are_a_backstop_above_each_scenario_bound() -> None:
    for cid, c in recovery_checks().items():
        bound = scenario_bound(c)   # every step's bound is among the check's own params
        assert c.timeout_s and c.timeout_s > bound, f"{cid}: timeout_s {c.timeout_s}, scenario bound {bound}"


def test_device_recovery_musts_are_tagged_for_beta() -> None:
    checks = recovery_checks()
    tagged = {cid for cid, c in checks.items() if "device-recovery" in c.tags and c.level == "MUST"}
    assert tagged == {"FR-001", "FR-002", "FR-003", "FR-004", "FR-005"}


def test_stopping_a_cluster_forgets_the_drivers_rdt_state(monkeypatch: pytest.MonkeyPatch) -> None:
    """Ray 2.60 keeps RDT monitor state across ray.shutdown(); the next session's monitor thread
    then dies on stale refs and no failed transfer is ever aborted (FR-014 after a shape switch)."""
    import sys
    import types

    from conformance.cluster.manager import forget_rdt_state

    fake = types.SimpleNamespace(global_worker=types.SimpleNamespace(_rdt_manager=object()))
    monkeypatch.setitem(sys.modules, "ray._private.worker", fake)
    forget_rdt_state()
    assert fake.global_worker._rdt_manager is None


def test_a_scenario_the_host_could_not_run_is_recorded_as_the_hosts_not_failed() -> None:
    from conformance.timing.host_load import HostNotReady

    metrics: dict[str, Any] = {}
    with pytest.raises(HostNotReady):
        with scenario(None, metrics, "FR-001", "a holder's start", 30):
            raise HostNotReady("a bare worker did not start within 60s just now")
    recorded = metrics["scenarios"]["a holder's start"]
    assert recorded["outcome"] == "host"


class _Answers:
    """A stand-in budget whose wait on Ray's machinery hands back what the stand-in holders
    answered (no Ray): the wave and its bound are Ray's plumbing; what is judged here is the
    census and the record it leaves, and that the start is awaited as Ray's (param, plugin code)."""

    def __init__(self) -> None:
        self.waited_for: list[tuple[str, str | None, bool]] = []

    def started(self, clock: Clock, refs: Any, what: str, bound_s: float | None = None, *,
                param: str | None = None, runs_plugin_code: bool = False) -> Any:
        self.waited_for.append((what, param, runs_plugin_code))
        return list(refs)


def _start(budget: _Answers) -> Any:
    from conformance.areas.recovery.devices import Started
    return Started(budget, Clock("FR-001", "demo", 10))  # type: ignore[arg-type]  # a stand-in budget


def _holder(answer: dict[str, Any]) -> Any:
    return SimpleNamespace(state=SimpleNamespace(remote=lambda: answer))


def _node(node_id: str, count: int) -> Any:
    from conformance.areas.recovery.devices import DeviceNode
    return DeviceNode("SIMACC", ENV, None, node_id, count)


def test_the_shared_start_takes_each_nodes_census_in_one_wave_and_records_it() -> None:
    """FR-001..FR-004's one start (hold_every_device): every node's holders answer in one get, each
    node's record gets its holders' records and its id set."""
    from conformance.areas.recovery.audit import holder_records
    from conformance.areas.recovery.devices import hold_every_device

    nodes = [_node("aaaaaaaa11", 2), _node("bbbbbbbb22", 2)]
    answers = {d.node_id: [state([str(i)], node=d.node_id) for i in range(2)] for d in nodes}
    holders = {nid: [_holder(a) for a in states_] for nid, states_ in answers.items()}
    by_node: dict[str, dict[str, Any]] = {d.node_id: {"node": d.node_id[:8]} for d in nodes}
    budget = _Answers()
    before, universe = hold_every_device(_start(budget), nodes, holders, by_node)
    # one wave, named as before the merge, awaited as Ray's worker start that runs the plugin's code
    assert budget.waited_for == [("4 holders on 2 node(s) to start", "actor_ready_s", True)]
    assert before == answers and universe == {d.node_id: ["0", "1"] for d in nodes}
    for d in nodes:
        assert by_node[d.node_id] == {"node": d.node_id[:8], "before": holder_records(answers[d.node_id]),
                                      "universe": ["0", "1"]}


def test_the_shared_start_fails_on_a_node_whose_devices_are_wrong_before_any_failure() -> None:
    from conformance.areas.recovery.devices import census_of, hold_every_device

    nodes = [_node("aaaaaaaa11", 2), _node("bbbbbbbb22", 2)]
    twice = [state(["0"], node="bbbbbbbb22"), state(["0"], node="bbbbbbbb22")]   # one id held twice
    assert census_of(twice, ENV)[1] == ["0"] and "held by more than one live holder" in census_of(twice, ENV)[0][0]
    holders = {"aaaaaaaa11": [_holder(state([str(i)], node="aaaaaaaa11")) for i in range(2)],
               "bbbbbbbb22": [_holder(s) for s in twice]}
    with pytest.raises(ScenarioFailed, match="before any failure, the holders' devices on node bbbbbbbb were already wrong"):
        hold_every_device(_start(_Answers()), nodes, holders, {d.node_id: {} for d in nodes})
