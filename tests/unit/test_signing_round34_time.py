"""Held-out round 34, W1 and W1b (redteam/FINDINGS.md): time that did not pass, and a wait on Ray's
machinery whose bound was the vendor's word. Held with teeth on reports/example's own records (a
real 2-node simulated certification): the real record accepted, the round's forgery refused."""
from __future__ import annotations

import copy
import json
from functools import lru_cache
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parents[2]
EXAMPLE = ROOT / "reports" / "example" / "report.json"
HANG_S = 600.0
FR012 = "source-dies-before-fetch on simacc"


@lru_cache(maxsize=1)
def _example() -> dict[str, Any]:
    return json.loads(EXAMPLE.read_text())


@lru_cache(maxsize=1)
def _example_checklist() -> Any:
    """The checklist of the release the example ran under (a data edit before `make release` and
    `make example` leaves these tests as they were)."""
    from conformance.catalog.releases import default_path, load_release_data, load_releases

    path = default_path()
    return load_release_data(load_releases(path)[_example()["suite"]["version"]], path)[0]


def _entry(check_id: str) -> dict[str, Any]:
    return copy.deepcopy(next(c for c in _example()["checks"] if c["id"] == check_id))


def _problems(entry: dict[str, Any]) -> list[str]:
    from conformance.signing.evidence import entry_problems

    check = next(c for c in _example_checklist().checks if c.id == entry["id"])
    return entry_problems(entry, check, _example()["manifest"])


def _hang(entry: dict[str, Any], *, longer: bool) -> dict[str, Any]:
    """W1's edit: FR-012's simacc scenario hung HANG_S; the first wait on Ray after its plugin wait
    that names no param (a 60 s start of the transfer peers) took it, bound and grant widened to
    cover it; the plugin wait's and the scenario's exclusion with it; `longer`: the check's
    duration_s too (W1b leaves it at 7 s). Returns the widened Ray wait."""
    m = entry["metrics"]
    each = m["waits"]["each"]
    pw = next(w for w in each if w["owner"] == "plugin" and w["what"] == FR012)
    rw = next(w for w in each[each.index(pw) + 1:] if w["owner"] == "ray" and "param" not in w)
    rw["took_s"] = round(rw["took_s"] + HANG_S, 3)
    rw["bound_s"] = rw["granted_s"] = round(rw["took_s"] + 60.0, 3)
    ex = round(pw["excluded_s"] + HANG_S, 3)
    pw.update(excluded_s=ex, took_s=round(pw["took_s"] + HANG_S, 3), granted_s=round(pw["bound_s"] + ex, 3))
    sc = m["scenarios"][FR012]
    sc.update(elapsed_s=round(sc["elapsed_s"] + HANG_S, 3), bound_s=pw["granted_s"])
    sc["steps_s"]["excluded_s"] = ex
    if longer:
        entry["duration_s"] = round(entry["duration_s"] + HANG_S, 3)
    return rw


def test_every_real_check_is_accepted_by_both_rules() -> None:
    """reports/example, and the older releases' real runs the repo keeps (data.6's durations): no
    step records more time than its check took, no paramless wait on Ray a bound past the suite's."""
    from conformance.signing.entry_rules import duration_problems
    from conformance.timing.owned import wait_problems

    for path in (EXAMPLE, ROOT / "tests" / "support" / "real_run_data6" / "report.json"):
        for c in json.loads(path.read_text())["checks"]:
            m = c.get("metrics") or {}
            assert duration_problems(m, c.get("duration_s")) == [], (path.parent.name, c["id"])
            assert not [p for p in wait_problems(m.get("waits"), c["params"], passed=c["outcome"] == "pass")
                        if "names no param" in p], (path.parent.name, c["id"])


def test_example_fr012_is_accepted() -> None:
    assert _problems(_entry("FR-012")) == []


