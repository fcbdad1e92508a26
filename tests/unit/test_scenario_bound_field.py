"""A timed scenario's total bound is checklist data (`scenario_bound:`, issue 47): its steps are
the check's params, the loader refuses a step that is not one in one line, the judges read the
bound the release's params give as `scenario_bound_s`, and a release from before the field takes
the verifier's own formula. No Ray."""
from __future__ import annotations

import copy
from typing import Any

import pytest

from conformance.catalog import datafiles, scenario_bounds
from conformance.catalog.data import checklist_path, load_checklist, parse_checklist
from conformance.catalog.scenario_bounds import BOUND_PARAM, Step, fetch_stretch, judged_params, scenario_bound
from conformance.errors import UserError
from conformance.signing.entry_rules import release_scenario_bound
from conformance.timing.host_load import MAX_FACTOR


def raw_with(change: dict[str, Any]) -> dict[str, Any]:
    """The current checklist's document with some checks' `scenario_bound:` replaced (None: dropped)."""
    raw: dict[str, Any] = copy.deepcopy(datafiles.read_yaml_or_json(checklist_path(), what="checklist"))
    for entry in raw["checks"]:
        if entry["id"] in change:
            if change[entry["id"]] is None:
                entry.pop("scenario_bound", None)
            else:
                entry["scenario_bound"] = change[entry["id"]]
    return raw


def by_id(raw: dict[str, Any]) -> dict[str, Any]:
    return parse_checklist(raw).by_id()


def test_a_scenario_bound_is_the_sum_of_its_steps_over_the_checks_params() -> None:
    fr004 = load_checklist().by_id()["FR-004"]
    assert fr004.scenario == (Step("actor_ready_s"), Step("stress_round_s", "stress_rounds"))
    p = fr004.params
    assert scenario_bound(fr004) == p["actor_ready_s"] + p["stress_rounds"] * p["stress_round_s"]
    assert scenario_bounds.text(fr004.scenario) == "actor_ready_s + stress_rounds x stress_round_s"


@pytest.mark.parametrize("steps, named", [
    (["actor_ready_x"], "actor_ready_x"),
    ([{"param": "actor_ready_s", "times": "rounds_x"}], "rounds_x"),
])
def test_a_step_that_is_not_one_of_the_checks_params_is_refused_in_one_line(steps: list[Any], named: str) -> None:
    with pytest.raises(UserError, match=rf"^checklist: FR-003\.scenario_bound: {named} is not one of its params") as exc:
        by_id(raw_with({"FR-003": steps}))
    assert "\n" not in str(exc.value)


@pytest.mark.parametrize("steps", [[], [{"param": "actor_ready_s"}], [{"param": "actor_ready_s", "times": 0}],
                                   [{"param": "actor_ready_s", "times": 2, "more": 1}], [3]])
def test_the_schema_refuses_a_malformed_scenario_bound(steps: list[Any]) -> None:
    with pytest.raises(UserError, match=r"scenario_bound"):
        by_id(raw_with({"FR-003": steps}))


def test_a_release_from_before_the_field_takes_the_verifiers_own_formula() -> None:
    own = load_checklist().by_id()
    old = by_id(raw_with({c.id: None for c in own.values() if c.scenario}))
    for cid, c in own.items():
        assert old[cid].scenario == c.scenario, cid


def test_judges_read_the_bound_the_params_give_and_a_longer_fetch_timeout_grows_it() -> None:
    checks = load_checklist().by_id()
    fr012 = checks["FR-012"]
    given = scenario_bound(fr012)
    assert judged_params(fr012)[BOUND_PARAM] == given
    fewer = {**fr012.params, "actor_ready_s": 1}   # a teeth row's override moves the bound with its step
    assert judged_params(fr012, fewer)[BOUND_PARAM] == given - 3 * (fr012.param("actor_ready_s") - 1)
    assert BOUND_PARAM not in judged_params(fr012, {k: v for k, v in fr012.params.items() if k != "actor_ready_s"})
    fetch = fr012.param("rdt_fetch_timeout_s")
    assert release_scenario_bound(fr012, {"transport": {"rdt_fetch_timeout_s": fetch + 7}}) == given + 7
    assert fetch_stretch(fr012.params, fetch * 100) == fetch * (MAX_FACTOR - 1.0)   # never past the widest stretch
    assert fetch_stretch(fr012.params, True) == 0.0 and fetch_stretch(checks["FR-001"].params, fetch + 7) == 0.0
    assert release_scenario_bound(checks["TR-019"], {}) is None   # a declared scenario_bound_s is not a formula
