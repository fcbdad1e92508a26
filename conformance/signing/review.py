"""SIG review: one row per submission folder, with the tier recomputed rather than believed.

A submissions folder holds one sub-folder per submission (report.json, junit.xml, report.md,
report.intoto.json). Without a keyring the signature column says "unverified"; with one, every
verify check runs and the column says whether the submission verified and, if not, which checks failed.
A broken submission becomes a row with the error, never an abort of the whole review.
"""
from __future__ import annotations

import json
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Sequence

from tabulate import tabulate

from conformance.errors import UserError
from conformance.signing import attestation as att
from conformance.signing import releases
from conformance.signing.keyring import TrustedKey
from conformance.signing.verify import verify_path
from conformance.tiers import compute_tiers, context_from_report

FORMATS = ("text", "md", "json")
_HEADERS = ["submission", "vendor", "product", "suite", "date", "claimed tier", "recomputed tier",
            "signature", "failing", "waived"]


@dataclass
class Row:
    submission: str
    vendor: str = "?"
    product: str = "?"
    suite_version: str = "?"
    date: str = "?"
    claimed_tier: str | None = None
    recomputed_tier: str | None = None
    signature: str = "unverified"
    failing: list[str] = field(default_factory=list)
    waived: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)

    def cells(self) -> list[str]:
        return [self.submission, self.vendor, self.product, self.suite_version, self.date,
                self.claimed_tier or "none", self.recomputed_tier or "none", self.signature,
                ", ".join(self.failing) or "-", ", ".join(self.waived) or "-"]


def _recompute(report: dict[str, Any], known: dict[str, releases.Release], releases_file: Path) -> tuple[str | None, str]:
    """(recomputed tier, '' ) or (None, why it could not be recomputed)."""
    version = (report.get("suite") or {}).get("version")
    release = known.get(version) if isinstance(version, str) else None
    if release is None:
        return None, f"unknown suite release {version!r}"
    try:
        checklist, ladder = releases.load_release_data(release, releases_file)
        tier, _ = compute_tiers(report.get("checks") or [], checklist, ladder, context_from_report(report))
    except (UserError, KeyError, TypeError) as exc:
        return None, f"cannot recompute: {exc}"
    return tier, ""


def review_submission(folder: Path, trusted: Sequence[TrustedKey] | None, known: dict[str, releases.Release],
                      releases_file: Path, waivers_file: Path | None = None) -> Row:
    row = Row(folder.name)
    try:
        report = att.parse_report(att.read_file(folder / att.REPORT_JSON, "review"), str(folder / att.REPORT_JSON))
    except UserError as exc:
        row.signature, row.recomputed_tier = f"error: {exc}", None
        row.notes.append(str(exc))
        return row
    manifest = report.get("manifest") if isinstance(report.get("manifest"), dict) else {}
    suite = report.get("suite") if isinstance(report.get("suite"), dict) else {}
    row.vendor = str(manifest.get("vendor", "?"))
    row.product = str(manifest.get("product", "?"))
    row.suite_version = str(suite.get("version", "?"))
    row.date = str(report.get("finished_at", "?"))[:10]
    row.claimed_tier = report.get("tier") if isinstance(report.get("tier"), str) else None
    checks = [c for c in report.get("checks") or [] if isinstance(c, dict)]
    row.failing = sorted(str(c.get("id")) for c in checks if c.get("outcome") in att.FAILED_OUTCOMES)
    row.waived = sorted(str(c.get("id")) for c in checks if c.get("outcome") == "waived")
    row.recomputed_tier, why = _recompute(report, known, releases_file)
    if why:
        row.notes.append(why)
        row.recomputed_tier = None
    has_envelope = any((folder / n).is_file() for n in (att.ENVELOPE_NAME, att.BUNDLE_NAME))
    if not has_envelope:
        row.signature = "unsigned"
    elif not trusted:
        row.signature = "unverified"
    else:
        try:
            v = verify_path(folder, trusted, releases_file=releases_file, waivers_file=waivers_file)
        except UserError as exc:
            row.signature = f"error: {exc}"
        else:
            if v.ok:
                row.signature = f"verified ({v.signer.name if v.signer else '?'})"
            elif v.signer is None:
                row.signature = "INVALID signature"
            else:
                row.signature = f"signed by {v.signer.name}; failed: {', '.join(dict.fromkeys(v.failed()))}"
            row.notes += [line.render() for line in v.lines if not line.ok]
    return row


def review_folder(folder: Path, trusted: Sequence[TrustedKey] | None = None, *,
                  releases_file: Path | None = None, waivers_file: Path | None = None) -> list[Row]:
    folder = Path(folder)
    if not folder.is_dir():
        raise UserError(f"review: {folder} is not a directory")
    subs = sorted(p for p in folder.iterdir() if p.is_dir() and not p.name.startswith("."))
    if not subs:
        raise UserError(f"review: {folder} has no submission sub-folders")
    releases_file = Path(releases_file or releases.default_path())
    known = releases.load_releases(releases_file)
    return [review_submission(p, trusted, known, releases_file, waivers_file) for p in subs]


def render(rows: Sequence[Row], fmt: str = "text") -> str:
    if fmt == "json":
        return json.dumps([asdict(r) for r in rows], indent=2)
    if fmt not in FORMATS:
        raise UserError(f"--format: unknown format {fmt!r}; expected one of {', '.join(FORMATS)}")
    table = tabulate([r.cells() for r in rows], headers=_HEADERS, tablefmt="github" if fmt == "md" else "simple")
    return table
