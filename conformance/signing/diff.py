"""Compare runs of one product for CI gating: exit 1 on any regression of the plugin.

`ray-conformance diff OLD NEW`, or several runs of each side: `diff OLD... -- NEW...` (all their
trials are used). Exit codes: 0 no regression; 1 at least one regression; 2 unreadable input, or
runs of a different vendor, product or suite release (refused unless `--allow-different-product`:
comparing two products says nothing about either).

Regressions, loudest first:
  * the tier dropped, or a capability certified in OLD is not in NEW;
  * a check whose outcome went from `pass` to anything else: fail / error / skip / not_applicable
    / waived (a waiver is a known failure, never a pass); a check newly not applicable is named
    whatever its old outcome;
  * a check present in OLD and absent from NEW (it could be hiding a failure);
  * a figure of merit of the plugin that got worse, and only such a figure.

What is a figure of merit is data: each check's `merit:` in tiers/checklist.yaml names its
figures (a path into its metrics, '*' for every key), which way is better, the per-trial values
of the plugin's own measurement behind each, the per-trial values of the same-run reference a
fraction is taken of, and the references it was measured against. A figure regressed only when
all of these hold:
  1. it moved the wrong way by more than the tolerance (a fraction of OLD's value; a figure whose
     OLD value is 0 moved by infinitely much), and by more than its declared `floor`;
  2. for a fraction of a same-run reference, the plugin's own trials moved the same way beyond
     their spread (the bound of 3. on the trials alone): a fraction that moved only because its
     reference did is the host's;
  3. the change is beyond what the two sides' own recorded spread allows: a one-sided (1 - alpha)
     bootstrap bound (scipy.stats.bootstrap, every sample resampled on its own) of the change of
     the figure's statistic, taken from the trials (median of the plugin's trials over the
     median of its reference's, for a fraction), stays on the worse side of 0 (asv and Google
     Benchmark's compare.py likewise refuse a change the repetitions cannot tell from noise).
     A figure with a '*' (PF-001's sizes) is one figure: each instance is tested at alpha / n.
A figure with no spread recorded (a recovery time is one value per run) is listed as untested,
never as a regression, until each side has two runs or more; so is a fraction whose reference
moved one way, beyond the tolerance and further than the plugin's own trials moved the other
(the host's paths moved apart, as on a loaded host: no fraction tells the plugin from the host).
A figure that improved the same way is shown as improved. Everything else in `metrics` (raw samples, references, counts, bounds,
latencies of Ray's own paths) is never gated. References that moved by more than the tolerance
are reported once, as "the host differed", with each reference and how far it moved.

With several runs per side, a side's figure is the median of its runs' figures and its trials are
all its runs' trials; OLD's outcome of a check is its best over OLD's runs and NEW's its worst (so
a flaky NEW is seen), and the same for the tier and the capabilities.

Refused as unreadable input (exit 2): reports that are not schema-valid, NaN/Infinity anywhere
(the strict reader), a check id listed twice, a tolerance that is not a finite number >= 0, an
alpha outside (0, 1). Every string shown comes through conformance.sanitize.
"""
from __future__ import annotations

import json
import math
import statistics
import warnings
from collections import Counter
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Iterator, Mapping, Sequence

from tabulate import tabulate

from conformance.catalog import data
from conformance.catalog.capabilities import CERTIFIED
from conformance.catalog.ladder import PASSING, tier_rank
from conformance.catalog.strict_input import as_map
from conformance.errors import UserError
from conformance.sanitize import markdown_cell, terminal
from conformance.signing import attestation as att

