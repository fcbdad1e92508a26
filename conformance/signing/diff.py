"""Compare runs of one product for CI gating: exit 1 on any regression of the plugin.

`ray-conformance diff OLD NEW`, or several runs of each side: `diff OLD... -- NEW...` (all their
trials are used). Exit codes: 0 no regression; 1 at least one regression; 2 unreadable input, or
runs of a different vendor, product or suite release (refused unless `--allow-different-product`:
comparing two products says nothing about either); 3 (only with --fail-unconfirmed) no regression
confirmed, but a figure of merit got worse beyond the tolerance and the host's change with no
spread recorded to test it (below).

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
     OLD value is 0 moved by infinitely much; the larger of the tolerance and the figure's own
     declared `tolerance`, how far it moves between honest runs on the reference host), and by more
     than its declared `floor`. The tolerance is --tolerance as given, else chosen by the runs on
     each side (choose_tolerance, below): ONE_RUN_TOLERANCE with one run on either side, how far
     honest runs drift apart, which one run a side cannot see, and a figure worse beyond
     DEFAULT_TOLERANCE but within it is UNCONFIRMED (below); DEFAULT_TOLERANCE with two runs or
     more on both sides. The output says which it used and why;
  2. for a fraction of a same-run reference, the plugin's own trials moved the same way beyond
     the tolerance and beyond their spread (the bound of 3. on the trials alone): a fraction that
     moved further than the plugin did is its reference's move, the host's (one run a side never
     records how far two paths drift apart between runs);
  3. the change is beyond what the two sides' own recorded spread allows: a one-sided (1 - alpha)
     bootstrap bound (scipy.stats.bootstrap, every sample resampled on its own) of the change of
     the figure's statistic, taken from the trials (median of the plugin's trials over the
     median of its reference's, for a fraction), stays on the worse side of 0 (asv and Google
     Benchmark's compare.py likewise refuse a change the repetitions cannot tell from noise).
     A figure with a '*' (PF-001's sizes) is one figure: each instance is tested at alpha / n.
A figure with no spread recorded (a recovery time is one value per run, PF-004's slowest link one
per run) cannot be tested until each side has two runs or more: it is listed as untested when it got
better or when the host's change explains it (as below), else as an UNCONFIRMED regression: not
counted among the regressions, but printed loudly, and with --fail-unconfirmed diff exits 3, so a gate on one
run a side can refuse to pass it silently (held-out round 25, N25_16: PF-004's slowest link 0.71 -> 0.40 of its class median exited 0).
A fraction is listed as untested too when its reference
moved one way, beyond the tolerance and further than the plugin's own trials moved the other
(the host's paths moved apart, as on a loaded host: no fraction tells the plugin from the host).
A figure that improved the same way is shown as improved. Everything else in `metrics` (raw samples, references, counts, bounds,
latencies of Ray's own paths) is never gated. References that moved by more than the tolerance
(each check's merit `references` and the checklist's `host_references`: Ray's machinery factor)
are reported once, as "the host differed", with each reference and how far it moved; the furthest
any moved, either way, is the pair's host change. A figure that would regress by 1-3 but that no
same-run reference normalises (its `normalised_by: host`, or a `reference` fraction whose
reference was not recorded on both sides or itself moved beyond the tolerance) and got worse by
no more than the host's change is listed as the host's, never as a regression.

With several runs per side, a side's figure is the median of its runs' figures and its trials are
all its runs' trials; OLD's outcome of a check is its best over OLD's runs and NEW's its worst (so
a flaky NEW is seen), and the same for the tier and the capabilities.

Refused as unreadable input (exit 2): reports that are not schema-valid, NaN/Infinity anywhere
(the strict reader), a check id listed twice, a tolerance that is not a finite number >= 0, an
alpha outside (0, 1). Every string shown comes through conformance.sanitize.
"""
from __future__ import annotations

import json
from collections import Counter
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any, Iterator, Mapping, Sequence

from tabulate import tabulate

