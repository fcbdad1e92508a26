"""diff's figures of merit: the checklist's `merit:` figures read from runs and judged for a
regression beyond the runs' spread (the rules 1-3 of conformance/signing/diff.py's docstring).

Pure: reports in, findings out. The statistics are scipy's (a one-sided bootstrap bound of the
change of a figure's statistic), never hand-written.
"""
from __future__ import annotations

import math
import statistics
import warnings
from dataclasses import dataclass, field
from typing import Any, Callable, Iterator, Mapping, Sequence, TypeGuard

from conformance.catalog import data
from conformance.catalog.ladder import PASSING

# diff's tolerance, the relative worsening a figure may show, when --tolerance is not given: chosen
# by how many runs each side has (diff.default_tolerance). Measured in docs/ci.md (session 30: four
# quiet whole certifications of one plugin, every ordered pair): one run a side at 0.1 gave 1 false
# regression in 12 pairs (PF-003 -15 %, each run's trials tight: honest runs drift apart further
# than one run's trials show, and one run a side cannot see it), at 0.2 none; two runs a side
# (runs 1-2 -- runs 3-4) none at 0.1.
DEFAULT_TOLERANCE = 0.1   # knob: two runs or more on both sides (one run a side: UNCONFIRMED beyond it)
ONE_RUN_TOLERANCE = 0.2   # knob: one run on either side: how far honest runs drift apart
DEFAULT_ALPHA = 0.05      # knob: 1 - the confidence of the change's bootstrap bound (the CLI's --alpha)
BOOTSTRAP_RESAMPLES = 4000  # knob: resamples per interval (scipy.stats.bootstrap)


@dataclass(frozen=True)
class Finding:
    kind: str  # tier | capability | outcome | removed | metric | unconfirmed | untested | host | noise | added
    regression: bool
    check: str | None
    old: Any
    new: Any
    detail: str


def checks_by_id(report: Mapping[str, Any]) -> dict[str, Mapping[str, Any]]:
    return {str(c["id"]): c for c in report["checks"]}


def is_number(value: object) -> TypeGuard[float]:
    """A finite int or float, not a bool (a TypeGuard: the caller reads it as a number)."""
    return isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)


# ---------------------------------------------------------------------------- metric paths
def resolve(metrics: object, path: str) -> dict[tuple[str, ...], Any]:
    """Every value at `path` ('.'-joined keys, '*' for every key of an object or item of a list),
    by the keys its '*'s bound to, in order."""
    out: dict[tuple[str, ...], Any] = {}

    def walk(node: object, parts: list[str], bound: tuple[str, ...]) -> None:
        if not parts:
            out[bound] = node
            return
        head, rest = parts[0], parts[1:]
        if head == "*":
            if isinstance(node, Mapping):
                for k, v in node.items():
                    walk(v, rest, bound + (str(k),))
            elif isinstance(node, list):
                for i, v in enumerate(node):
                    walk(v, rest, bound + (str(i),))
        elif isinstance(node, Mapping) and head in node:
            walk(node[head], rest, bound)

    walk(metrics, path.split("."), ())
    return out


def bind(path: str, keys: tuple[str, ...]) -> str:
    """`path` with its '*'s replaced, in order, by `keys`."""
    parts, it = path.split("."), iter(keys)
    return ".".join(next(it) if p == "*" else p for p in parts)


def _figure_value(value: object) -> tuple[float | None, list[float]]:
    """(the figure, its own trials): a number is itself; a list of numbers its median and itself."""
    if is_number(value):
        return float(value), []
    if isinstance(value, list) and value and all(is_number(v) for v in value):
        return float(statistics.median(value)), [float(v) for v in value]
    return None, []


# ---------------------------------------------------------------------------- statistics
def relative_change(before: float, after: float) -> float:
    """(after - before) / |before|; from a 0 baseline any move is infinitely large (signed)."""
    if before == 0:
        return 0.0 if after == 0 else math.copysign(math.inf, after)
    return (after - before) / abs(before)