REGRESSED_FROM_PASS = ("fail", "error", "skip", "not_applicable", "waived", "flaky")
FORMATS = ("text", "md", "json")
DEFAULT_TOLERANCE = 0.1   # knob: relative worsening a figure may show (the CLI's --tolerance)
DEFAULT_ALPHA = 0.05      # knob: 1 - the confidence of the change's bootstrap bound (the CLI's --alpha)
BOOTSTRAP_RESAMPLES = 4000  # knob: resamples per interval (scipy.stats.bootstrap)
# an outcome's rank, best first: OLD's best and NEW's worst over their runs are compared
OUTCOME_RANK = {"pass": 0, "not_applicable": 1, "skip": 1, "waived": 2, "flaky": 2, "fail": 3, "error": 3}
# the order findings are shown in: what a reviewer must see first
KIND_ORDER = ("tier", "capability", "outcome", "removed", "metric", "untested", "host", "noise", "added")


@dataclass(frozen=True)
class Finding:
    kind: str  # tier | capability | outcome | removed | metric | untested | host | noise | added
    regression: bool
    check: str | None
    old: Any
    new: Any
    detail: str


def load_report(path: Path, label: str) -> dict[str, Any]:
    """A report folder (its report.json) or a report.json file, schema-checked."""
    path = Path(path)
    file = path / att.REPORT_JSON if path.is_dir() else path
    report = att.parse_report(att.read_file(file, label), f"{label} {file}")
    data.validate(report, "report", what=f"{label} {file}")
    _no_duplicates(report, f"{label} {file}")
    return report


def _no_duplicates(report: Mapping[str, Any], label: str) -> None:
    dups = sorted(i for i, n in Counter(str(c["id"]) for c in report["checks"]).items() if n > 1)
    if dups:
        raise UserError(f"{label}: checks: duplicate id {', '.join(dups[:5])}")


def _rank(ladder: data.Ladder, tier: Any, label: str) -> int:
    try:
        return tier_rank(ladder, tier)
    except ValueError:
        raise UserError(f"{label}: tier {tier!r} is not in the tier ladder ({', '.join(ladder.names())})") from None


def _numeric(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)


# ---------------------------------------------------------------------------- metric paths
def resolve(metrics: Any, path: str) -> dict[tuple[str, ...], Any]:
    """Every value at `path` ('.'-joined keys, '*' for every key of an object or item of a list),
    by the keys its '*'s bound to, in order."""
    out: dict[tuple[str, ...], Any] = {}

    def walk(node: Any, parts: list[str], bound: tuple[str, ...]) -> None:
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


def _figure_value(value: Any) -> tuple[float | None, list[float]]:
    """(the figure, its own trials): a number is itself; a list of numbers its median and itself."""
    if _numeric(value):
        return float(value), []
    if isinstance(value, list) and value and all(_numeric(v) for v in value):
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


def _numbers_at(metrics: Any, path: str | None, keys: tuple[str, ...]) -> list[float] | None:
    listed = resolve(metrics, bind(path, keys)).get(()) if path else None
    if isinstance(listed, list) and listed and all(_numeric(v) for v in listed):
        return [float(v) for v in listed]
    return None


def _collect(runs: Sequence[Mapping[str, Any]], cid: str, fig: data.Figure) -> dict[tuple[str, ...], _Side]:
    sides: dict[tuple[str, ...], _Side] = {}
    for run in runs:
        check = _checks(run).get(cid)
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