from conformance.catalog import data, datafiles
from conformance.catalog.capabilities import CERTIFIED
from conformance.catalog.ladder import PASSING, tier_rank
from conformance.errors import UserError
from conformance.report.view import CheckResult, Report
from conformance.sanitize import markdown_cell, terminal
from conformance.signing import attestation as att
from conformance.signing.merit_diff import (
    DEFAULT_ALPHA,
    DEFAULT_TOLERANCE,
    ONE_RUN_TOLERANCE,
    Finding,
    HostChange,
    figure_findings,
    host_change,
    is_number,
    reference_findings,
)

REGRESSED_FROM_PASS = ("fail", "error", "skip", "not_applicable", "waived", "flaky")
FORMATS = ("text", "md", "json")
# an outcome's rank, best first: OLD's best and NEW's worst over their runs are compared
OUTCOME_RANK = {"pass": 0, "not_applicable": 1, "skip": 1, "waived": 2, "flaky": 2, "fail": 3, "error": 3}
# the order findings are shown in: what a reviewer must see first
KIND_ORDER = ("tier", "capability", "outcome", "removed", "metric", "unconfirmed", "untested", "host", "noise", "added")


def load_report(path: Path, label: str) -> dict[str, Any]:
    """A report folder (its report.json) or a report.json file, schema-checked."""
    path = Path(path)
    file = path / att.REPORT_JSON if path.is_dir() else path
    report = att.parse_report(att.read_file(file, label), f"{label} {file}")
    datafiles.validate(report, "report", what=f"{label} {file}")
    _no_duplicates(Report.from_json(report), f"{label} {file}")
    return report


def _no_duplicates(report: Report, label: str) -> None:
    dups = sorted(i for i, n in Counter(c.id for c in report.checks).items() if n > 1)
    if dups:
        raise UserError(f"{label}: checks: duplicate id {', '.join(dups[:5])}")


def _rank(ladder: data.Ladder, tier: str | None, label: str) -> int:
    try:
        return tier_rank(ladder, tier)
    except ValueError:
        raise UserError(f"{label}: tier {tier!r} is not in the tier ladder ({', '.join(ladder.names())})") from None


def _checks(runs: Sequence[Report]) -> list[dict[str, CheckResult]]:
    """Each run's checks by id."""
    return [{c.id: c for c in r.checks} for r in runs]


def _outcome_findings(olds: Sequence[Report], news: Sequence[Report]) -> Iterator[Finding]:
    old_checks, new_checks = _checks(olds), _checks(news)
    old_ids = list(dict.fromkeys(cid for r in old_checks for cid in r))
    new_ids = list(dict.fromkeys(cid for r in new_checks for cid in r))
    for cid in old_ids:
        old_runs = [c for r in old_checks if (c := r.get(cid)) is not None]
        new_runs = [c for r in new_checks if (c := r.get(cid)) is not None]
        best = min(old_runs, key=lambda c: OUTCOME_RANK.get(c.outcome, 3))
        if len(new_runs) < len(news):
            yield Finding("removed", True, cid, best.outcome, None,
                          "check absent from NEW" if not new_runs else
                          f"check absent from {len(news) - len(new_runs)} of NEW's {len(news)} runs")
            if not new_runs:
                continue
        worst = max(new_runs, key=lambda c: OUTCOME_RANK.get(c.outcome, 3))
        before, after = best.outcome, worst.outcome
        newly_na = after == "not_applicable" and all(c.outcome != "not_applicable" for c in old_runs)
        if before == after and not newly_na:
            continue
        regressed = before == PASSING and after in REGRESSED_FROM_PASS
        reason = worst.reason or ""
        detail = (f"newly not applicable: {reason}" if newly_na else reason if regressed else "outcome changed")
        spread = sorted({c.outcome for c in new_runs})
        if len(spread) > 1:
            detail += f" (NEW's runs: {', '.join(spread)})"
        yield Finding("outcome", regressed, cid, before, after, detail.strip())
    for cid in new_ids:
        if cid not in old_ids:
            outcome = max((r[cid].outcome for r in new_checks if cid in r),
                          key=lambda o: OUTCOME_RANK.get(o, 3))
            yield Finding("added", False, cid, None, outcome, "check new in NEW")


