"""Compare two reports for CI gating: exit 1 on any regression.

Exit codes (`ray-conformance diff`): 0 no regression; 1 at least one regression; 2 unreadable
input, or OLD and NEW of a different vendor, product or suite release (refused unless
`--allow-different-product`: comparing two products says nothing about either).

Regressions:
  * a check whose outcome went from `pass` to anything else: fail / error / skip /
    not_applicable / waived (a waiver is a known failure, never a pass);
  * a check present in OLD and absent from NEW (it could be hiding a failure);
  * a tier drop (conformance.catalog.ladder.tier_rank on the current ladder);
  * a performance figure that got worse by more than the tolerance (a fraction of the old value).
Reported but not regressions: other outcome changes, added checks, tier rises.

Performance figures are the numeric leaves of each check's `metrics` (nested objects and lists
are walked; a leaf is named by the nearest object key). The key's suffix decides the direction,
higher-is-better suffixes first because `_per_s` also ends in `_s`:
  higher is better: `_gbps`, `_bandwidth`, `bandwidth_gbps`, `_per_s`, `_speedup` (a ratio of
                    a baseline's time to the figure's own, e.g. WL-001's object_store_speedup)
  lower is better:  `_latency_s`, `latency_us`, `_s`
  anything else (counts, sizes, ids) is not compared; booleans never are.
Worse means new < old * (1 - tolerance) (higher-is-better) or new > old * (1 + tolerance)
(lower-is-better). Leaves whose old value is 0 are skipped: no relative change exists.
A performance figure that was a number in OLD and is absent, null, a string or a boolean in
NEW is a regression (a figure that stopped being measured may hide a slowdown).

Refused as unreadable input (exit 2): reports that are not schema-valid, NaN/Infinity
anywhere (the strict reader), a check id listed twice, a tolerance that is not a finite
number >= 0. Every string shown comes through conformance.sanitize.
"""
from __future__ import annotations

import json
import math
from collections import Counter
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any, Iterator, Mapping

from tabulate import tabulate

from conformance.catalog import data
from conformance.catalog.ladder import PASSING, tier_rank
from conformance.catalog.strict_input import as_map
from conformance.errors import UserError
from conformance.sanitize import markdown_cell, terminal
from conformance.signing import attestation as att

HIGHER_IS_BETTER = ("_gbps", "_bandwidth", "bandwidth_gbps", "_per_s", "_speedup")
LOWER_IS_BETTER = ("_latency_s", "latency_us", "_s")
REGRESSED_FROM_PASS = ("fail", "error", "skip", "not_applicable", "waived")
FORMATS = ("text", "md", "json")


@dataclass(frozen=True)
class Finding:
    kind: str  # outcome | removed | added | tier | metric
    regression: bool
    check: str | None
    old: Any
    new: Any
    detail: str


def direction(key: str) -> str | None:
    """'higher', 'lower' or None (not a performance figure) for a metric key name."""
    if key.endswith(HIGHER_IS_BETTER):
        return "higher"
    if key.endswith(LOWER_IS_BETTER):
        return "lower"
    return None


def metric_leaves(metrics: Any, path: str = "", key: str = "") -> Iterator[tuple[str, str, float]]:
    """(path, key, value) for every numeric leaf; `key` is the nearest enclosing object key."""
    if isinstance(metrics, bool):
        return
    if isinstance(metrics, (int, float)):
        yield path, key, float(metrics)
    elif isinstance(metrics, dict):
        for k, v in metrics.items():
            yield from metric_leaves(v, f"{path}.{k}" if path else str(k), str(k))
    elif isinstance(metrics, list):
        for i, v in enumerate(metrics):
            yield from metric_leaves(v, f"{path}[{i}]", key)


def load_report(path: Path, label: str) -> dict[str, Any]:
    """A report folder (its report.json) or a report.json file, schema-checked."""
    path = Path(path)
    file = path / att.REPORT_JSON if path.is_dir() else path
    report = att.parse_report(att.read_file(file, label), f"{label} {file}")
    data.validate(report, "report", what=f"{label} {file}")
    dups = sorted(i for i, n in Counter(str(c["id"]) for c in report["checks"]).items() if n > 1)
    if dups:
        raise UserError(f"{label} {file}: checks: duplicate id {', '.join(dups[:5])}")
    return report


def _rank(ladder: data.Ladder, tier: Any, label: str) -> int:
    try:
        return tier_rank(ladder, tier)
    except ValueError:
        raise UserError(f"{label}: tier {tier!r} is not in the tier ladder ({', '.join(ladder.names())})") from None


def scalar_leaves(metrics: Any, path: str = "") -> Iterator[tuple[str, Any]]:
    """(path, value) for every non-container leaf, numeric or not (null, strings, booleans too)."""
    if isinstance(metrics, dict):
        for k, v in metrics.items():
            yield from scalar_leaves(v, f"{path}.{k}" if path else str(k))
    elif isinstance(metrics, list):
        for i, v in enumerate(metrics):
            yield from scalar_leaves(v, f"{path}[{i}]")
    else:
        yield path, metrics


