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
from conformance.signing import bounds, register
from conformance.signing.bounds import SubmissionTimeout
from conformance.signing.review_row import Row

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
              "revoked": sum(bool(e.get("revoked")) for e in clean),
              "capped": sum(bool(e.get("page_capped")) for e in clean)}
    return environment().get_template("dashboard.html.j2").render(
        entries=clean, title=model.clean_tree(title), counts=counts, products=listed, facets=facets)


MAX_NOTES = 50  # notes shown per submission on the index (the rest counted)
CAPPED = "page capped: "  # a note saying what a submission's page left out (marked on its row too)


def _draw(job: tuple[Path, str]) -> tuple[str | None, str, list[str]]:
    """(report.json's Ray version or None when it cannot be read, the page or "", what was capped)
    for one (submission folder, link base)."""
    sub, link_base = job
    report = _read_report(sub)
    if report is None:
        return None, "", []
    ray = str(model.as_dict(model.as_dict(report).get("environment")).get("ray", "?"))
    page, capped = render_report_page(report, link_base=link_base)
    return ray, page, capped


def _draw_page(worker: bounds.BoundedWorker[tuple[Path, str], tuple[str | None, str, list[str]]], sub: Path,
               link_base: str, timeout_s: float, bound_s: float) -> tuple[str | None, str | None, list[str]]:
    """(Ray version, the page or None, notes): one submission's page, read and drawn in a child
    process ended at `timeout_s` (what is left of the submission's bound after its review), and
    bounded in what one report may draw (conformance.report.html.limits; each cut becomes a note)."""
    too_long = f"no page: {bounds.took_too_long(bound_s, 'its review and drawing its page')}"
    if timeout_s <= 0:
        return "?", None, [too_long]
    try:
        ray, page, capped = worker((sub, link_base), timeout_s)
    except SubmissionTimeout:
        return "?", None, [too_long]
    except Exception as exc:  # noqa: BLE001 - one hostile report loses its page, never the index
        return "?", None, [f"no page: {exc.__class__.__name__}: {exc}"[:300]]
    return ray, page or None, [f"{CAPPED}{c}" for c in capped]


def write_site(folder: Path, rows: Sequence[Row], out: Path, *, timeout_s: float | None = None) -> Path:
    """index.html plus one report page per readable submission under `out`; returns index.html.

    Each page is drawn in what is left of its submission's time bound (`timeout_s`, None:
    tiers/review.yaml's) after its review (`Row.review_s`); a submission over a bound gets none."""
    out = Path(out)
    if out.exists() and not out.is_dir():
        raise UserError(f"review: {out} is not a folder", field="--out")
    bound = bounds.load_bounds().timeout_s if timeout_s is None else timeout_s
    taken: set[str] = set()
    pages: dict[str, str | None] = {}
    with bounds.BoundedWorker(_draw) as worker:
        entries = [_entry(worker, folder, row, out, bound, taken) for row in rows]
    for entry in entries:
        pages[str(entry["submission"])] = entry["page"]
    index = out / "index.html"
    _write_ours(index, render_dashboard_html(entries, f"Conformance submissions: {Path(folder).resolve().name}",
                                             products(rows, pages)))
    return index


def _entry(worker: bounds.BoundedWorker[tuple[Path, str], tuple[str | None, str, list[str]]], folder: Path,
           row: Row, out: Path, bound: float, taken: set[str]) -> dict[str, Any]:
    """The index's entry for one row, its page drawn (and written) when it is within its bounds."""
    sub = Path(folder) / row.submission
    entry = row.public()
    entry["ray_version"], entry["page"], entry["page_capped"] = "?", None, []
    if row.over_bound or sub.is_symlink():
        return entry
    page_dir = out / "submissions" / _page_name(row.submission, taken)
    link_base = quote(Path(os.path.relpath(sub.resolve(), page_dir.resolve())).as_posix(), safe="/")
    ray, page, notes = _draw_page(worker, sub, link_base, bound - row.review_s, bound)
    entry["ray_version"] = ray or "?"
    if ray is not None:
        entry["notes"] = [*entry.get("notes", []), *notes]
        entry["page_capped"] = [n.removeprefix(CAPPED) for n in notes if n.startswith(CAPPED)]
    if page is not None:
        _write_ours(page_dir / "report.html", page)
        entry["page"] = f"submissions/{page_dir.name}/report.html"
    return entry