def worse(change: float, better: str, tolerance: float) -> bool:
    return change < -tolerance if better == "higher" else change > tolerance


def change_bound(old: Sequence[Sequence[float]], new: Sequence[Sequence[float]], better: str, toward: str,
                 alpha: float) -> tuple[float, float] | None:
    """(the statistic's change NEW - OLD, its one-sided (1 - alpha) bootstrap bound on the far side
    from `toward`) (scipy.stats.bootstrap, percentile, every sample resampled on its own, a fixed
    seed: the same reports give the same answer). The statistic is, per side, median(trials) /
    median(reference) for higher-is-better trials (a bandwidth over its reference), the inverse for
    times (a speedup over the reference), or median(trials) without a reference (`old` and `new`:
    [trials] or [trials, reference]). The change is beyond the sides' own spread when the bound is
    still on the `toward` side of 0. None when a sample has fewer than 2 values (no spread to
    speak of) or the statistic is not finite."""
    import numpy as np
    from scipy.stats import bootstrap

    if any(len(x) < 2 for x in (*old, *new)):
        return None
    k = len(old)

    def side(xs: Sequence[Any], axis: int) -> Any:
        t = np.median(xs[0], axis=axis)
        if len(xs) == 1:
            return t
        r = np.median(xs[1], axis=axis)
        return t / r if better == "higher" else r / t

    def statistic(*xs: Any, axis: int = -1) -> Any:
        with np.errstate(all="ignore"):
            return side(xs[k:], axis) - side(xs[:k], axis)

    samples = tuple(np.asarray(x, dtype=float) for x in (*old, *new))
    point = float(statistic(*samples))
    if not math.isfinite(point):
        return None
    # degenerate samples (every trial equal) and extreme magnitudes are answered by the bound,
    # never by a warning on the CI's terminal
    with np.errstate(all="ignore"), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        res = bootstrap(samples, statistic, vectorized=True, paired=False, confidence_level=1 - alpha,
                        alternative="less" if toward == "lower" else "greater",
                        n_resamples=BOOTSTRAP_RESAMPLES, method="percentile", rng=np.random.default_rng(0))
    bound = float(res.confidence_interval.high if toward == "lower" else res.confidence_interval.low)
    return (point, bound) if math.isfinite(bound) else None


@dataclass(frozen=True)
class HostChange:
    """How far the host differed between OLD's runs and NEW's: the largest factor (>= 1, either
    way) by which a reference the pair recorded moved (every check's merit `references` and the
    checklist's `host_references`: host copy, Ray's object store, Ray's own timings, the factor
    the run stretched Ray's machinery by), and which reference moved so. A loaded host moves its paths both ways (the pair of
    data.18 runs 2 and 3: the host copy 2.5 times slower, Ray's object store 1.8 times faster), so
    the factor is taken either way: it is how far the host's paths moved, not which way."""

    factor: float = 1.0
    what: str = ""

    def differed(self, tolerance: float) -> bool:
        return self.factor > 1 + tolerance


def _median_at(runs: Sequence[Mapping[str, Any]], node: Callable[[Mapping[str, Any]], object], path: str) -> dict[tuple[str, ...], float]:
    """The median over `runs` of each value at `path` (a list of numbers is its median), by key;
    `node(run)` is what the path starts from (a check's metrics, or the report)."""
    per: dict[tuple[str, ...], list[float]] = {}
    for run in runs:
        for keys, v in resolve(node(run), path).items():
            value, _ = _figure_value(v)
            if value is not None:
                per.setdefault(keys, []).append(value)
    return {k: float(statistics.median(v)) for k, v in per.items()}