def test_w1_a_paramless_wait_on_ray_widened_to_back_a_hang_is_refused() -> None:
    """W1: the 60 s start recorded bound and grant 662 s, took 602 s, durations +600 s."""
    entry = _entry("FR-012")
    rw = _hang(entry, longer=True)
    problems = _problems(entry)
    assert any(f"'{rw['what']}' names no param and records bound_s {rw['bound_s']:g}" in p
               and "at most 120 s (ACTOR_START_S)" in p for p in problems), problems


def test_w1_the_same_wait_left_at_its_bound_but_past_its_grant_is_refused() -> None:
    """The hang's wait keeps its 60 s bound and grant: a pass's wait on Ray took past its grant."""
    entry = _entry("FR-012")
    rw = _hang(entry, longer=True)
    rw["bound_s"] = rw["granted_s"] = 60.0
    assert any(f"took {rw['took_s']:g} s of the 60 s it was granted" in p for p in _problems(entry)), _problems(entry)


def test_w1b_a_hang_inside_a_seven_second_check_is_refused() -> None:
    """W1b: a 604 s scenario and a 602 s wait inside a check whose duration_s is 7.2 s."""
    entry = _entry("FR-012")
    rw = _hang(entry, longer=False)
    rw["bound_s"] = rw["granted_s"] = 120.0   # within the nominal rule: the duration rule alone
    rw["took_s"] = 119.0
    problems = [p for p in _problems(entry) if "time that did not pass" in p]
    assert problems and f"longer than the check's own duration_s {entry['duration_s']:g} s" in problems[0], _problems(entry)


@pytest.mark.parametrize("where", ["steps_s", "wait", "left_to_ray"])
def test_any_spent_figure_longer_than_the_check_is_refused(where: str) -> None:
    entry = _entry("FR-012")
    m, longer = entry["metrics"], entry["duration_s"] + 1.0
    if where == "steps_s":
        m["scenarios"][FR012]["steps_s"]["excluded_s"] = longer
    elif where == "wait":
        m["waits"]["each"][0]["excluded_s"] = longer
    else:
        m["per_node"] = {"a": {"started_s": longer}}
    assert any("time that did not pass" in p for p in _problems(entry))


def test_a_check_recording_no_duration_is_not_judged_by_it() -> None:
    from conformance.signing.entry_rules import duration_problems

    assert duration_problems({"waits": {"each": [{"took_s": 5.0}]}}, None) == []
    assert duration_problems({"waits": {"each": [{"took_s": 5.0, "bound_s": 60.0}]}}, 5.005) == []
    assert duration_problems({"waits": {"each": [{"took_s": 5.0}]}}, 4.0) != []


def test_the_code_constants_are_the_named_nominal_bounds_verify_reads() -> None:
    from conformance.checks.device import test_device_live
    from conformance.rdt.pool import START_TIMEOUT_S
    from conformance.run.machinery import ACTOR_START_S
    from conformance.run.release import RELEASE_S
    from conformance.timing.owned import RAY_NOMINAL_S

    assert ACTOR_START_S == START_TIMEOUT_S == RAY_NOMINAL_S["ACTOR_START_S"]
    assert RELEASE_S == RAY_NOMINAL_S["RELEASE_S"]
    assert test_device_live.GET_TIMEOUT_S == RAY_NOMINAL_S["GET_TIMEOUT_S"]


def test_a_paramless_wait_on_ray_in_a_failed_check_is_not_held_to_the_nominal() -> None:
    """A wave's reference run records the wave's stretched bound without a param; the check fails."""
    from conformance.timing.owned import wait_problems

    waits = {"each": [{"owner": "ray", "what": "the same wave through the suite's reference transport",
                       "bound_s": 400.0, "granted_s": 400.0, "took_s": 390.0, "verdict": "host"}], "count": 1}
    assert wait_problems(waits, {}, passed=False) == []
    assert wait_problems(waits, {}, passed=True) != []
