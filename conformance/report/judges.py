"""One judge per check: its recorded evidence + the release's params (+ the manifest) -> outcome.

Every check records its evidence (the raw figures, counts, bounds used, device types exercised,
what Ray observed) in its `metrics`, and its outcome is a pure function of that evidence: the
judge the checklist declares for it (`judge: <name>` in tiers/checklist.yaml, a function of its
area's judges module, `Area.judges`). The live check calls that judge to decide
(CheckContext.decide); `verify` calls the same judge again on the report, under the release's
params and the report's manifest. So a pass beside evidence that does not pass, or beside no
evidence, is found without trusting the submitter. A check whose outcome cannot be recomputed
(an exception's presence, a hang) declares `unjudged: <why>` instead, and verify lists it as
resting on the vendor's word.

Judges are pure: no Ray, no clock, no I/O. A metric that is missing, not a number, NaN or
infinite gives outcome `error` (the evidence cannot decide), never `pass`. Judges check
plausibility, not only thresholds: a count the release's params fix (`counts`: rounds,
transfers per round, cycles) recorded otherwise is a fail whatever the figures say, and
`references` names the manifest field a figure was measured against (verify compares the two).

`decides_all` says whether the evidence is the check's whole verdict. Where it is False the check
can also fail on something the evidence does not hold (a raised exception), so a `fail` beside
passing evidence is no contradiction; a `pass` beside failing evidence always is.

Releases before judges were declared in the checklist (0.1.0+data.16 and earlier) judged ten
checks by id: LEGACY keeps those, so their reports are judged as they were and no later judge is
applied to a report whose release did not declare it.
"""
from __future__ import annotations

import functools
import math
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Callable, Mapping

from conformance.catalog.scenario_bounds import judged_params

if TYPE_CHECKING:
    from conformance.catalog.data import Check

PASS, FAIL, ERROR = "pass", "fail", "error"

Evidence = Mapping[str, Any]
Decide = Callable[[Evidence, Mapping[str, Any], Mapping[str, Any]], "Verdict"]   # (evidence, params, manifest)


@dataclass(frozen=True)
class Verdict:
    outcome: str          # pass | fail | error
    reason: str | None = None


class MissingEvidence(Exception):
    """A metric the judge needs is absent or not a finite number."""


class RunManifest(dict[str, Any]):
    """The report's manifest as a judge reads it, with the one fact of the run a judge may need
    beside it: whether the run was on a cluster the suite did not start (`--conformance-ray-address`,
    as the recorded command line says: signing/trust.runs_remote; the live check: its run's
    address). On a cluster the suite started, the cluster is the manifest's (its node count, every
    node with its devices); on the vendor's own cluster it is whatever was there. Never read from
    the evidence: a record cannot say which cluster it was taken on."""

    def __init__(self, manifest: Mapping[str, Any] | None, remote: bool) -> None:
        super().__init__(manifest or {})
        self.remote = remote


def ran_remote(manifest: Mapping[str, Any]) -> bool:
    """The run was on the vendor's own cluster (RunManifest); a bare manifest: a cluster the suite
    started (the stricter reading)."""
    return bool(getattr(manifest, "remote", False))


@dataclass(frozen=True)
class Judge:
    name: str                       # the checklist's `judge:` for the checks it decides
    needs: tuple[str, ...]          # metric names it reads at the top level (missing: error)
    params: tuple[str, ...]         # param names it reads
    decides_all: bool
    decide: Decide
    counts: tuple[tuple[str, str], ...] = ()      # (metric path, param): the count the release fixes
    references: tuple[tuple[str, str], ...] = ()  # (metric, manifest path): the reference it was measured against


class JudgeTable(dict[str, Judge]):
    """An area's judges by name (its module's `JUDGES`); `@JUDGES.rule(...)` adds one."""

    def rule(self, *, needs: tuple[str, ...] = (), params: tuple[str, ...] = (), decides_all: bool = True,
             counts: tuple[tuple[str, str], ...] = (),
             references: tuple[tuple[str, str], ...] = ()) -> Callable[[Decide], Decide]:
        def wrap(fn: Decide) -> Decide:
            name = fn.__name__
            if name in self:
                raise ValueError(f"judge {name} is declared twice")
            self[name] = Judge(name, tuple(needs), tuple(params), decides_all, fn, tuple(counts), tuple(references))
            return fn
        return wrap


# The checks releases before declared judges judged by id, and the judge each used.
LEGACY: dict[str, str] = {
    "CC-010": "bus_bandwidth_against_references", "PF-002": "largest_size_against_reference_as_recorded",
    "PF-003": "transport_against_object_store_as_recorded", "PF-004": "links_as_recorded",
    "CC-008": "member_memory_growth", "CC-009": "survivors_errored_in_time",
    "FR-006": "fresh_cluster_in_time", "FR-004": "storm_ran_release_rounds",
    "TR-013": "memory_growth_per_round_as_recorded", "TR-014": "transport_query_answers_in_time_as_recorded",
}


@functools.lru_cache(maxsize=None)
def area_judges(check_id: str) -> JudgeTable:
    """The judges of the area a check id belongs to (empty for an unknown area or one without)."""
    from conformance.areas import area_of_check
    from conformance.catalog.area import load_ref

    area = area_of_check(check_id)
    if area is None or not area.judges:
        return JudgeTable()
    table = load_ref(f"{area.judges}:JUDGES")
    return table if isinstance(table, JudgeTable) else JudgeTable()