def host_change(checklist: data.Checklist, olds: Sequence[Mapping[str, Any]],
                news: Sequence[Mapping[str, Any]]) -> HostChange:
    """The pair's HostChange (pure): every reference recorded on both sides, compared as
    reference_findings compares them; 1.0 when none was."""
    best = HostChange()
    sources: list[tuple[str, str, Any]] = [("", path, lambda r: r) for path in checklist.host_references]
    for check in checklist.checks:
        for path in check.merit.references if check.merit else ():
            sources.append((f"{check.id} ", path, lambda r, cid=check.id: (checks_by_id(r).get(cid) or {}).get("metrics") or {}))
    for label, path, node in sources:
        old, new = _median_at(olds, node, path), _median_at(news, node, path)
        for keys, before in old.items():
            after = new.get(keys)
            if after is None or before <= 0 or after <= 0:
                continue
            factor = max(after / before, before / after)
            if factor > best.factor:
                best = HostChange(factor, f"{label}{bind(path, keys)} {before:.4g} -> {after:.4g}")
    return best


def _host_explains(fig: data.Figure, before: float, after: float, host: HostChange, tolerance: float) -> float | None:
    """The factor by which the figure got worse when the host's change explains it (None: it does
    not): the host differed (a reference moved beyond the tolerance) and the figure moved the wrong
    way by no more than the host's paths moved. Nothing on top: a transport 30 % slower per byte on
    a host whose references moved up to 18 % is still the plugin's (tests/unit/test_signing_diff.py)."""
    if not host.differed(tolerance) or before <= 0 or after <= 0:
        return None
    factor = before / after if fig.better == "higher" else after / before
    return factor if factor <= host.factor else None


@dataclass
class _Side:
    """One figure instance on one side: each run's figure; every run's recorded trials and
    reference trials (complete: every run recorded them), and the figure's own values (a
    list-valued figure's items, else the run's one value)."""

    figures: list[float] = field(default_factory=list)
    trials: list[float] = field(default_factory=list)
    refs: list[float] = field(default_factory=list)
    own: list[float] = field(default_factory=list)
    trials_complete: bool = True
    refs_complete: bool = True
    refs_any: bool = False

    @property
    def figure(self) -> float:
        return float(statistics.median(self.figures))


def _opposite(better: str) -> str:
    return "lower" if better == "higher" else "higher"


def _numbers_at(metrics: object, path: str | None, keys: tuple[str, ...]) -> list[float] | None:
    listed = resolve(metrics, bind(path, keys)).get(()) if path else None
    if isinstance(listed, list) and listed and all(is_number(v) for v in listed):
        return [float(v) for v in listed]
    return None


def _collect(runs: Sequence[Mapping[str, Any]], cid: str, fig: data.Figure) -> dict[tuple[str, ...], _Side]:
    sides: dict[tuple[str, ...], _Side] = {}
    for run in runs:
        check = checks_by_id(run).get(cid)
        if check is None:
            continue
        metrics = check.get("metrics") or {}
        for keys, value in resolve(metrics, fig.metric).items():
            figure, own = _figure_value(value)
            side = sides.setdefault(keys, _Side())
            if figure is None:
                continue
            side.figures.append(figure)
            side.own.extend(own or [figure])
            trials, refs = _numbers_at(metrics, fig.trials, keys), _numbers_at(metrics, fig.reference, keys)
            side.trials.extend(trials or [])
            side.trials_complete &= trials is not None
            side.refs.extend(refs or [])
            side.refs_complete &= refs is not None
            side.refs_any |= refs is not None
    return sides


def _samples(fig: data.Figure, old: _Side, new: _Side) -> tuple[list[list[float]], list[list[float]], str, str]:
    """(OLD's samples, NEW's, the statistic's better direction, what they are): the recorded trials
    (and the reference's, when both sides have them) when both sides recorded them, else the
    figure's own values (one per run for a number)."""
    if fig.trials and old.trials_complete and new.trials_complete:
        tb = fig.trials_better or fig.better
        if old.refs_complete and new.refs_complete and fig.reference:
            return [old.trials, old.refs], [new.trials, new.refs], "higher", "trials and their references'"
        if not (old.refs_any or new.refs_any):
            return [old.trials], [new.trials], tb, "trials"
    return [old.own], [new.own], fig.better, "values" if len(old.figures) == len(old.own) else "trials"