def _tier_findings(old_views: Sequence[Report], new_views: Sequence[Report], ladder: data.Ladder) -> Iterator[Finding]:
    old = max(old_views, key=lambda r: _rank(ladder, r.tier, "OLD"))
    new = min(new_views, key=lambda r: _rank(ladder, r.tier, "NEW"))
    old_rank, new_rank = _rank(ladder, old.tier, "OLD"), _rank(ladder, new.tier, "NEW")
    if new_rank != old_rank:
        yield Finding("tier", new_rank < old_rank, None, old.tier, new.tier,
                      "tier dropped" if new_rank < old_rank else "tier rose")

    def certified(r: Report) -> set[str]:
        return {c.name for c in r.capabilities or () if c.state == CERTIFIED}

    had = set().union(*(certified(r) for r in old_views))
    has = set.intersection(*(certified(r) for r in new_views))
    for name in sorted(had - has):
        yield Finding("capability", True, None, CERTIFIED, "not certified", f"capability {name} no longer certified")
    for name in sorted(has - had):
        yield Finding("capability", False, None, "not certified", CERTIFIED, f"capability {name} newly certified")


# ---------------------------------------------------------------------------- the diff
def _identity(report: Report) -> dict[str, Any]:
    """What makes two runs comparable: the manifest's vendor and product (JSON: the embedded
    manifest keeps its own schema) and the release."""
    manifest = report.manifest
    return {"vendor": manifest.get("vendor"), "product": manifest.get("product"), "release": report.suite.version}


def same_product_problem(old: Report, new: Report) -> str | None:
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


# ---------------------------------------------------------------------------- the tolerance
def default_tolerance(n_old: int, n_new: int) -> float:
    """diff's tolerance when --tolerance is not given, from the runs on each side: ONE_RUN_TOLERANCE
    with one run on either side, DEFAULT_TOLERANCE with two or more on both (docs/ci.md)."""
    if n_old < 1 or n_new < 1:
        raise ValueError(f"diff: expected at least one run a side, got {n_old} and {n_new}")
    return ONE_RUN_TOLERANCE if min(n_old, n_new) == 1 else DEFAULT_TOLERANCE


@dataclass(frozen=True)
class Tolerance:
    """The tolerance a diff judges at, and why. A figure worse beyond `value` (and its runs' spread)
    is a regression; with the default for one run a side, one worse beyond `unconfirmed_from` but
    within `value` is UNCONFIRMED: within how far honest runs drift apart, so not a regression,
    but never passed in silence (exit 3 with --fail-unconfirmed)."""

    value: float
    unconfirmed_from: float
    given: bool
    n_old: int
    n_new: int

    def line(self) -> str:
        """One line for the output: which tolerance, and why."""
        runs = "one run a side" if min(self.n_old, self.n_new) == 1 else f"{self.n_old} vs {self.n_new} runs"
        if self.given:
            default = default_tolerance(self.n_old, self.n_new)
            return (f"tolerance {self.value:.0%}: as given by --tolerance"
                    + (f" (the default for {runs} is {default:.0%})" if default != self.value else ""))
        band = (f"within it, worse beyond {self.unconfirmed_from:.0%} is UNCONFIRMED; "
                if self.unconfirmed_from < self.value else "")
        return f"tolerance {self.value:.0%}: the default for {runs} ({band}pass --tolerance to choose)"


def choose_tolerance(given: float | None, n_old: int, n_new: int) -> Tolerance:
    """The one way diff chooses its tolerance: `given` (--tolerance) as it is, else
    default_tolerance; the default for one run a side lists what got worse beyond DEFAULT_TOLERANCE
    (the tolerance two runs a side are judged at) but within it as UNCONFIRMED."""
    if given is not None:
        return Tolerance(given, given, True, n_old, n_new)
    value = default_tolerance(n_old, n_new)
    return Tolerance(value, min(value, DEFAULT_TOLERANCE), False, n_old, n_new)


def check_knobs(tolerance: float, alpha: float) -> None:
    if not is_number(tolerance) or tolerance < 0:
        raise UserError(f"--tolerance: expected a finite number >= 0, got {tolerance!r}")
    if not is_number(alpha) or not 0 < alpha < 1:
        raise UserError(f"--alpha: expected a number between 0 and 1, got {alpha!r}")


