"""The SIG dashboard: `ray-conformance review DIR --format html`.

The SIG's register first: one row per product (signing/register.py) with its current tier (the
latest verified report's; "demoted from stable on DATE" with the checks that changed), its
certificate's validity (valid / expiring / expired, signing/validity.py), and its history (each
report, its tier, the SIG's decision, validity, revocation), filterable by vendor, tier,
capability and Ray version. The page runs no script (its Content-Security-Policy forbids any):
the filters are radio buttons and CSS `:has()` rules over class names made of indices, never of
outside strings. Then one row per submission (vendor, product, verification, claimed and
recomputed tier, the capabilities its results certify, Ray version, date, failing and waived
checks, validity, decision), each linking that submission's report page. The pages are
rendered here, by this suite, from each submission's report.json — the file the signature covers
— and never taken from a report.html inside the submission, which nothing signs and which a
submitter could have written by hand.

Output goes to a folder of its own (index.html, submissions/<name>/report.html). A file there is
replaced only when this package wrote it (its generator meta tag says so); anything else stops
the review with a one-line error, so nothing a user made is overwritten.
"""
from __future__ import annotations

import os
import re
from pathlib import Path
from typing import Any, Sequence
from urllib.parse import quote

from conformance.errors import UserError
from conformance.report.build import _atomic_write
from conformance.report.html import model
from conformance.report.html.page import GENERATOR, environment, render_report_page
from conformance.signing import register
from conformance.signing.review import DEFAULT_TIMEOUT_S, Row, SubmissionTimeout, time_limit

_GENERATOR_TAG = re.compile(r'<meta name="generator" content="' + re.escape(GENERATOR) + r'">')


def verification_state(signature: str) -> str:
    """A CSS class for the signature column: good, unknown (unsigned/unverified) or bad."""
    if signature.startswith("verified"):
        return "good"
    if signature in ("unsigned", "unverified"):
        return "unknown"
    return "bad"


def _read_report(folder: Path) -> dict[str, Any] | None:
    """report.json read exactly as verify reads it (signing/submission.py): no symlink out of the
    submission, no symlinked submission, size caps, strict JSON; None when verify would refuse it."""
    from conformance.signing.submission import read_folder

    if folder.is_symlink():
        return None
    try:
        return read_folder(folder).report
    except UserError:
        return None


def _page_name(submission: str, taken: set[str]) -> str:
    base = re.sub(r"[^A-Za-z0-9._-]+", "-", submission).strip(".-") or "submission"
    name, n = base, 2
    while name in taken:
        name, n = f"{base}-{n}", n + 1
    taken.add(name)
    return name


def _write_ours(path: Path, text: str) -> None:
    """Write `path` unless a file there was not made by this package."""
    if path.exists():
        head = path.read_text(encoding="utf-8", errors="replace")[:4000] if path.is_file() else ""
        if not _GENERATOR_TAG.search(head):
            raise UserError(f"review: {path} exists and was not written by ray-conformance; "
                            "choose an empty folder with --out", field="--out")
    path.parent.mkdir(parents=True, exist_ok=True)
    _atomic_write(path, text)


MAX_HISTORY = 50  # reports listed per product on the index (the rest counted)
FACETS = ("vendor", "tier", "capability", "ray")


def products(rows: Sequence[Row], pages: dict[str, str | None]) -> list[dict[str, Any]]:
    """One entry per product: its current report's standing and its history, newest first."""
    out = []
    for g in register.group(rows):
        hist = list(reversed(register.history(g)))
        current = next((r for r in g if r.current), None)
        entry: dict[str, Any] = {
            "vendor": g[0].vendor, "product": g[0].product, "tier": current.product_tier if current else None,
            "current": current.submission if current else None, "demoted": current.demoted if current else None,
            "validity": current.validity if current else "?", "valid_until": current.valid_until if current else None,
            "capabilities": list(current.capabilities or []) if current else [],
            "ray_versions": sorted({r.ray_version for r in g}),
            "history": [{"submission": r.submission, "date": r.date, "tier": r.recomputed_tier,
                         "state": verification_state(r.signature), "signature": r.signature, "decision": r.decision,
                         "validity": r.validity, "valid_until": r.valid_until, "revoked": r.revoked,
                         "current": r.current, "ray": r.ray_version, "page": pages.get(r.submission)}
                        for r in hist[:MAX_HISTORY]],
            "more": max(0, len(hist) - MAX_HISTORY)}
        out.append(entry)
    return out