def _references_moved(old: _Side, new: _Side, tolerance: float) -> str | None:
    """Why a fraction cannot be trusted to tell the plugin from the host (None: it can): its
    reference was not recorded on both sides (PF-002 against the declared link), or moved beyond
    the tolerance. Another reference of its check that moved is not its: CC-010's star moved up to
    119 % between runs while the host copy its fraction is of held."""
    if not (old.refs_complete and new.refs_complete and old.refs and new.refs):
        return "no reference measured in the same run on both sides"
    ref_moved = relative_change(statistics.median(old.refs), statistics.median(new.refs))
    return f"its same-run reference {_pct(ref_moved)}" if abs(ref_moved) > tolerance else None


def sibling_change(cid: str, siblings: Sequence[str], keys: tuple[str, ...], olds: Sequence[Mapping[str, Any]],
                   news: Sequence[Mapping[str, Any]]) -> HostChange:
    """How far the check's own references at the figure's keys moved between the sides (either
    way, as HostChange): PF-001's host copy of the same size beside its object store (pure)."""
    def node(run: Mapping[str, Any]) -> Any:
        return (checks_by_id(run).get(cid) or {}).get("metrics") or {}

    best = HostChange()
    for path in siblings:
        if path.count("*") != len(keys):
            continue
        before, after = _median_at(olds, node, path).get(keys), _median_at(news, node, path).get(keys)
        if before is None or after is None or before <= 0 or after <= 0:
            continue
        factor = max(after / before, before / after)
        if factor > best.factor:
            best = HostChange(factor, f"{cid} {bind(path, keys)} {before:.4g} -> {after:.4g}")
    return best


def _host_explanation(fig: data.Figure, old: _Side, new: _Side, host: HostChange, tolerance: float,
                      sibling: HostChange = HostChange()) -> str | None:
    """Why a figure's worsening is the host's (None: it is the plugin's): nothing in the same run
    normalises it (normalised_by 'host', or a fraction whose references did not hold) and it got
    worse by no more than the host's paths moved (HostChange); or a fraction whose own reference
    held while another reference of its check at the same keys (`sibling`: PF-001's host copy of
    the same size) moved at least as far as the fraction got worse. Seen in make test (s26a, a
    quiet lone phase): PF-001's 4 MiB fraction of the object store -27 % between two runs of one
    plugin a minute apart, the object store held, the host's own 4 MiB copy x1.38 slower: the
    host's memory path slowed, and a transport that copies through it slowed with it. A 30 %
    slower transport on a host whose copy held is still the plugin's."""
    if fig.normalised_by == "host":
        why = "no reference of the same work was measured in the same run"
    elif fig.normalised_by == "reference":
        why = _references_moved(old, new, tolerance) or ""
        if not why and sibling.differed(tolerance) and old.figure > 0 and new.figure > 0:
            worse_by = old.figure / new.figure if fig.better == "higher" else new.figure / old.figure
            if worse_by <= sibling.factor:
                return (f"within the host's change: its own reference held, but its check's {sibling.what} moved "
                        f"x{sibling.factor:.2f} and it got x{worse_by:.2f} worse")
    else:
        return None
    factor = _host_explains(fig, old.figure, new.figure, host, tolerance) if why else None
    if factor is None:
        return None
    return (f"within the host's change: {why}, and it got x{factor:.2f} worse where the pair's references "
            f"moved up to x{host.factor:.2f} ({host.what})")


