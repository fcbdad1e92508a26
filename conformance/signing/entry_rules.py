"""The rules one check's record is held to, whatever its judge (pure): the figures of its metrics.

verify's evidence line (conformance/signing/evidence.py, entry_problems) applies these to every
check of a report; each reads one part of the record and says what it contradicts:

  plausible  implausible_figures: no duration (`*_s`) or bandwidth (`*_gbps`) is negative, not
             finite or (a bandwidth) past MAX_PLAUSIBLE_GBPS
  scenarios  scenario_problems / release_scenario_bound: a pass has every scenario `ok` within a
             bound no larger than the release's params give; exclusion_problems: time a scenario
             left out for Ray's machinery is time its recorded waits left out
  durations  duration_problems: no time a step of the check records spent (a scenario's
             elapsed_s and steps_s, a wait's took_s and excluded_s, a figure left to Ray) is
             longer than the check's own duration_s
  failures   recorded_failures: no `problems`, `wrong` or `wrong_pairs` records a failure
  reference  reference_problems: a figure measured against a manifest reference records it
  tests      test_area_problems: a check's tests are tests of its own area

Split from evidence.py (issue 47) so each module keeps one job: this one the per-record figure
rules, evidence.py the report-level lines that apply them.
"""
from __future__ import annotations

import math
from typing import Any, Mapping

from conformance.catalog import scenario_bounds
from conformance.catalog.data import Check
from conformance.catalog.strict_input import as_list, as_map
from conformance.report import judges
from conformance.sanitize import terminal
from conformance.timing.owned import LEFT_TO_RAY

_DURATION, _BANDWIDTH = "_s", "_gbps"


# knob: 100 TB/s, above any link or memory one transfer or collective crosses (HBM3e moves about
# 8 TB/s a device) by more than ten times: a bandwidth beyond it is no measurement (issue 43's
# held-out H08 recorded 1e300 GB/s); a bound of plausibility, not a threshold a plugin meets
MAX_PLAUSIBLE_GBPS = 1e5


def implausible_figures(metrics: object, under: str = "", limit: int = 3) -> list[str]:
    """Durations and bandwidths (any number under a key ending in _s or _gbps, at any depth) that
    are negative or not finite, and bandwidths beyond MAX_PLAUSIBLE_GBPS: no clock runs backwards,
    no link moves negative bytes, none moves a petabyte a second."""
    found: list[str] = []
    stack: list[tuple[str, Any, str]] = [(under, metrics, "")]   # (path, value, the figure's unit: _s, _gbps or '')
    while stack and len(found) < limit:
        path, value, unit = stack.pop()
        if isinstance(value, Mapping):
            for k, v in value.items():
                key = str(k)
                stack.append((f"{path}.{key}" if path else key, v,
                              unit or next((u for u in (_DURATION, _BANDWIDTH) if key.endswith(u)), "")))
        elif isinstance(value, list):
            stack.extend((f"{path}[{i}]", v, unit) for i, v in enumerate(value))
        elif unit and isinstance(value, (int, float)) and not isinstance(value, bool) \
                and (not math.isfinite(value) or value < 0 or (unit == _BANDWIDTH and value > MAX_PLAUSIBLE_GBPS)):
            found.append(f"{path} = {value!r}")
    return found


def release_scenario_bound(check: Check, metrics: Mapping[str, Any]) -> float | None:
    """The most a scenario of `check` may be given under the release's params (its steps,
    `scenario_bound:`), grown by a longer RDT fetch timeout the run recorded as the live check
    grows it (conformance.catalog.scenario_bounds); None for a check that times no scenario, or a
    release whose params do not give its bound (a check that predates a step's param)."""
    if check.scenario is None:
        return None
    bound = scenario_bounds.judged_params(check).get(scenario_bounds.BOUND_PARAM)
    if not isinstance(bound, float):
        return None
    return bound + scenario_bounds.fetch_stretch(check.params, as_map(metrics.get("transport")).get(scenario_bounds.FETCH_PARAM))


def _excluded_s(scenario: Mapping[str, Any]) -> float | str:
    """The seconds a scenario left out of its bound for Ray's own machinery (an actor's start:
    conformance/timing/clock.Clock.exclude records them as steps_s.excluded_s and adds them to
    bound_s), or why that record cannot be believed: it is a finite, non-negative figure no larger
    than the scenario's own elapsed time (time that did not pass cannot have gone to Ray)."""
    value = as_map(scenario.get("steps_s")).get("excluded_s", 0.0)
    elapsed = scenario.get("elapsed_s")
    if not isinstance(value, (int, float)) or isinstance(value, bool) or not math.isfinite(value) or value < 0:
        return f"records steps_s.excluded_s {terminal(repr(value), limit=20)}, not a non-negative number of seconds"
    if isinstance(elapsed, (int, float)) and not isinstance(elapsed, bool) and value > elapsed + 0.001:
        return f"records steps_s.excluded_s {value:g}, more than its elapsed {elapsed:g} s"
    return float(value)