def diff_runs(olds: Sequence[Mapping[str, Any]], news: Sequence[Mapping[str, Any]], suite: data.SuiteData,
              tolerance: float | Tolerance | None = None, *, alpha: float = DEFAULT_ALPHA,
              allow_different_product: bool = False) -> list[Finding]:
    """All findings between OLD's runs and NEW's (pure), loudest first; UserError when they are of
    different products or releases and `allow_different_product` is not set. `tolerance`: a
    number is --tolerance as given, None the default for these runs, a Tolerance what
    choose_tolerance chose (the CLI's, which it also renders). The runs are schema-valid
    report.json documents (load_report): tiers, outcomes and identity are read through the typed
    view, the figures of merit as the JSON of each check's metrics (merit_diff)."""
    if not olds or not news:
        raise UserError("diff: expected at least one OLD and one NEW report")
    tol = tolerance if isinstance(tolerance, Tolerance) else choose_tolerance(tolerance, len(olds), len(news))
    check_knobs(tol.value, alpha)
    old_views, new_views = [Report.from_json(r) for r in olds], [Report.from_json(r) for r in news]
    for label, runs in (("OLD", old_views), ("NEW", new_views)):
        for i, report in enumerate(runs):
            problem = same_product_problem(old_views[0], report)
            if problem and not allow_different_product:
                raise UserError(f"diff: {label} run {i + 1}: {problem}")
            _no_duplicates(report, label if len(runs) == 1 else f"{label} run {i + 1}")
    findings = [*_tier_findings(old_views, new_views, suite.ladder), *_outcome_findings(old_views, new_views)]
    host = host_change(suite.checklist, olds, news)
    # the references are listed at the narrowest width a figure is judged at (UNCONFIRMED's, one
    # run a side by default): what moved beyond it is what the figures' lines may name
    width = tol.unconfirmed_from
    moved = list(reference_findings(None, suite.checklist.host_references, olds, news, width))
    findings.extend(_merit_findings(suite, olds, news, tol, alpha, host))
    for check in suite.checklist.checks:
        if check.merit is not None:
            moved.extend(reference_findings(check.id, check.merit.references, olds, news, width))
    if moved:
        findings.append(Finding("host", False, None, None, None,
                                f"the host differed: {len(moved)} reference(s) moved beyond {width:.0%}, "
                                f"up to x{host.factor:.2f} (the plugin is judged against "
                                f"them in each run): {'; '.join(moved)}"))
    return sorted(findings, key=lambda f: (not f.regression, KIND_ORDER.index(f.kind)))


def _merit_findings(suite: data.SuiteData, olds: Sequence[Mapping[str, Any]], news: Sequence[Mapping[str, Any]],
                    tol: Tolerance, alpha: float, host: HostChange) -> list[Finding]:
    """Every figure of merit's findings, judged at the tolerance. One run a side records no drift
    between runs, and honest runs drift apart by up to ONE_RUN_TOLERANCE, its default: there a
    figure is judged at the tighter `unconfirmed_from` too, and a regression only there is
    UNCONFIRMED (listed, exit 3 with --fail-unconfirmed: give each side two runs), never a
    regression nor a silent pass."""
    def judged(width: float) -> list[Finding]:
        return [f for check in suite.checklist.checks if check.merit is not None for fig in check.merit.figures
                for f in figure_findings(check.id, fig, olds, news, width, alpha, host=host,
                                         siblings=check.merit.references)]

    wide = judged(tol.value)
    if tol.unconfirmed_from >= tol.value:
        return wide
    tight = judged(tol.unconfirmed_from)
    named = {(f.check, f.old, f.new) for f in wide if f.regression or f.kind == "unconfirmed"}
    return wide + [Finding("unconfirmed", False, f.check, f.old, f.new,
                           f"{f.detail}; within the {tol.value:.0%} honest runs drift apart, which one run a "
                           "side records no spread of: an unconfirmed regression; give each side two runs or more "
                           "(diff OLD... -- NEW...)")
                   for f in tight if (f.regression and f.kind == "metric" or f.kind == "unconfirmed")
                   and (f.check, f.old, f.new) not in named]


def diff_reports(old: Mapping[str, Any], new: Mapping[str, Any], suite: data.SuiteData,
                 tolerance: float | Tolerance | None = None, *, alpha: float = DEFAULT_ALPHA,
                 allow_different_product: bool = False) -> list[Finding]:
    """diff_runs of one run each."""
    return diff_runs([old], [new], suite, tolerance, alpha=alpha, allow_different_product=allow_different_product)