def figure_findings(cid: str, fig: data.Figure, olds: Sequence[Mapping[str, Any]], news: Sequence[Mapping[str, Any]],
                    tolerance: float, alpha: float, *, host: HostChange = HostChange(),
                    siblings: Sequence[str] = ()) -> Iterator[Finding]:
    """The findings of one figure (rules 1-3 of conformance/signing/diff.py's docstring). `host`
    is the pair's HostChange: a figure it explains (normalised_by 'host', or a 'reference'
    fraction whose reference did not hold) is the host's."""
    tolerance = max(tolerance, fig.tolerance or 0.0)   # a figure that moves further between honest runs says so
    old_sides, new_sides = _collect(olds, cid, fig), _collect(news, cid, fig)
    # one test per instance of a '*' figure (PF-001's sizes): Bonferroni, so the figure as a whole
    # is held to alpha, not each of its instances
    alpha = alpha / max(1, sum(1 for side in old_sides.values() if side.figures))
    for keys, old in old_sides.items():
        if not old.figures:
            continue
        name = f"metrics.{bind(fig.metric, keys)}"
        before = old.figure
        new = new_sides.get(keys)
        if new is None or not new.figures:
            if all(checks_by_id(r).get(cid, {}).get("outcome") == PASSING for r in news):   # else the outcome says it
                yield Finding("metric", True, cid, before, None,
                              f"{name} ({fig.better} is better) was {before:g}, is no longer a number in NEW: a "
                              "figure that stopped being measured may hide a slowdown")
            continue
        after = new.figure
        change = relative_change(before, after)
        if abs(after - before) <= fig.floor or abs(change) <= tolerance:
            continue
        regressed = worse(change, fig.better, tolerance)
        what = f"{name} ({fig.better} is better) {_pct(change)}"
        a, b, way, kind = _samples(fig, old, new)
        if fig.trials and old.trials_complete and new.trials_complete and fig.reference:
            tb = fig.trials_better or fig.better
            if old.refs_complete and new.refs_complete and old.refs and new.refs:
                # the host's paths moved apart: its reference one way, beyond the tolerance and
                # further than the plugin's own trials moved the other way (a loaded host slowing
                # one process's path and not another's); a fraction cannot tell the plugin from
                # the host then. A plugin that moved further than its reference is its own move.
                ref_moved = relative_change(statistics.median(old.refs), statistics.median(new.refs))
                own_moved = relative_change(statistics.median(old.trials), statistics.median(new.trials))
                if abs(ref_moved) > max(tolerance, abs(own_moved)) and ref_moved * own_moved < 0:
                    yield Finding("untested", False, cid, before, after,
                                  f"{what}, but the host's paths moved apart: its reference {_pct(ref_moved)}, the "
                                  f"plugin's own trials {_pct(own_moved)}; not comparable: rerun on a quieter host "
                                  "or give each side more runs (diff OLD... -- NEW...)")
                    continue
            # the plugin's own trials must have moved the figure's way beyond the tolerance and
            # beyond their spread too: a fraction that moved further than the plugin did is its
            # reference's move (the host's), not the plugin's
            toward = _opposite(tb) if regressed else tb
            moved = relative_change(statistics.median(old.trials), statistics.median(new.trials))
            if not _own_trials_moved(moved, tb, regressed, tolerance):
                yield Finding("noise", False, cid, before, after,
                              f"{what}, but the plugin's own trials {_pct(moved)}, within the {tolerance:.0%} "
                              "tolerance: its reference moved further than the plugin")
                continue
            own = change_bound([old.trials], [new.trials], tb, toward, alpha)
            if own is None or not (own[1] < 0 if toward == "lower" else own[1] > 0):
                yield Finding("noise", False, cid, before, after,
                              f"{what}, but the plugin's own trials {_pct(moved)}, within their spread: its "
                              "reference moved, not the plugin")
                continue
        counts = " vs ".join(f"{len(x[0])}" for x in (a, b)) + f" {kind}"
        toward = _opposite(way) if regressed else way     # where NEW's statistic went
        found = change_bound(a, b, way, toward, alpha)
        if found is None:
            yield _untested(cid, fig, old, new, host, tolerance, what, counts, regressed,
                            sibling_change(cid, siblings, keys, olds, news))
            continue
        point, bound = found
        apart = bound < 0 if toward == "lower" else bound > 0
        spread = (f"bootstrap {1 - alpha:.1%} bound of the change {bound:+.3g} (point {point:+.3g}) over {counts}")
        if not apart:
            yield Finding("noise", False, cid, before, after, f"{what}, within the runs' own spread ({spread})")
        elif regressed and (explained := _host_explanation(fig, old, new, host, tolerance,
                                                           sibling_change(cid, siblings, keys, olds, news))):
            # the host's: a figure no same-run reference normalises (or whose references did not
            # hold) that got worse by no more than the host's paths moved between the runs
            yield Finding("host", False, cid, before, after, f"{what}, beyond the runs' own spread ({spread}), "
                          f"but {explained}; rerun on a steadier host or give each side more runs (diff OLD... -- NEW...)")
        elif regressed:
            yield Finding("metric", True, cid, before, after,
                          f"{what}, beyond the {tolerance:.0%} tolerance and the runs' own spread ({spread})")
        else:
            yield Finding("metric", False, cid, before, after, f"improved: {what} ({spread})")