def _figure_findings(cid: str, fig: data.Figure, olds: Sequence[Mapping[str, Any]], news: Sequence[Mapping[str, Any]],
                     tolerance: float, alpha: float) -> Iterator[Finding]:
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
            if all(_checks(r).get(cid, {}).get("outcome") == PASSING for r in news):   # else the outcome says it
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
            # the plugin's own trials must have moved the figure's way beyond their spread too: a
            # fraction that moved only because its reference did is the host's
            toward = _opposite(tb) if regressed else tb
            own = change_bound([old.trials], [new.trials], tb, toward, alpha)
            if own is None or not (own[1] < 0 if toward == "lower" else own[1] > 0):
                moved = relative_change(statistics.median(old.trials), statistics.median(new.trials))
                yield Finding("noise", False, cid, before, after,
                              f"{what}, but the plugin's own trials {_pct(moved)}, within their spread: its "
                              "reference moved, not the plugin")
                continue
        counts = " vs ".join(f"{len(x[0])}" for x in (a, b)) + f" {kind}"
        toward = _opposite(way) if regressed else way     # where NEW's statistic went
        found = change_bound(a, b, way, toward, alpha)
        if found is None:
            yield Finding("untested", False, cid, before, after,
                          f"{what}, beyond the {tolerance:.0%} tolerance, but {counts} show no spread to test it "
                          "against: give each side more runs (diff OLD... -- NEW...)")
            continue
        point, bound = found
        apart = bound < 0 if toward == "lower" else bound > 0
        spread = (f"bootstrap {1 - alpha:.1%} bound of the change {bound:+.3g} (point {point:+.3g}) over {counts}")
        if not apart:
            yield Finding("noise", False, cid, before, after, f"{what}, within the runs' own spread ({spread})")
        elif regressed:
            yield Finding("metric", True, cid, before, after,
                          f"{what}, beyond the {tolerance:.0%} tolerance and the runs' own spread ({spread})")
        else:
            yield Finding("metric", False, cid, before, after, f"improved: {what} ({spread})")


def _pct(change: float) -> str:
    return f"changed {change:+.1%}" if math.isfinite(change) else f"changed from 0 ({'+' if change > 0 else '-'}inf)"


def _references(cid: str, merit: data.Merit, olds: Sequence[Mapping[str, Any]], news: Sequence[Mapping[str, Any]],
                tolerance: float) -> Iterator[str]:
    """'CHECK path OLD -> NEW (change)' for each reference that moved beyond the tolerance."""
    def values(runs: Sequence[Mapping[str, Any]], path: str) -> dict[tuple[str, ...], float]:
        per: dict[tuple[str, ...], list[float]] = {}
        for run in runs:
            check = _checks(run).get(cid)
            for keys, v in resolve((check or {}).get("metrics") or {}, path).items():
                if _numeric(v):
                    per.setdefault(keys, []).append(float(v))
        return {k: float(statistics.median(v)) for k, v in per.items()}

    for path in merit.references:
        old, new = values(olds, path), values(news, path)
        for keys, before in old.items():
            after = new.get(keys)
            if after is not None and abs(relative_change(before, after)) > tolerance:
                yield f"{cid} {bind(path, keys)} {before:.4g} -> {after:.4g} ({relative_change(before, after):+.0%})"


# ---------------------------------------------------------------------------- outcomes
def _checks(report: Mapping[str, Any]) -> dict[str, Mapping[str, Any]]:
    return {str(c["id"]): c for c in report["checks"]}


def _outcome_findings(olds: Sequence[Mapping[str, Any]], news: Sequence[Mapping[str, Any]]) -> Iterator[Finding]:
    old_ids = list(dict.fromkeys(cid for r in olds for cid in _checks(r)))
    new_ids = list(dict.fromkeys(cid for r in news for cid in _checks(r)))
    for cid in old_ids:
        old_runs = [c for r in olds if (c := _checks(r).get(cid)) is not None]
        new_runs = [c for r in news if (c := _checks(r).get(cid)) is not None]
        best = min(old_runs, key=lambda c: OUTCOME_RANK.get(c["outcome"], 3))
        if len(new_runs) < len(news):
            yield Finding("removed", True, cid, best["outcome"], None,
                          "check absent from NEW" if not new_runs else
                          f"check absent from {len(news) - len(new_runs)} of NEW's {len(news)} runs")
            if not new_runs:
                continue
        worst = max(new_runs, key=lambda c: OUTCOME_RANK.get(c["outcome"], 3))
        before, after = best["outcome"], worst["outcome"]
        newly_na = after == "not_applicable" and all(c["outcome"] != "not_applicable" for c in old_runs)
        if before == after and not newly_na:
            continue
        regressed = before == PASSING and after in REGRESSED_FROM_PASS
        reason = worst.get("reason") or ""
        detail = (f"newly not applicable: {reason}" if newly_na else reason if regressed else "outcome changed")
        spread = sorted({c["outcome"] for c in new_runs})
        if len(spread) > 1:
            detail += f" (NEW's runs: {', '.join(spread)})"
        yield Finding("outcome", regressed, cid, before, after, detail.strip())
    for cid in new_ids:
        if cid not in old_ids:
            outcome = max((_checks(r)[cid]["outcome"] for r in news if cid in _checks(r)),
                          key=lambda o: OUTCOME_RANK.get(o, 3))
            yield Finding("added", False, cid, None, outcome, "check new in NEW")


