"""Whose time a wait is, and the record of every wait a check made (pure, apart from the recorder).

A check waits for two kinds of things, and the contract decides which:

* the plugin's time: what the vendor's code does (a transfer through its transport, a collective
  op, a device coming back, a restart's constructor claiming a unit). Judged against the
  checklist's bound as the release states it: never stretched, whatever the host.
* Ray's and the host's time: what Ray's own machinery does before the plugin is asked anything
  (a worker or actor starting, a placement group placed, a node registering). Its nominal bound is
  stretched by what the run measured of that machinery (timing/host_load), a fresh sample is taken
  before anyone is blamed, and a wait that still runs out is "not judged: host", with both
  measurements, never a failed check of the plugin.

Every wait is recorded as a `Wait` in the check's `metrics.waits` (conformance.run.budget writes
them), and `wait_problems` judges that record against the release's params: the live check and
`verify` read the same rule. A pass cannot record a plugin wait longer than the bound the release
gives it, a plugin bound that is not the release's, or a stretch wider than any the suite grants.
"""
from __future__ import annotations

import math
from contextvars import ContextVar
from dataclasses import asdict, dataclass
from typing import Any, Callable, Literal, Mapping

from conformance.timing.host_load import MAX_FACTOR

Owner = Literal["plugin", "ray"]
OWNERS: tuple[Owner, ...] = ("plugin", "ray")
# what a wait ended as: within its bound, ran out of it, the host's failure, or an error raised
VERDICTS = ("met", "ran out", "host", "error")
# knob: the longest fresh worker-start sample any stretched wait may add (conformance.run.machinery)
RESAMPLE_S = 60.0
# knob: how many waits one check records in full (a wave of hundreds records its first ones and a count)
MAX_RECORDED = 40
# rounding of recorded seconds (1 ms) and the slack a judge allows for it
_SLACK_S = 0.002
# The figures a check records of its seconds that went to Ray's machinery inside a figure of the
# plugin's (the recovery judges leave them out of that figure's bound: judges.common.left_to_ray),
# by the param their waits on Ray are bounded by: each is what its recorded waits took.
LEFT_TO_RAY = {"released_s": "device_release_s", "crash_waited_s": "device_release_s",
               "started_s": "actor_ready_s", "retried_s": "actor_ready_s", "registered_s": "rejoin_s"}
# knob: how often a call into a collective backend still pending looks for actors it asked Ray to
# start; the slice in which they were first seen is left to Ray with their births' own wait
# (conformance.collective.context.CollectiveContext.op), so a plugin wait's excluded_s may exceed
# the births' recorded time by one slice each
BIRTH_SLICE_S = 2.0
# The nominal bounds of the waits on Ray's machinery that name no param, by the constant that gives
# each: conformance.run.machinery.ACTOR_START_S (a new actor's first answer) and conformance.run
# .release.RELEASE_S (Ray's accounting of dead actors' units) are these values, and the device
# checks' GET_TIMEOUT_S (a live task's result: tests/unit hold it to this one) is the third.
RAY_NOMINAL_S = {"ACTOR_START_S": 120.0, "RELEASE_S": 20.0, "GET_TIMEOUT_S": 60.0}
# The params whose release values a check passes as such a wait's bound without naming them: the
# recovery transfer peers' and blockers' starts and survivors' states (actor_ready_s), DP-017's task
# (task_timeout_s), TL-013/014's groups Ray may place (group_timeout_s).
RAY_UNNAMED_PARAMS = ("actor_ready_s", "task_timeout_s", "group_timeout_s")


@dataclass
class Wait:
    """One wait of a check: whose time, what for, the bound the release's params give it (and the
    param's name when one gives it), what it was granted (the plugin: the bound; Ray: the bound
    stretched), how long it took and how it ended."""
    owner: Owner
    what: str
    bound_s: float
    granted_s: float
    took_s: float | None = None
    verdict: str = "met"
    param: str | None = None
    factor: float = 1.0
    excluded_s: float = 0.0     # a plugin scenario's seconds left to Ray's machinery (owned by "ray" waits)

    def as_json(self) -> dict[str, Any]:
        out = {k: (round(v, 3) if isinstance(v, float) else v) for k, v in asdict(self).items()}
        return {k: v for k, v in out.items() if v is not None and not (k == "excluded_s" and v == 0.0)}