def _own_trials_moved(moved: float, better: str, regressed: bool, tolerance: float) -> bool:
    """Whether the plugin's own trials (their median's relative change `moved`) moved the way the
    fraction did, beyond the tolerance: got worse for a fraction that got worse, better for one that
    got better. One run a side records each side's trials within minutes of each other, never the
    drift between runs of the paths a fraction divides (make test's honest pair on CI, data.21:
    PF-003's fraction of Ray's object store -25 %, 3.39 -> 2.53, beyond the trials' spread, while the
    transport's own 16 MiB trials moved -17 %); a plugin that did not itself get slower by more than
    the tolerance has not regressed, whatever its reference did. A transport 30 % slower per byte
    is (tests/unit/test_signing_diff.py)."""
    return worse(moved, better, tolerance) if regressed else worse(-moved, better, tolerance)


def _untested(cid: str, fig: data.Figure, old: _Side, new: _Side, host: HostChange, tolerance: float, what: str,
              counts: str, regressed: bool, sibling: HostChange) -> Finding:
    """A figure beyond the tolerance whose runs record no spread to test it against (one run a
    side of a figure without trials: PF-004's slowest link, a recovery time). Got better, or worse
    by no more than the host's change explains: listed, `untested`. Got worse beyond both: an
    `unconfirmed` regression (held-out round 25, N25_16: PF-004's slowest link 0.71 -> 0.40 of its
    class median between two runs of one host was "untested", exit 0): not counted among the
    regressions, since one run cannot tell it from the run's own noise, but never a silent pass
    either: diff exits 3 (conformance/signing/diff.py) until each side has runs enough to test it."""
    advice = "give each side two runs or more (diff OLD... -- NEW...)"
    if regressed and not _host_explanation(fig, old, new, host, tolerance, sibling):
        return Finding("unconfirmed", False, cid, old.figure, new.figure,
                       f"{what}, beyond the {tolerance:.0%} tolerance and the host's change (x{host.factor:.2f}), but "
                       f"{counts} show no spread to test it against: an unconfirmed regression; {advice}")
    return Finding("untested", False, cid, old.figure, new.figure,
                   f"{what}, beyond the {tolerance:.0%} tolerance, but {counts} show no spread to test it against: {advice}")


def _pct(change: float) -> str:
    return f"changed {change:+.1%}" if math.isfinite(change) else f"changed from 0 ({'+' if change > 0 else '-'}inf)"


def reference_findings(cid: str | None, references: Sequence[str], olds: Sequence[Mapping[str, Any]],
                       news: Sequence[Mapping[str, Any]], tolerance: float) -> Iterator[str]:
    """'CHECK path OLD -> NEW (change)' for each reference of check `cid` (None: of the report, the
    checklist's host_references) that moved beyond the tolerance."""
    def node(run: Mapping[str, Any]) -> Any:
        return run if cid is None else (checks_by_id(run).get(cid) or {}).get("metrics") or {}

    for path in references:
        old, new = _median_at(olds, node, path), _median_at(news, node, path)
        for keys, before in old.items():
            after = new.get(keys)
            if after is not None and abs(relative_change(before, after)) > tolerance:
                yield (f"{cid + ' ' if cid else ''}{bind(path, keys)} {before:.4g} -> {after:.4g} "
                       f"({relative_change(before, after):+.0%})")


# ---------------------------------------------------------------------------- outcomes