# bound_s and excluded_s are each recorded to 1 ms: their sum may differ from the release's bound
# plus the exclusion by two half-milliseconds and a float's last bit (a good FR-019 run: 277.348
# against 275 + 2.347, refused by a 1 ms tolerance)
ROUNDED_TWICE_S = 0.002


def scenario_problems(metrics: Mapping[str, Any], most: float | None = None) -> list[str]:
    """Scenarios a pass records as failed or over their bound (conformance/areas/recovery/scenario.py:
    the scenario is `ok` only when it ended within bound_s), or given a bound larger than the
    release's params give (`most`) plus the seconds it recorded leaving out for Ray's machinery."""
    scenarios = metrics.get("scenarios")
    if scenarios is None:
        return []
    if not isinstance(scenarios, Mapping):
        return ["metrics.scenarios is not an object"]
    problems = []
    for name, sc in scenarios.items():
        sc = as_map(sc)
        outcome, elapsed, bound = sc.get("outcome"), sc.get("elapsed_s"), sc.get("bound_s")
        excluded = _excluded_s(sc)
        if isinstance(excluded, str):
            problems.append(f"scenario {terminal(name, limit=60)} {excluded}")
        elif most is not None and isinstance(bound, (int, float)) and not isinstance(bound, bool) \
                and bound > most + excluded + (ROUNDED_TWICE_S if excluded else 1e-6):
            problems.append(f"scenario {terminal(name, limit=60)} records bound_s {bound:g}, more than the "
                            f"{most:g} s the release's params give"
                            + (f" plus the {excluded:g} s it left out for Ray's machinery" if excluded else ""))
        elif outcome != "ok":
            problems.append(f"scenario {terminal(name, limit=60)} records outcome {terminal(repr(outcome), limit=40)}")
        elif not isinstance(elapsed, (int, float)) or not isinstance(bound, (int, float)) \
                or isinstance(elapsed, bool) or isinstance(bound, bool) \
                or elapsed > bound + 0.001:  # elapsed is rounded to 1 ms
            problems.append(f"scenario {terminal(name, limit=60)} took {terminal(repr(elapsed), limit=20)} s "
                            f"of its {terminal(repr(bound), limit=20)} s bound")
    return problems


def scenario_exclusions(metrics: object) -> list[float]:
    """The seconds each recorded scenario left out of its bound for Ray's machinery, at any depth
    (`scenarios.<name>.steps_s.excluded_s`, a transport check's `scenario.excluded_s` per type)."""
    found: list[float] = []
    stack: list[Any] = [metrics]
    while stack:
        value = stack.pop()
        if isinstance(value, Mapping):
            for key, inner in value.items():
                if key == "scenarios" and isinstance(inner, Mapping):
                    scenarios = [x for x in inner.values() if isinstance(x, Mapping)]
                elif key == "scenario" and isinstance(inner, Mapping):
                    scenarios = [inner]
                else:
                    stack.append(inner)
                    continue
                for sc in scenarios:
                    raw = as_map(sc.get("steps_s")).get("excluded_s", sc.get("excluded_s", 0.0))
                    if isinstance(raw, (int, float)) and not isinstance(raw, bool) and math.isfinite(raw):
                        found.append(float(raw))
        elif isinstance(value, list):
            stack.extend(value)
    return found


def exclusion_problems(metrics: Mapping[str, Any]) -> list[str]:
    """Time a check's scenarios left out of their bounds for Ray's machinery is time its recorded
    waits on Ray left out (conformance.run.budget: each such wait records its `excluded_s`), never
    more: a bound cannot stretch by an exclusion no recorded wait spent. Where the waits record
    kept only the first waits (`count` above the ones listed), each one not listed may account
    for as much as the largest listed exclusion."""
    claimed = [x for x in scenario_exclusions(metrics) if x > 0]
    if not claimed:
        return []
    waits = as_map(metrics.get("waits"))
    each = [as_map(e) for e in as_list(waits.get("each"))]
    spent = [float(e["excluded_s"]) for e in each if isinstance(e.get("excluded_s"), (int, float))
             and not isinstance(e.get("excluded_s"), bool) and math.isfinite(e["excluded_s"]) and e["excluded_s"] > 0]
    count = waits.get("count")
    unlisted = max(int(count) - len(each), 0) if isinstance(count, int) and not isinstance(count, bool) else 0
    allowed = sum(spent) + unlisted * max(spent, default=0.0)
    slack = 0.002 * (len(claimed) + len(spent))   # each figure is rounded to 1 ms
    if sum(claimed) <= allowed + slack:
        return []
    return [f"its scenarios left {sum(claimed):.3f} s out of their bounds for Ray's machinery, but its recorded "
            f"waits on Ray left out {allowed:.3f} s: a bound stretched by time no recorded wait spent"]