def _tier_findings(olds: Sequence[Mapping[str, Any]], news: Sequence[Mapping[str, Any]],
                   ladder: data.Ladder) -> Iterator[Finding]:
    old = max(olds, key=lambda r: _rank(ladder, r.get("tier"), "OLD"))
    new = min(news, key=lambda r: _rank(ladder, r.get("tier"), "NEW"))
    old_rank, new_rank = _rank(ladder, old.get("tier"), "OLD"), _rank(ladder, new.get("tier"), "NEW")
    if new_rank != old_rank:
        yield Finding("tier", new_rank < old_rank, None, old.get("tier"), new.get("tier"),
                      "tier dropped" if new_rank < old_rank else "tier rose")

    def certified(r: Mapping[str, Any]) -> set[str]:
        caps = r.get("capabilities")
        return {str(c.get("name")) for c in caps if isinstance(c, Mapping) and c.get("state") == CERTIFIED} \
            if isinstance(caps, list) else set()

    had = set().union(*(certified(r) for r in olds))
    has = set.intersection(*(certified(r) for r in news))
    for name in sorted(had - has):
        yield Finding("capability", True, None, CERTIFIED, "not certified", f"capability {name} no longer certified")
    for name in sorted(has - had):
        yield Finding("capability", False, None, "not certified", CERTIFIED, f"capability {name} newly certified")


# ---------------------------------------------------------------------------- the diff
def _identity(report: Mapping[str, Any]) -> dict[str, Any]:
    manifest = as_map(report.get("manifest"))
    suite = as_map(report.get("suite"))
    return {"vendor": manifest.get("vendor"), "product": manifest.get("product"), "release": suite.get("version")}


def same_product_problem(old: Mapping[str, Any], new: Mapping[str, Any]) -> str | None:
    """Why OLD and NEW are not two runs of one product under one release (None: they are).

    Vendor and product compare NFKC-normalised and trimmed (conformance/identity.py)."""
    from conformance.identity import same

    a, b = _identity(old), _identity(new)
    differ = [k for k in a if not same(a[k], b[k])]
    if not differ:
        return None
    shown = "; ".join(f"{k}: OLD {terminal(repr(a[k]), limit=80)}, NEW {terminal(repr(b[k]), limit=80)}" for k in differ)
    return (f"OLD and NEW are not runs of the same product and release ({shown}); "
            f"pass --allow-different-product to compare them anyway")


def check_knobs(tolerance: Any, alpha: Any) -> None:
    if not _numeric(tolerance) or tolerance < 0:
        raise UserError(f"--tolerance: expected a finite number >= 0, got {tolerance!r}")
    if not _numeric(alpha) or not 0 < alpha < 1:
        raise UserError(f"--alpha: expected a number between 0 and 1, got {alpha!r}")