# The recorder of the check running now (conformance.run.budget sets it for the check's body):
# the waits the areas' helpers make for it (an actor start in the RDT pool) land in its record.
RECORDER: ContextVar[Callable[[Wait], None] | None] = ContextVar("conformance_wait_recorder", default=None)


def record(wait: Wait) -> None:
    """Hand `wait` to the running check's record (nothing outside a check)."""
    recorder = RECORDER.get()
    if recorder is not None:
        recorder(wait)


def _number(value: object) -> float | None:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
        return None
    return float(value)


def seconds_backed(wait: Mapping[str, Any]) -> float:
    """What one recorded wait on Ray backs of the time a scenario left out of its bound: what it
    took, or its grant's growth beyond its bound stretched by its factor, whichever is more (a wave
    given more on a loaded host, Budget.Wave.more, leaves out of its scenario what it uses of it,
    and runs before session 32 left out all of it). The run's judges and verify (conformance.signing.ray_seconds) read this one rule."""
    def seconds(key: str, default: object = None) -> float | None:
        value = _number(wait.get(key, default))
        return value if value is not None and value >= 0 else None
    took, bound, granted, factor = seconds("took_s"), seconds("bound_s"), seconds("granted_s"), seconds("factor", 1.0)
    grew = granted - bound * factor if granted is not None and bound is not None and factor is not None else 0.0
    return max(took or 0.0, grew)


# The param a plugin wait that names none was bounded by: the scenario bound of the transport and
# workload checks (UsageCtx.clock, the workload checks' scenarios), whose waits name it since issue 43;
# reports before that name none, and their waits are held to it all the same.
PLUGIN_PARAM = "scenario_bound_s"


def plugin_bound(params: Mapping[str, Any], plugin_bound_s: float | None) -> tuple[float, str] | None:
    """(the bound a plugin wait that names no param may have, what gives it): `plugin_bound_s`
    (a recovery scenario's, from its checklist steps: conformance/catalog/scenario_bounds), else
    the check's PLUGIN_PARAM; None when the release gives neither."""
    if plugin_bound_s is not None:
        return plugin_bound_s, "the scenario bound its params give"
    value = _number(params.get(PLUGIN_PARAM))
    return (value, PLUGIN_PARAM) if value is not None else None


def ray_nominal_s(params: Mapping[str, Any]) -> tuple[float, str]:
    """(the widest nominal bound a wait on Ray's machinery that names no param may record, what
    gives it): the largest of the suite's constants (RAY_NOMINAL_S) and the release's values of the
    check's params the suite passes unnamed (RAY_UNNAMED_PARAMS). Round 34's W1: such a wait recorded
    bound 662 s (its code constant 60 s) to back a 600 s hang of its scenario."""
    named = [(v, k) for k, v in RAY_NOMINAL_S.items()]
    named += [(float(v), k) for k in RAY_UNNAMED_PARAMS if (v := _number(params.get(k))) is not None]
    return max(named)