def _facets(entries: list[dict[str, Any]]) -> dict[str, list[str]]:
    """The values each filter offers, and on each entry the class names of the values it has
    (`fv-<facet>-<index>`: indices, so no outside string reaches the page's CSS)."""
    values: dict[str, list[str]] = {f: [] for f in FACETS}
    for e in entries:
        has = {"vendor": [str(e["vendor"])], "tier": [str(e["tier"] or "none")],
               "capability": [str(c) for c in e["capabilities"]], "ray": [str(v) for v in e["ray_versions"]]}
        classes = []
        for facet, vals in has.items():
            for v in vals:
                if v not in values[facet]:
                    values[facet].append(v)
                classes.append(f"fv-{facet}-{values[facet].index(v)}")
        e["classes"] = " ".join(classes)
    return values


def render_dashboard_html(entries: Sequence[dict[str, Any]], title: str,
                          register_entries: Sequence[dict[str, Any]] = ()) -> str:
    """The index page from prepared entries (see `write_site`); every string sanitised first."""
    clean = model.clean_tree([dict(e) for e in entries])
    listed = model.clean_tree([dict(e) for e in register_entries])
    facets = _facets(listed)
    for e in clean:
        notes = list(e.get("notes") or [])
        e["notes"] = notes[:MAX_NOTES] + ([f"... {len(notes) - MAX_NOTES} more note(s) (review --format json lists "
                                            f"them all)"] if len(notes) > MAX_NOTES else [])
        e["state"] = verification_state(str(e.get("signature", "")))
        claimed, certified = e.get("claimed_capabilities"), e.get("capabilities")
        e["caps_mismatch"] = claimed is not None and certified is not None and sorted(claimed) != sorted(certified)
        e["mismatch"] = e.get("claimed_tier") != e.get("recomputed_tier") or e["caps_mismatch"]
    counts = {"submissions": len(clean), "verified": sum(e["state"] == "good" for e in clean),
              "mismatch": sum(e["mismatch"] for e in clean),
              "duplicates": sum(bool(e.get("duplicate_of")) for e in clean),
              "lookalikes": sum(bool(e.get("looks_like")) for e in clean),
              "products": len(listed), "expired": sum(e["validity"] == "expired" for e in listed),
              "expiring": sum(e["validity"] == "expiring" for e in listed),
              "demoted": sum(bool(e.get("demoted")) for e in listed),
              "revoked": sum(bool(e.get("revoked")) for e in clean)}
    return environment().get_template("dashboard.html.j2").render(
        entries=clean, title=model.clean_tree(title), counts=counts, products=listed, facets=facets)


MAX_NOTES = 50  # notes shown per submission on the index (the rest counted)


def _draw_page(report: dict[str, Any], link_base: str, timeout_s: float | None) -> tuple[str | None, list[str]]:
    """(the page or None, notes): drawing one submission's page is bounded like verifying it:
    by time (`timeout_s`, review's --submission-timeout) and by what one report may draw
    (conformance.report.html.limits; each cut becomes a note)."""
    try:
        with time_limit(timeout_s):
            page, capped = render_report_page(report, link_base=link_base)
    except SubmissionTimeout as exc:
        return None, [f"no page: drawing it {exc} (--submission-timeout)"]
    except Exception as exc:  # noqa: BLE001 - one hostile report loses its page, never the index
        return None, [f"no page: {exc.__class__.__name__}: {exc}"[:300]]
    return page, [f"page capped: {c}" for c in capped]


def write_site(folder: Path, rows: Sequence[Row], out: Path, *, timeout_s: float | None = DEFAULT_TIMEOUT_S) -> Path:
    """index.html plus one report page per readable submission under `out`; returns index.html."""
    out = Path(out)
    if out.exists() and not out.is_dir():
        raise UserError(f"review: {out} is not a folder", field="--out")
    taken: set[str] = set()
    entries = []
    pages: dict[str, str | None] = {}
    for row in rows:
        sub = Path(folder) / row.submission
        report = _read_report(sub)
        entry = row.public()
        entry["ray_version"] = str(model.as_dict(model.as_dict(report).get("environment")).get("ray", "?"))
        entry["page"] = None
        if report is not None:
            page_dir = out / "submissions" / _page_name(row.submission, taken)
            link_base = quote(Path(os.path.relpath(sub.resolve(), page_dir.resolve())).as_posix(), safe="/")
            page, notes = _draw_page(report, link_base, timeout_s)
            entry["notes"] = [*entry.get("notes", []), *notes]
            if page is not None:
                _write_ours(page_dir / "report.html", page)
                entry["page"] = f"submissions/{page_dir.name}/report.html"
        pages[row.submission] = entry["page"]
        entries.append(entry)
    index = out / "index.html"
    _write_ours(index, render_dashboard_html(entries, f"Conformance submissions: {Path(folder).resolve().name}",
                                             products(rows, pages)))
    return index