EXIT_UNCONFIRMED = 3   # --fail-unconfirmed: no regression, but a figure got worse beyond what one run a side can test


def exit_code(findings: Sequence[Finding], *, fail_unconfirmed: bool = False) -> int:
    """1 on a regression; with `fail_unconfirmed`, 3 when none but a figure is an unconfirmed
    regression; else 0. Unconfirmed is not a regression by issue 44's rule (beyond the tolerance
    *and* the runs' own spread: one run a side records none), and PF-004's slowest link moves
    20-40 % between honest runs of one host (0.51-0.90 seen), so a gate on one run a side that
    failed on it would fail honest changes; the line is printed loudly either way, and a gate
    that wants each one looked at asks for exit 3."""
    if any(f.regression for f in findings):
        return 1
    return EXIT_UNCONFIRMED if fail_unconfirmed and any(f.kind == "unconfirmed" for f in findings) else 0


def verdict(findings: Sequence[Finding]) -> str:
    regressions = [f for f in findings if f.regression]
    if not regressions:
        unconfirmed = sum(1 for f in findings if f.kind == "unconfirmed")
        return ("no regressions" + (f" confirmed; UNCONFIRMED: {unconfirmed} figure(s) got worse beyond the tolerance "
                                    "and the host's change with no spread to test them: give each side two runs or more"
                                    if unconfirmed else ""))
    kinds = Counter("figure" if f.kind == "metric" else f.kind for f in regressions)
    return f"REGRESSION: {len(regressions)} regression(s) ({', '.join(f'{n} {k}' for k, n in kinds.items())})"


def _label(f: Finding) -> str:
    if f.regression:
        return "REGRESSION"
    return {"metric": "improved", "host": "host", "unconfirmed": "UNCONFIRMED", "untested": "untested",
            "noise": "noise"}.get(f.kind, "info")


def render(findings: list[Finding], fmt: str, old_label: str, new_label: str, tolerance: Tolerance,
           alpha: float = DEFAULT_ALPHA) -> str:
    """The findings as text, md or json, each saying which tolerance was used and why (its line)."""
    line = verdict(findings)
    if fmt == "json":
        return json.dumps({"old": old_label, "new": new_label, "tolerance": tolerance.value,
                           "tolerance_given": tolerance.given, "unconfirmed_from": tolerance.unconfirmed_from,
                           "tolerance_why": tolerance.line(), "alpha": alpha,
                           "regression": any(f.regression for f in findings),
                           "unconfirmed": any(f.kind == "unconfirmed" for f in findings),
                           "findings": [asdict(f) for f in findings]}, indent=2)
    if fmt not in FORMATS:
        raise UserError(f"--format: unknown format {fmt!r}; expected one of {', '.join(FORMATS)}")

    def cell(f: Finding, value: object) -> Any:
        if value is None:
            return "none" if f.kind == "tier" else "-"
        return f"{value:.4g}" if isinstance(value, float) else value

    rows = [[_label(f), f.kind, f.check or "-", cell(f, f.old), cell(f, f.new), f.detail] for f in findings]
    headers = ["", "kind", "check", "old", "new", "detail"]
    if fmt == "md":
        rows = [[markdown_cell(c, limit=600) for c in r] for r in rows]
        head = (f"### Conformance diff: {markdown_cell(old_label, limit=200)} → {markdown_cell(new_label, limit=200)} "
                f"(alpha {alpha:g})\n\n{markdown_cell(tolerance.line(), limit=300)}\n\n")
        table = tabulate(rows, headers=headers, tablefmt="github", disable_numparse=True) if rows else "_No differences._"
        return f"{head}{table}\n\n**{line}**"
    rows = [[terminal(c, limit=600) for c in r] for r in rows]
    table = tabulate(rows, headers=headers, tablefmt="simple", disable_numparse=True) if rows else "no differences"
    return (f"diff {terminal(old_label, limit=200)} -> {terminal(new_label, limit=200)} "
            f"(alpha {alpha:g})\n{terminal(tolerance.line(), limit=300)}\n"
            f"{table}\n{line}")