def judge_name(check: "Check") -> str | None:
    """The judge the check's release declares (or, for a release before declarations, LEGACY's)."""
    if check.judge:
        return check.judge
    if check.unjudged:
        return None
    return LEGACY.get(check.id)   # a check that declares neither: its release predates declarations


def judge_for(check: "Check") -> Judge | None:
    """The check's judge, None when its release declares none (or its judge reads params the
    release's check does not have: another definition of the check)."""
    name = judge_name(check)
    if name is None:
        return None
    found = area_judges(check.id).get(name)
    if found is None or not set(found.params) <= set(check.params):
        return None
    return found


def path_of(metrics: Mapping[str, Any], path: str) -> Any:
    value: Any = metrics
    for key in path.split("."):
        value = value.get(key) if isinstance(value, Mapping) else None
    return value


def _count_problem(j: Judge, metrics: Mapping[str, Any], params: Mapping[str, Any]) -> str | None:
    """A recorded count that is not the release's param (fewer rounds than the release asks)."""
    for metric, name in j.counts:
        got = number({metric: path_of(metrics, metric)}, metric)
        want = param_value(params, name)
        if got != want:
            return f"{metric} is {got:g} but the release's params say {name} = {want:g}"
    return None


def number(metrics: Mapping[str, Any], name: str) -> float:
    """A finite number from the metrics (bools are not numbers)."""
    value = metrics.get(name) if isinstance(metrics, Mapping) else None
    if value is None:
        raise MissingEvidence(f"metric {name} is missing")
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise MissingEvidence(f"metric {name} is not a number ({type(value).__name__})")
    if not math.isfinite(value):
        raise MissingEvidence(f"metric {name} is not finite ({value!r})")
    return float(value)


def param_value(params: Mapping[str, Any], name: str) -> float:
    """A finite number among the release's params (MissingEvidence otherwise)."""
    value = params.get(name) if isinstance(params, Mapping) else None
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
        raise MissingEvidence(f"param {name} is missing or not a finite number")
    return float(value)


def agrees(recorded: float, derived: float) -> bool:
    """A recorded derived figure equals what its own inputs give (up to rounding)."""
    return math.isclose(recorded, derived, rel_tol=1e-6, abs_tol=1e-12)


def is_median_of(figure: float, trials: list[float]) -> bool:
    """`figure` is the median of `trials` as the suite takes it (conformance/measure.py: the rate of
    the trials' median time): the middle trial for an odd count, between the two middle ones for an
    even count (the rate of their mean time lies between their rates), up to rounding."""
    if not trials:
        return False
    bw = sorted(trials)
    low, high = bw[(len(bw) - 1) // 2], bw[len(bw) // 2]
    return agrees(figure, low) or agrees(figure, high) or low <= figure <= high


def run_judge(j: Judge, check_id: str, metrics: Mapping[str, Any], params: Mapping[str, Any],
              manifest: Mapping[str, Any] | None = None, remote: bool | None = None) -> Verdict:
    """The outcome `j` gives on the recorded metrics under `params` (missing evidence: error).
    `remote`: the run was on the vendor's own cluster (None: as `manifest` says, a RunManifest or not)."""
    if remote is not None:
        manifest = RunManifest(manifest, remote)
    try:
        for name in j.needs:
            if name not in metrics:
                raise MissingEvidence(f"metric {name} is missing")
        wrong = _count_problem(j, metrics, params)
        if wrong:
            return Verdict(FAIL, f"{check_id}: {wrong}")
        verdict = j.decide(metrics, params, manifest if manifest is not None else {})
    except MissingEvidence as exc:
        return Verdict(ERROR, f"{check_id}: {exc}")
    if verdict.outcome not in (PASS, FAIL, ERROR):
        return Verdict(ERROR, f"{check_id}: judge {j.name} gave {verdict.outcome!r}")
    return verdict


def judge(check: "Check", metrics: Mapping[str, Any], manifest: Mapping[str, Any] | None = None,
          params: Mapping[str, Any] | None = None, remote: bool | None = None) -> Verdict:
    """The outcome the check's recorded metrics give under the release's params (`params`:
    others, for a test; a timed scenario's bound joins them: scenario_bounds.judged_params).
    KeyError: the check declares no judge."""
    j = judge_for(check)
    if j is None:
        raise KeyError(f"{check.id} has no judge")
    return run_judge(j, check.id, metrics, judged_params(check, params), manifest, remote)


def contradiction(check: "Check", claimed: str, metrics: Mapping[str, Any],
                  manifest: Mapping[str, Any] | None = None, remote: bool | None = None) -> Verdict | None:
    """The judge's verdict when it contradicts the claimed outcome (`pass` beside evidence that
    does not pass; a `fail` beside passing evidence that is the check's whole verdict), else None.
    Verify asks it of a submitted report; the run asks it of its own entries before writing them,
    so a report the verifier would refuse for its evidence is never written as a pass."""
    j = judge_for(check)
    if j is None or claimed not in (PASS, FAIL):
        return None
    verdict = run_judge(j, check.id, metrics, judged_params(check), manifest, remote)
    if claimed == PASS and verdict.outcome != PASS:
        return verdict
    if claimed == FAIL and verdict.outcome == PASS and j.decides_all:
        return verdict
    return None