def diff_runs(olds: Sequence[Mapping[str, Any]], news: Sequence[Mapping[str, Any]], suite: data.SuiteData,
              tolerance: float = DEFAULT_TOLERANCE, *, alpha: float = DEFAULT_ALPHA,
              allow_different_product: bool = False) -> list[Finding]:
    """All findings between OLD's runs and NEW's (pure), loudest first; UserError when they are of
    different products or releases and `allow_different_product` is not set."""
    if not olds or not news:
        raise UserError("diff: expected at least one OLD and one NEW report")
    check_knobs(tolerance, alpha)
    first = olds[0]
    for label, runs in (("OLD", olds), ("NEW", news)):
        for i, report in enumerate(runs):
            problem = same_product_problem(first, report)
            if problem and not allow_different_product:
                raise UserError(f"diff: {label} run {i + 1}: {problem}")
            _no_duplicates(report, label if len(runs) == 1 else f"{label} run {i + 1}")
    findings = [*_tier_findings(olds, news, suite.ladder), *_outcome_findings(olds, news)]
    moved: list[str] = []
    for check in suite.checklist.checks:
        if check.merit is None:
            continue
        for fig in check.merit.figures:
            findings.extend(_figure_findings(check.id, fig, olds, news, tolerance, alpha))
        moved.extend(_references(check.id, check.merit, olds, news, tolerance))
    if moved:
        findings.append(Finding("host", False, None, None, None,
                                f"the host differed: {len(moved)} reference(s) moved beyond the {tolerance:.0%} "
                                f"tolerance (the plugin is judged against them in each run): {'; '.join(moved)}"))
    return sorted(findings, key=lambda f: (not f.regression, KIND_ORDER.index(f.kind)))


def diff_reports(old: Mapping[str, Any], new: Mapping[str, Any], suite: data.SuiteData,
                 tolerance: float = DEFAULT_TOLERANCE, *, alpha: float = DEFAULT_ALPHA,
                 allow_different_product: bool = False) -> list[Finding]:
    """diff_runs of one run each."""
    return diff_runs([old], [new], suite, tolerance, alpha=alpha, allow_different_product=allow_different_product)


def verdict(findings: Sequence[Finding]) -> str:
    regressions = [f for f in findings if f.regression]
    if not regressions:
        return "no regressions"
    kinds = Counter("figure" if f.kind == "metric" else f.kind for f in regressions)
    return f"REGRESSION: {len(regressions)} regression(s) ({', '.join(f'{n} {k}' for k, n in kinds.items())})"


def _label(f: Finding) -> str:
    if f.regression:
        return "REGRESSION"
    return {"metric": "improved", "host": "host", "untested": "untested", "noise": "noise"}.get(f.kind, "info")


def render(findings: list[Finding], fmt: str, old_label: str, new_label: str, tolerance: float,
           alpha: float = DEFAULT_ALPHA) -> str:
    line = verdict(findings)
    if fmt == "json":
        return json.dumps({"old": old_label, "new": new_label, "tolerance": tolerance, "alpha": alpha,
                           "regression": any(f.regression for f in findings),
                           "findings": [asdict(f) for f in findings]}, indent=2)
    if fmt not in FORMATS:
        raise UserError(f"--format: unknown format {fmt!r}; expected one of {', '.join(FORMATS)}")

    def cell(f: Finding, value: Any) -> Any:
        if value is None:
            return "none" if f.kind == "tier" else "-"
        return f"{value:.4g}" if isinstance(value, float) else value

    rows = [[_label(f), f.kind, f.check or "-", cell(f, f.old), cell(f, f.new), f.detail] for f in findings]
    headers = ["", "kind", "check", "old", "new", "detail"]
    if fmt == "md":
        rows = [[markdown_cell(c, limit=600) for c in r] for r in rows]
        head = (f"### Conformance diff: {markdown_cell(old_label, limit=200)} → {markdown_cell(new_label, limit=200)} "
                f"(tolerance {tolerance:.0%}, alpha {alpha:g})\n\n")
        table = tabulate(rows, headers=headers, tablefmt="github", disable_numparse=True) if rows else "_No differences._"
        return f"{head}{table}\n\n**{line}**"
    rows = [[terminal(c, limit=600) for c in r] for r in rows]
    table = tabulate(rows, headers=headers, tablefmt="simple", disable_numparse=True) if rows else "no differences"
    return (f"diff {terminal(old_label, limit=200)} -> {terminal(new_label, limit=200)} "
            f"(tolerance {tolerance:.0%}, alpha {alpha:g})\n{table}\n{line}")