def _numeric(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)


def _compare_metrics(cid: str, old: Mapping[str, Any], new: Mapping[str, Any], tolerance: float) -> Iterator[Finding]:
    new_all = dict(scalar_leaves(new))
    for path, key, before in metric_leaves(old):
        way = direction(key)
        if way is None or not math.isfinite(before):
            continue
        if not _numeric(new_all.get(path)):
            shown = "absent" if path not in new_all else f"{type(new_all[path]).__name__} {new_all[path]!r}"
            yield Finding("metric", True, cid, before, new_all.get(path),
                          f"metrics.{path} ({way} is better) was {before:g}, is no longer a number in NEW ({shown})")
            continue
        after = float(new_all[path])
        if before == 0:
            continue
        change = (after - before) / abs(before)
        worse = change < -tolerance if way == "higher" else change > tolerance
        if worse:
            yield Finding("metric", True, cid, before, after,
                          f"metrics.{path} ({way} is better) changed {change:+.1%}, beyond the {tolerance:.0%} tolerance")


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


def diff_reports(old: Mapping[str, Any], new: Mapping[str, Any], ladder: data.Ladder,
                 tolerance: float = 0.1, *, allow_different_product: bool = False) -> list[Finding]:
    """All findings between two reports (pure); UserError when they are of different products or
    releases and `allow_different_product` is not set."""
    problem = same_product_problem(old, new)
    if problem and not allow_different_product:
        raise UserError(f"diff: {problem}")
    if not isinstance(tolerance, (int, float)) or not math.isfinite(tolerance) or tolerance < 0:
        raise UserError(f"--tolerance: expected a finite number >= 0, got {tolerance!r}")
    for label, report in (("OLD", old), ("NEW", new)):
        dups = sorted(i for i, n in Counter(str(c["id"]) for c in report["checks"]).items() if n > 1)
        if dups:
            raise UserError(f"{label}: checks: duplicate id {', '.join(dups[:5])}")
    findings: list[Finding] = []
    old_rank, new_rank = _rank(ladder, old.get("tier"), "OLD"), _rank(ladder, new.get("tier"), "NEW")
    if new_rank != old_rank:
        findings.append(Finding("tier", new_rank < old_rank, None, old.get("tier"), new.get("tier"),
                                "tier dropped" if new_rank < old_rank else "tier rose"))
    old_checks = {c["id"]: c for c in old["checks"]}
    new_checks = {c["id"]: c for c in new["checks"]}
    for cid, before in old_checks.items():
        after = new_checks.get(cid)
        if after is None:
            findings.append(Finding("removed", True, cid, before["outcome"], None, "check absent from NEW"))
            continue
        if before["outcome"] != after["outcome"]:
            regressed = before["outcome"] == PASSING and after["outcome"] in REGRESSED_FROM_PASS
            findings.append(Finding("outcome", regressed, cid, before["outcome"], after["outcome"],
                                    (after.get("reason") or "") if regressed else "outcome changed"))
        findings.extend(_compare_metrics(cid, before.get("metrics") or {}, after.get("metrics") or {}, tolerance))
    for cid in new_checks:
        if cid not in old_checks:
            findings.append(Finding("added", False, cid, None, new_checks[cid]["outcome"], "check new in NEW"))
    return findings


def render(findings: list[Finding], fmt: str, old_label: str, new_label: str, tolerance: float) -> str:
    regressions = [f for f in findings if f.regression]
    verdict = (f"REGRESSION: {len(regressions)} regression(s)" if regressions else "no regressions")
    if fmt == "json":
        return json.dumps({"old": old_label, "new": new_label, "tolerance": tolerance,
                           "regression": bool(regressions), "findings": [asdict(f) for f in findings]}, indent=2)
    if fmt not in FORMATS:
        raise UserError(f"--format: unknown format {fmt!r}; expected one of {', '.join(FORMATS)}")
    def cell(f: Finding, value: Any) -> Any:
        return ("none" if f.kind == "tier" else "-") if value is None else value

    rows = [["REGRESSION" if f.regression else "info", f.kind, f.check or "-", cell(f, f.old), cell(f, f.new),
             f.detail] for f in findings]
    headers = ["", "kind", "check", "old", "new", "detail"]
    if fmt == "md":
        rows = [[markdown_cell(c, limit=300) for c in r] for r in rows]
        head = (f"### Conformance diff: {markdown_cell(old_label, limit=200)} → {markdown_cell(new_label, limit=200)} "
                f"(tolerance {tolerance:.0%})\n\n")
        table = tabulate(rows, headers=headers, tablefmt="github", disable_numparse=True) if rows else "_No differences._"
        return f"{head}{table}\n\n**{verdict}**"
    rows = [[terminal(c, limit=300) for c in r] for r in rows]
    table = tabulate(rows, headers=headers, tablefmt="simple", disable_numparse=True) if rows else "no differences"
    return f"diff {terminal(old_label, limit=200)} -> {terminal(new_label, limit=200)} (tolerance {tolerance:.0%})\n{table}\n{verdict}"
