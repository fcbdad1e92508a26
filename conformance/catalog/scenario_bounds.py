"""A timed scenario's total bound, as checklist data (`scenario_bound:`; issue 47): pure.

A recovery check runs its scenario under one total bound, the sum of its steps' bounds, each one
of the check's params (the shared ones are explained in conformance/areas/recovery/bounds.py):
`scenario_bound: [{param: actor_ready_s, times: 3}, device_release_s]` is 3 x actor_ready_s +
device_release_s. The formula was a table of lambdas here, beside the checklist; as data it is the
release's, shown in docs/checklist.md, and a teeth row's param override moves it with its steps.

Judges read the bound as the param `scenario_bound_s` (`judged_params`), the name under which the
transport checks declare theirs, so a judge never needs the formula: the live check and `verify`
both hand it the bound the release's params give.
"""
from __future__ import annotations

import dataclasses
from contextvars import ContextVar
from dataclasses import dataclass
from typing import Any, Callable, Iterable, Mapping, Protocol, Sequence, TypeVar

from conformance.errors import UserError
from conformance.timing.host_load import MAX_FACTOR

BOUND_PARAM = "scenario_bound_s"   # the param a judge reads a scenario's total bound from
# A check that names it among its params runs its transfers under Ray's RDT fetch timeout, which
# the suite lowers on the clusters it starts (FR-012..016): its bound grows with a longer one.
FETCH_PARAM = "rdt_fetch_timeout_s"


@dataclass(frozen=True)
class Step:
    """One step of a scenario: a param's bound, `times` over (a count, or another param's value)."""

    param: str
    times: int | str = 1

    def bound(self, param: Callable[[str], float]) -> float:
        count = param(self.times) if isinstance(self.times, str) else float(self.times)
        return count * param(self.param)

    def text(self) -> str:
        return self.param if self.times == 1 else f"{self.times} x {self.param}"

    def as_data(self) -> str | dict[str, int | str]:
        """As the checklist writes it."""
        return self.param if self.times == 1 else {"param": self.param, "times": self.times}


class Timed(Protocol):
    """What these functions read of a check (conformance.catalog.data.Check, which imports this
    module while it parses: no import back)."""

    @property
    def id(self) -> str: ...
    @property
    def params(self) -> dict[str, Any]: ...
    @property
    def scenario(self) -> tuple[Step, ...] | None: ...
    def param(self, name: str) -> Any: ...


T = TypeVar("T", bound=Timed)


def parse(check_id: str, raw: Iterable[Any] | None, params: Mapping[str, Any]) -> tuple[Step, ...] | None:
    """A check's `scenario_bound:` (schema-valid) as steps; a name that is not one of the check's
    params is a one-line data error naming it (None: the check times no scenario)."""
    if raw is None:
        return None
    steps = tuple(Step(item) if isinstance(item, str) else Step(item["param"], item["times"]) for item in raw)
    for step in steps:
        for name in (step.param, step.times):
            if isinstance(name, str) and name not in params:
                raise UserError(f"checklist: {check_id}.scenario_bound: {name} is not one of its params "
                                f"(expected one of: {', '.join(sorted(params)) or 'none declared'})")
    return steps


def total(steps: Iterable[Step], param: Callable[[str], float]) -> float:
    return float(sum(step.bound(param) for step in steps))


def text(steps: Iterable[Step]) -> str:
    """The formula as the docs show it: `3 x actor_ready_s + device_release_s`."""
    return " + ".join(step.text() for step in steps)


def scenario_bound(check: Timed) -> float:
    """The total bound of `check`'s scenario (the catalog Check as the run loaded it); a check
    that times no scenario, or a step whose param it lacks, is a data error naming it."""
    if check.scenario is None:
        raise UserError(f"checklist: {check.id}.scenario_bound: missing (the check times a scenario)")
    return total(check.scenario, lambda name: float(check.param(name)))


def judged_params(check: Timed, params: Mapping[str, Any] | None = None) -> dict[str, Any]:
    """The params a judge of `check` reads: `params` (the check's own by default) and, for a check
    that times a scenario, its total bound under them as `scenario_bound_s` (left out where they do
    not give it: a release whose check predates a step's param)."""
    out = dict(check.params if params is None else params)
    if check.scenario is not None and BOUND_PARAM not in out:
        try:
            out[BOUND_PARAM] = total(check.scenario, lambda name: _number(out[name]))
        except (KeyError, TypeError, ValueError):
            pass
    return out


def fetch_stretch(params: Mapping[str, Any], recorded: Any) -> float:
    """How far a scenario's bound grows on a run that recorded a longer RDT fetch timeout than the
    release's (a vendor's cluster configured longer, or the suite's own stretch on a loaded host;
    conformance.areas.recovery.context.TransferRecoveryCtx.bound): the difference, never more than
    the suite stretches any wait on Ray's machinery (x MAX_FACTOR; a cluster configured longer is
    not applicable); 0 for a check that runs under no fetch timeout, or a run that recorded none."""
    try:
        release, fetch = _number(params[FETCH_PARAM]), _number(recorded)
    except (KeyError, TypeError):
        return 0.0
    return min(max(fetch - release, 0.0), release * (MAX_FACTOR - 1.0))


def _number(value: Any) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise TypeError(f"{value!r} is not a number")
    return float(value)


# Set while the verifier's own checklist is read for a release before the field: a checklist that
# names no scenario bound itself (a test's own data folder) is then taken as it is, not filled again.
_FILLING: ContextVar[bool] = ContextVar("scenario_bounds_filling", default=False)


def before_the_field(checks: tuple[T, ...], own: Callable[[], Sequence[Timed]]) -> tuple[T, ...]:
    """A release from before the field names no scenario bound: its checks take the formula of
    the verifier's own checklist (`own`) for their id (the formulas were code then, the same for
    every release), as such a release's clusters do (conformance.signing.coverage_rule)."""
    if any(c.scenario is not None for c in checks) or _FILLING.get():
        return checks
    token = _FILLING.set(True)
    try:
        steps = {c.id: c.scenario for c in own() if c.scenario is not None}
    finally:
        _FILLING.reset(token)
    return tuple(dataclasses.replace(c, scenario=steps[c.id]) if c.id in steps else c for c in checks)  # type: ignore[type-var]  # T is a dataclass (Check)