# The figures of a check's metrics that are time its steps spent (at any depth): a scenario's
# elapsed_s and every steps_s entry, a wait's took_s and excluded_s, the seconds left to Ray
# (conformance.timing.owned.LEFT_TO_RAY). Bounds, grants and params are not: they may exceed it.
SPENT_KEYS = ("elapsed_s", "took_s", "excluded_s", *LEFT_TO_RAY)
# knob: the check's duration_s and each figure are rounded to 1 ms, and pytest's clock reads each
# phase around the test's own reads: no threshold, a rounding
DURATION_SLACK_S = 0.01


def spent_figures(metrics: object) -> list[tuple[str, float]]:
    """(path, seconds) of every figure of `metrics` that is time a step spent (SPENT_KEYS, and
    everything under a steps_s), at any depth."""
    found: list[tuple[str, float]] = []
    stack: list[tuple[str, Any, bool]] = [("", metrics, False)]
    while stack:
        path, value, spent = stack.pop()
        if isinstance(value, Mapping):
            for k, v in value.items():
                key = str(k)
                stack.append((f"{path}.{key}" if path else key, v, spent or key == "steps_s" or key in SPENT_KEYS))
        elif isinstance(value, list):
            stack.extend((f"{path}[{i}]", v, spent) for i, v in enumerate(value))
        elif spent and isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value):
            found.append((path, float(value)))
    return found


def duration_problems(metrics: object, duration_s: object, limit: int = 2) -> list[str]:
    """Time a step of the check recorded spending that its own duration_s cannot hold (held-out
    round 34, W1b: a 604 s scenario and a 602 s wait inside a check of 7.3 s). duration_s is every
    phase of every test of the check, every attempt (conformance.report.results: setup, call and
    teardown, so a fixture's waits recorded in the check's budget are inside it); the run's window
    holds the checks' durations (trust.window_problems). A release before per-check durations, or a
    check recording none, is not judged here (the schema line names a malformed one)."""
    if not isinstance(duration_s, (int, float)) or isinstance(duration_s, bool) or not math.isfinite(duration_s):
        return []
    found = [f"{terminal(path, limit=100)} = {value:g} s" for path, value in spent_figures(metrics)
             if value > duration_s + DURATION_SLACK_S][:limit]
    return [f"records {', '.join(found)}, longer than the check's own duration_s {duration_s:g} s: time that did not "
            "pass inside it"] if found else []


FAILURE_KEYS = ("problems", "wrong", "wrong_pairs")


def recorded_failures(metrics: object, limit: int = 3) -> list[str]:
    """Paths of `problems` / `wrong` / `wrong_pairs` figures that record a failure (anything but
    empty, zero or null): the checks that record them fail whenever one is not."""
    found: list[str] = []
    stack: list[tuple[str, Any]] = [("", metrics)]
    while stack and len(found) < limit:
        path, value = stack.pop()
        if isinstance(value, Mapping):
            for k, v in value.items():
                key, here = str(k), f"{path}.{k}" if path else str(k)
                if key in FAILURE_KEYS and v not in (None, 0, [], {}) and not isinstance(v, bool):
                    found.append(f"{terminal(here, limit=80)} = {terminal(repr(v), limit=80)}")
                else:
                    stack.append((here, v))
        elif isinstance(value, list):
            stack.extend((f"{path}[{i}]", v) for i, v in enumerate(value))
    return found


def reference_problems(check: Check, metrics: Mapping[str, Any], manifest: Mapping[str, Any]) -> list[str]:
    """A judged figure's reference that is not the manifest's (dropped, or another value)."""
    judge = judges.judge_for(check)
    if judge is None or not all(n in metrics for n in judge.needs):
        return []  # nothing was measured (a fail before measuring, not applicable)
    problems = []
    for metric, path in judge.references:
        declared, recorded = judges.path_of(manifest, path), metrics.get(metric)
        same = (declared is None and recorded is None) or (
            isinstance(declared, (int, float)) and isinstance(recorded, (int, float))
            and not isinstance(recorded, bool) and math.isclose(float(declared), float(recorded), rel_tol=1e-9))
        if not same:
            problems.append(f"records {metric} {terminal(repr(recorded), limit=30)} but the manifest's {path} is "
                            f"{terminal(repr(declared), limit=30)}: judged without the reference it was measured against")
    return problems


def test_area_problems(tests: object, area: str) -> list[str]:
    """Tests that are not in the area's folder of the checks (`<area>/test_*.py::…`, directly: a
    folder nested in it or around it is a vendor's, not the suite's)."""
    if not isinstance(tests, list):
        return []  # the selection line judges a check without tests
    foreign = [t for t in tests if not isinstance(t, str) or t.split("::")[0].replace("\\", "/").split("/")[:-1] != [area]]
    return [f"names test(s) outside its area {area!r}: {terminal(', '.join(map(str, foreign[:2])), limit=160)}"] \
        if foreign else []
