"""Seconds a pass leaves to Ray are seconds its recorded waits on Ray took (held-out round 31).

A check leaves Ray's machinery out of the plugin's figures in two forms, and both were read on
the vendor's word:

* a figure of the seconds that went to Ray inside a figure of the plugin's (conformance.timing
  .owned.LEFT_TO_RAY: FR-001/002's released_s and crash_waited_s, FR-001/005/006's started_s and
  retried_s, the node scenarios' registered_s), which the recovery judges add to that figure's
  bound, capped only by the widest any wait is granted (x MAX_FACTOR and a fresh sample: 240 s on
  a 30 s bound). N31_01: FR-002's crash took 100 s of its 30 s bound and crash_waited_s said 99.9
  of them were Ray's, while Ray's recorded wait for the crash took 0.2 s;
* a scenario's (and its plugin wait's) excluded_s, which verify held to the plugin waits'
  excluded_s (entry_rules.exclusion_problems), a copy the vendor writes beside it. N31_04: FR-003's
  scenario 96 s past its bound, both copies raised by 100 s.

The run measures both from the waits it records in metrics.waits (conformance.run.budget: every
Budget.released/started/ray wait is timed and its time left out of the clock), so each is at most
what those waits took: a figure no more than the check's waits on Ray under its param, the
exclusions of its plugin waits no more than all its waits on Ray. A wait on Ray may back what it
took, or the time its grant grew by beyond its bound stretched by its factor (a wave given more on a
loaded host leaves out of its scenario what it used of it, and runs before session 32 all of it:
conformance.run.budget.Wave.more; every other wait is granted its stretched bound exactly). A collective
call leaves to Ray the slice in which it first saw Ray starting actors for it besides their births'
own wait (owned.BIRTH_SLICE_S each). Where the record kept only its first waits (`count` above the
ones listed), each one not listed may back as much as the largest listed: a figure, and an exclusion
of a check whose scenarios record theirs (a collective call is recorded after its births' waits:
exclusion_backing_problems). A figure of several
nodes' records (per_node) is each node's, held alike: the nodes' scenarios ran side by side, so one
node's figure may rest on another node's wait.

What this cannot see: waits invented whole. A vendor who adds waits on Ray to the record (each
within its grant: no longer than its bound stretched by the run's own factor, 30 s on FR-002's)
backs as many seconds as it invents; the record of which waits a check makes is the run's, as every
record. Said in FINDINGS.md (round 31).

Pure: one check's metrics in, problem lines out (evidence.entry_problems applies them to a pass).
"""
from __future__ import annotations

import math
from typing import Any, Mapping

from conformance.catalog.strict_input import as_list, as_map
from conformance.signing.entry_rules import scenario_exclusions
from conformance.timing.owned import BIRTH_SLICE_S, LEFT_TO_RAY, seconds_backed

ROUNDING_S = 0.002   # knob: each recorded figure is rounded to 1 ms (two roundings a pair)
# knob: what a clock wrapped around a wait reads beyond the wait's own record (the run leaves out of
# a scenario the time around each wait on Ray, read before and after it, while the wait times
# itself inside: Python between the reads, and a thread descheduled on a loaded host; make test
# s31b: good/transport-two-sided's TR-018 left 1.792 s out around waits that took 1.783 s)
WRAP_S = 0.25


def _seconds(value: object) -> float | None:
    if isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value) and value >= 0:
        return float(value)
    return None


def _backing(waits: Mapping[str, Any], param: str | None, slice_s: float, unlisted_too: bool = True) -> tuple[float, int]:
    """(the seconds the check's recorded waits on Ray can back, how many waits that is): those
    bounded by `param` (every one when None), each what it took or its grant's growth beyond its
    bound stretched by its factor (a wave given more time: Budget.Wave.more), whichever is more,
    plus `slice_s`; with `unlisted_too`, each wait counted but not listed
    as much as the largest listed."""
    each = [as_map(w) for w in as_list(waits.get("each"))]
    backs = []
    for w in each:
        if w.get("owner") != "ray" or (param is not None and w.get("param") != param):
            continue
        backs.append(seconds_backed(w) + slice_s)
    count = waits.get("count")
    unlisted = count - len(each) if isinstance(count, int) and not isinstance(count, bool) and count > len(each) else 0
    unlisted = unlisted if unlisted_too else 0
    return sum(backs) + unlisted * max(backs, default=0.0), len(backs) + unlisted


def _records(metrics: Mapping[str, Any]) -> list[tuple[str, Mapping[str, Any]]]:
    """The check's own record and each node's (metrics.per_node), by name."""
    out: list[tuple[str, Mapping[str, Any]]] = [("", metrics)]
    per_node = metrics.get("per_node")
    if isinstance(per_node, Mapping):
        out += [(f"per_node.{str(node)[:8]}.", rec) for node, rec in per_node.items() if isinstance(rec, Mapping)]
    return out


def figure_problems(metrics: Mapping[str, Any]) -> list[str]:
    """Each record's figures left to Ray under one param add up to no more than the check's
    recorded waits on Ray under that param took."""
    waits = as_map(metrics.get("waits"))
    problems: list[str] = []
    for where, rec in _records(metrics):
        by_param: dict[str, list[tuple[str, float]]] = {}
        for name, param in LEFT_TO_RAY.items():
            value = _seconds(rec.get(name))
            if value:
                by_param.setdefault(param, []).append((name, value))
        for param, figures in by_param.items():
            claimed = sum(v for _, v in figures)
            backed, n = _backing(waits, param, 0.0)
            if claimed > backed + ROUNDING_S * (len(figures) + n) + WRAP_S * n:
                names = " + ".join(f"{where}{name} {v:g}" for name, v in figures)
                problems.append(f"{names} s left to Ray's machinery, but its recorded waits on Ray bounded by {param} "
                                f"took {backed:.3f} s: seconds no recorded wait spent")
    return problems[:3]


def exclusion_backing_problems(metrics: Mapping[str, Any], slice_s: float = 0.0) -> list[str]:
    """The seconds its plugin waits left out of their bounds for Ray's machinery (excluded_s) are
    no more than its recorded waits on Ray took (each with `slice_s` more). Waits counted but not
    listed back them only in a check whose scenarios record what they left out: a scenario's plugin
    wait is noted when it starts (conformance.run.budget.Budget.scenario), so its waits on Ray may
    come after the record's cap; a collective call's is noted when it ends, after its births' waits
    (N31_12: CC-010 lists 40 of its 57 waits, and the 17 unlisted were room for 45 s invented)."""
    waits = as_map(metrics.get("waits"))
    left = [_seconds(as_map(w).get("excluded_s")) or 0.0 for w in as_list(waits.get("each"))
            if as_map(w).get("owner") == "plugin"]
    claimed = sum(left)
    if not claimed:
        return []
    backed, n = _backing(waits, None, slice_s, unlisted_too=any(x > 0 for x in scenario_exclusions(metrics)))
    if claimed <= backed + ROUNDING_S * (len(left) + n) + WRAP_S * n:
        return []
    return [f"its plugin waits left {claimed:.3f} s out of their bounds for Ray's machinery, but its recorded waits "
            f"on Ray took {backed:.3f} s: a bound stretched by time no recorded wait spent"]


def ray_seconds_problems(metrics: Mapping[str, Any], area: str) -> list[str]:
    """Both rules on one passed check's metrics (`area`: the collective's calls leave a slice each)."""
    if "waits" not in metrics:
        return []   # a release before the waits record kept neither
    slice_s = BIRTH_SLICE_S if area == "collective" else 0.0
    return figure_problems(metrics) + exclusion_backing_problems(metrics, slice_s)