def wait_problems(waits: object, params: Mapping[str, Any], passed: bool, plugin_bound_s: float | None = None) -> list[str]:
    """What a check's recorded waits contradict under the release's `params` (pure; the live
    check's budget and verify read this one rule):

    * every wait names a known owner and a finite, non-negative bound, grant and time;
    * a plugin wait is granted its bound and no more (plus what it recorded leaving to Ray's
      machinery), and a bound taken from a param is that param's value in the release; a plugin
      wait that names no param is bounded by no more than the one its check's scenario has
      (`plugin_bound`: issue 43's held-out G26 widened both, bound and grant);
    * a wait on Ray's machinery is granted at most its bound stretched the widest the suite
      stretches, plus one fresh sample; in a pass, one that names no param records a bound no
      wider than the suite's own nominal ones (ray_nominal_s): its grant and time are held to it
      (same_measurement's stretch rule, signing/passed_waits);
    * a pass records no plugin wait that ran out or took longer than it was granted.
    """
    if waits is None:
        return []
    if not isinstance(waits, Mapping) or not isinstance(waits.get("each"), list):
        return ["metrics.waits is not a record of waits ({'each': [...], 'count': N})"]
    problems: list[str] = []
    for i, raw in enumerate(waits["each"]):
        if not isinstance(raw, Mapping):
            problems.append(f"waits[{i}] is not an object")
            continue
        what = str(raw.get("what"))[:80]
        owner, bound, granted, took = raw.get("owner"), _number(raw.get("bound_s")), _number(raw.get("granted_s")), \
            raw.get("took_s")
        excluded = _number(raw.get("excluded_s", 0.0))
        if owner not in OWNERS:
            problems.append(f"wait {what!r} names owner {owner!r}, not one of {list(OWNERS)}")
            continue
        if bound is None or granted is None or bound < 0 or granted < 0 or excluded is None or excluded < 0:
            problems.append(f"wait {what!r} records no finite non-negative bound_s, granted_s and excluded_s")
            continue
        took_s = _number(took) if took is not None else None
        if took is not None and (took_s is None or took_s < 0):
            problems.append(f"wait {what!r} records took_s {took!r}, not a non-negative number of seconds")
            continue
        param = raw.get("param")
        if param is not None:
            released = _number(params.get(str(param)))
            if released is None:
                problems.append(f"wait {what!r} names param {str(param)[:40]!r}, which the release's check does not give")
            elif not math.isclose(bound, released, rel_tol=1e-6, abs_tol=_SLACK_S):
                problems.append(f"wait {what!r} records bound_s {bound:g}, the release's {param} is {released:g}")
        own = plugin_bound(params, plugin_bound_s) if owner == "plugin" and param is None else None
        if own is not None and bound > own[0] + _SLACK_S:
            problems.append(f"the plugin's wait {what!r} records bound_s {bound:g}; the release bounds it at {own[0]:g} s "
                            f"({own[1]}), never stretched")
        if owner == "plugin":
            if granted > bound + excluded + _SLACK_S:
                problems.append(f"the plugin's wait {what!r} was granted {granted:g} s, more than its {bound:g} s bound"
                                + (f" and the {excluded:g} s it left to Ray's machinery" if excluded else ""))
            elif passed and (raw.get("verdict") == "ran out" or (took_s is not None and took_s > granted + _SLACK_S)):
                problems.append(f"the plugin's wait {what!r} took {took_s if took_s is not None else '?'} s of its "
                                f"{granted:g} s bound")
        elif passed and param is None and bound > (nominal := ray_nominal_s(params))[0] + _SLACK_S:
            problems.append(f"the wait on Ray's machinery {what!r} names no param and records bound_s {bound:g}; the "
                            f"suite bounds such a wait by at most {nominal[0]:g} s ({nominal[1]}) before its stretch")
        elif granted > bound * MAX_FACTOR + RESAMPLE_S + _SLACK_S:
            problems.append(f"the wait on Ray's machinery {what!r} was granted {granted:g} s, more than its {bound:g} s "
                            f"bound stretched x{MAX_FACTOR:g} and one {RESAMPLE_S:g} s fresh sample")
        if raw.get("verdict") not in VERDICTS:
            problems.append(f"wait {what!r} records verdict {str(raw.get('verdict'))[:20]!r}, not one of {list(VERDICTS)}")
    count = waits.get("count")
    if not isinstance(count, int) or isinstance(count, bool) or count < len(waits["each"]):
        problems.append(f"metrics.waits.count {count!r} is fewer than the {len(waits['each'])} waits it lists")
    return problems


def per_type_wait_problems(waits: object, devices: object) -> list[str]:
    """A check run on each declared device type waits on the plugin once per type for each of its
    scenarios, naming it "<scenario> on <type>" (the workload and recovery transfer checks): the
    waits it must record are every scenario named for one type on every type it exercised
    (`devices`: metrics.devices, a list of types or a record per type), never what the record kept.
    A plugin wait dropped for one type (one that ran past its bound, say) is a finding."""
    types = [str(d) for d in devices] if isinstance(devices, (list, Mapping)) else []
    if len(types) < 2 or not isinstance(waits, Mapping) or not isinstance(waits.get("each"), list):
        return []
    named = {str(w.get("what")) for w in waits["each"] if isinstance(w, Mapping) and w.get("owner") == "plugin"}
    scenarios = {what[: -len(f" on {t}")] for what in named for t in types if what.endswith(f" on {t}")}
    missing = sorted(f"{s} on {t}" for s in scenarios for t in types if f"{s} on {t}" not in named)
    if not missing:
        return []
    return [f"metrics.waits has no plugin wait {', '.join(repr(x[:80]) for x in missing[:3])}: the check waits on the "
            f"plugin for each scenario on every type it exercised ({', '.join(types)})"]
