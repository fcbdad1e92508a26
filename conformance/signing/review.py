"""SIG review: one row per submission folder, with the tier recomputed rather than believed.

A submissions folder holds one sub-folder per submission (report.json, junit.xml, report.md,
report.intoto.json). Without a keyring the signature column says "unverified"; with one, every
verify check runs and the column says whether the submission verified and, if not, which checks failed.
A broken submission becomes a row with the error, never an abort of the whole review; one over
its bounds (tiers/review.yaml: size, time) a row that says "too large" or "took too long".

Each row also says how long its certificate holds (signing/validity.py: valid / expiring /
expired), whether the SIG's signed list revokes it (signing/report_revocation.py), the decision
the SIG signed on it (signing/decision.py, with --decision-key), and its product's standing: the
current tier is the latest verified report's, and a later lower one demotes it (signing/register.py).
"Latest" is as the SIG received them where its decisions say (signing/receipts.py): a report dated
before one it received earlier is marked RE-DATED?, and a received report is verified on its
receipt's day.
"""
from __future__ import annotations

import json
import re
import time
from dataclasses import dataclass, field
from datetime import date
from pathlib import Path
from typing import Any, Mapping, Sequence

from tabulate import tabulate

from conformance import identity
from conformance.catalog import capabilities as caps
from conformance.catalog import datafiles, releases
from conformance.catalog.ladder import compute_tiers
from conformance.catalog.strict_input import as_list, as_map
from conformance.errors import UserError
from conformance.report.view import Report
from conformance.sanitize import markdown_cell, terminal
from conformance.signing import attestation as att
from conformance.signing import bounds, decision, receipts, register, submission, trust, validity
from conformance.signing.bounds import SubmissionTimeout
from conformance.signing.keyring import TrustedKey
from conformance.signing.report_revocation import RevocationList
from conformance.signing.review_row import Row
from conformance.signing.verify import verify_path
from conformance.signing.verify.lines import Verification
from conformance.signing.verify.release_files import release_inputs, release_waivers
from conformance.signing.verify.waivers import effective_checks, finished_date

FORMATS = ("text", "md", "json")
_HEADERS = ["submission", "vendor", "product", "suite", "date", "claimed tier", "recomputed tier",
            "capabilities (recomputed)", "signature", "failing", "waived", "same product as", "validity",
            "product tier"]
_NOT_VALID = "report.json is not schema-valid: "


def _recompute(report: dict[str, Any], known: dict[str, releases.Release], releases_file: Path,
               waivers_file: Path | None) -> tuple[str | None, list[str] | None, str]:
    """(recomputed tier, certified capabilities, '') or (None, None, why it could not be recomputed).

    Both come from the per-check outcomes (waivers applied as verify applies them) and the
    release's checklist, label vocabulary and profiles, as verify computes them."""
    problem = submission.schema_problem(report, datafiles.schema_path("report"))
    if problem:
        return None, None, f"{_NOT_VALID}{problem}"
    view = Report.from_json(report)
    version = view.suite.version
    release = known.get(version)
    if release is None:
        return None, None, f"unknown suite release {version!r}"
    try:
        checklist, ladder = releases.load_release_data(release, releases_file)
        waivers, _ = release_waivers(release, releases_file, waivers_file)
        checks = effective_checks([c.document for c in view.checks], waivers or [], finished_date(view.finished_at))
        inputs, missing = release_inputs(release, releases_file)
        profiles = inputs.profiles_for(report)
        if missing or profiles is None:
            return None, None, f"cannot recompute: this reviewer lacks release {version}'s {' and '.join(missing)}"
        tier, _ = compute_tiers(checks, checklist, ladder, trust.tier_context(report, inputs.domain_keys))
        certified = caps.certified_names(caps.compute_capabilities(checks, checklist, profiles, view.manifest))
    except UserError as exc:
        return None, None, f"cannot recompute: {exc}"
    return tier, certified, ""


def _claimed_capabilities(report: dict[str, Any]) -> list[str] | None:
    claimed = report.get("capabilities")
    if not isinstance(claimed, list):
        return None
    return caps.certified_names(c for c in claimed if isinstance(c, dict))


def _short_str(value: object) -> str:
    return value if isinstance(value, str) else "?" if value is None else f"<{type(value).__name__}>"


@dataclass(frozen=True)
class DecisionSigning:
    """review --decision-key: the SIG's private key and the folder its decisions go to."""

    key: Path
    passphrase: bytes | None
    folder: Path


@dataclass(frozen=True)
class Context:
    """What a review reads besides the submissions: the SIG's revocation list, the day validity is
    judged on and its policy, where decisions are signed to, and when the SIG received the
    reports it decided on before (its decisions' times)."""

    today: date
    policy: validity.Policy | None = None
    revocations: RevocationList | None = None
    decisions: DecisionSigning | None = None
    # report.json sha256 -> the SIG's earliest signed decision on it (signing/receipts.py)
    received: Mapping[str, receipts.Receipt] = field(default_factory=dict)


def _dates(row: Row, report: dict[str, Any], known: dict[str, releases.Release], ctx: Context) -> None:
    version = as_map(report.get("suite")).get("version")
    release = known.get(version) if isinstance(version, str) else None
    valid = validity.certificate_validity(report, release, ctx.policy)
    if valid is not None and ctx.policy is not None:
        row.valid_until, row.validity = valid.valid_until.isoformat(), valid.state(ctx.today, ctx.policy)


def _decide(row: Row, folder: Path, v: Verification, releases_file: Path, sign: DecisionSigning) -> None:
    """Sign the SIG's decision on this submission as verify judged it (an existing one is kept)."""
    name = re.sub(r"[^A-Za-z0-9._-]+", "-", row.submission).strip(".-") or "submission"
    target = sign.folder / f"{name}.{decision.DECISION_NAME}"
    if target.exists() or target.is_symlink():
        row.decision = f"{target.name} (kept: it exists)"
        return
    sign.folder.mkdir(parents=True, exist_ok=True)
    failed = list(dict.fromkeys(v.failed()))
    assert v.report is not None  # the caller decides only on a report verify read
    try:
        statement = decision.decide(folder, v.envelope, v.report, ok=not failed, failed=failed,
                                    recomputed_tier=v.recomputed_tier, releases_file=releases_file,
                                    key_path=sign.key, passphrase=sign.passphrase, now=trust.utc_now())
        decision.write(target, statement, sign.key, sign.passphrase)
    except UserError as exc:  # the row stands as verify judged it; only the decision is missing
        row.notes.append(f"no decision: {exc}")
        return
    row.decision = target.name


def _fill(row: Row, folder: Path, trusted: Sequence[TrustedKey] | None, known: dict[str, releases.Release],
          releases_file: Path, waivers_file: Path | None, ctx: Context | None = None) -> None:
    ctx = ctx or Context(trust.utc_now().date())
    raw = att.read_file(folder / att.REPORT_JSON, "review", within=folder)
    report = att.parse_report(raw, str(folder / att.REPORT_JSON))
    row.report_sha256 = datafiles.sha256_bytes(raw)
    receipt = receipts.received(row, ctx.received)
    row.received = receipt.at.strftime("%Y-%m-%dT%H:%M:%SZ") + f" ({receipt.decision})" if receipt else None
    manifest = as_map(report.get("manifest"))
    suite = as_map(report.get("suite"))
    row.vendor = _short_str(manifest.get("vendor"))
    row.product = _short_str(manifest.get("product"))
    row.suite_version = _short_str(suite.get("version"))
    row.date = _short_str(report.get("finished_at"))[:10]
    row.finished_at = _short_str(report.get("finished_at"))
    row.ray_version = _short_str(as_map(report.get("environment")).get("ray"))
    row.claimed_tier = report.get("tier") if isinstance(report.get("tier"), str) else None
    checks = as_list(report.get("checks"))
    checks = [c for c in checks if isinstance(c, dict)]
    row.failing = sorted(_short_str(c.get("id")) + (" (flaky)" if c.get("outcome") == "flaky" else "")
                         for c in checks if c.get("outcome") in att.FAILED_OUTCOMES)
    row.waived = sorted(_short_str(c.get("id")) for c in checks if c.get("outcome") == "waived")
    row.outcomes = {c["id"]: c["outcome"] for c in checks if isinstance(c.get("id"), str) and isinstance(c.get("outcome"), str)}
    row.claimed_capabilities = _claimed_capabilities(report)
    row.notes += identity.report_name_problems(report)
    row.recomputed_tier, row.capabilities, why = _recompute(report, known, releases_file, waivers_file)
    if why:
        row.notes.append(why)
        row.recomputed_tier = None
    if row.capabilities_mismatch:
        row.notes.append(f"claimed capabilities ({', '.join(row.claimed_capabilities or []) or 'none'}) differ from "
                         f"what its results certify ({', '.join(row.capabilities or []) or 'none'})")
    if why.startswith(_NOT_VALID):  # nothing below can be judged on an invalid report
        row.signature = f"error: {why}"
        return
    _dates(row, report, known, ctx)
    listed = ctx.revocations.find(row.report_sha256) if ctx.revocations else None
    if listed is not None:  # the SIG took it back: nothing else about it counts
        row.revoked = listed.line()
        row.signature = f"REVOKED: {listed.line()}"
        return
    has_envelope = any((folder / n).exists() or (folder / n).is_symlink() for n in (att.ENVELOPE_NAME, att.BUNDLE_NAME))
    if not has_envelope:
        row.signature = "unsigned"
    elif not trusted:
        row.signature = "unverified"
    else:
        try:
            # a report the SIG received before is judged on its clock then (the release window)
            v = verify_path(folder, trusted, releases_file=releases_file, waivers_file=waivers_file,
                            now=receipt.at if receipt else None)
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
            if ctx.decisions is not None and v.report is not None:
                _decide(row, folder, v, releases_file, ctx.decisions)


def _row(folder: Path, trusted: Sequence[TrustedKey] | None, known: dict[str, releases.Release],
         releases_file: Path, waivers_file: Path | None, ctx: Context | None = None) -> Row:
    """One row; whatever is wrong with the submission (unreadable, hostile) is its error."""
    row = Row(folder.name)
    try:
        if folder.is_symlink():
            raise UserError(f"review: {folder.name} is a symlink; submissions must be real folders")
        _fill(row, folder, trusted, known, releases_file, waivers_file, ctx)
    except UserError as exc:
        row.signature, row.recomputed_tier = f"error: {exc}", None
        row.notes.append(str(exc))
    except Exception as exc:  # noqa: BLE001 - whatever one submission raises is its row, never the review's end
        # a defect this input exposed: still one row, every other row still printed
        row.signature, row.recomputed_tier = f"error: unexpected {exc.__class__.__name__}: {exc}", None
        row.notes.append(row.signature)
    return row


def _over_bound(name: str, why: str) -> Row:
    row = Row(name, signature=f"error: {why}", over_bound=why)
    row.notes.append(why)
    return row


def review_submission(folder: Path, trusted: Sequence[TrustedKey] | None, known: dict[str, releases.Release],
                      releases_file: Path, waivers_file: Path | None = None,
                      timeout_s: float | None = None, max_bytes: int | None = None,
                      worker: bounds.BoundedWorker[Path, Row] | None = None, ctx: Context | None = None) -> Row:
    """One row, within the submission's bounds (conformance/signing/bounds.py; None: tiers/review.yaml's):
    over the size cap it is not read, and its review runs in a worker process ended at the time
    bound (`worker`: one that reviews with these keys, releases and context, kept across submissions)."""
    if worker is None:
        one: bounds.BoundedWorker[Path, Row]
        with bounds.BoundedWorker(lambda f: _row(f, trusted, known, releases_file, waivers_file, ctx)) as one:
            return review_submission(folder, trusted, known, releases_file, waivers_file, timeout_s, max_bytes, one,
                                     ctx)
    limits = bounds.load_bounds()
    timeout_s = limits.timeout_s if timeout_s is None else timeout_s
    started = time.monotonic()
    why = bounds.too_large(folder, limits.max_bytes if max_bytes is None else max_bytes)
    if why:
        return _over_bound(folder.name, why)
    try:
        row = worker(folder, timeout_s)
    except SubmissionTimeout as exc:
        row = _over_bound(folder.name, str(exc))
    except (UserError, RuntimeError) as exc:  # the child's own failure, not the submission's answer
        row = Row(folder.name, signature=f"error: {exc}")
        row.notes.append(row.signature)
    row.review_s = round(time.monotonic() - started, 3)
    return row


def _known(value: str) -> bool:
    return value != "?" and not value.startswith("<")


_PAIR_NOTES = 5  # notes per row about other rows (duplicate_of and looks_like list every one)


def mark_same_products(rows: Sequence[Row]) -> None:
    """Mark rows that show the same vendor and product as another row.

    Same spelling (NFKC, trimmed): a duplicate submission of one product, two "verified" rows the
    SIG must not count twice. A different spelling that looks the same (the TR39 confusable
    skeleton, case folded): a look-alike, named with the characters that differ. A vendor that
    only looks like another row's (a different product) is a note on both rows."""
    keys = [(identity.lookalike_keys(r.vendor), identity.lookalike_keys(r.product)) for r in rows]
    for i, a in enumerate(rows):
        for j in range(i + 1, len(rows)):
            b = rows[j]
            if not (_known(a.vendor) and _known(b.vendor)) or not keys[i][0] & keys[j][0]:
                continue
            same_vendor = identity.same(a.vendor, b.vendor)
            product_alike = _known(a.product) and _known(b.product) and bool(keys[i][1] & keys[j][1])
            if product_alike and same_vendor and identity.same(a.product, b.product):
                a.duplicate_of.append(b.submission)
                b.duplicate_of.append(a.submission)
                for x, y in ((a, b), (b, a)):
                    if len(x.duplicate_of) <= _PAIR_NOTES:  # the field lists them all
                        x.notes.append(f"duplicate: submission {y.submission} is the same vendor and product "
                                       f"({y.signature}, {y.date})")
                continue
            for x, y in ((a, b), (b, a)):
                if product_alike:
                    x.looks_like.append(y.submission)
                if sum(n.startswith("look-alike:") for n in x.notes) >= _PAIR_NOTES:
                    continue
                which = "vendor and product" if product_alike else "vendor"
                differ = identity.differing_characters(x.vendor, y.vendor) or \
                    identity.differing_characters(x.product, y.product)
                x.notes.append(f"look-alike: the {which} of submission {y.submission} look(s) like this one's but "
                               f"is spelt differently" + (f" (this one has {', '.join(differ)})" if differ else ""))


def review_folder(folder: Path, trusted: Sequence[TrustedKey] | None = None, *,
                  releases_file: Path | None = None, waivers_file: Path | None = None,
                  timeout_s: float | None = None, max_bytes: int | None = None,
                  revocations: RevocationList | None = None, today: date | None = None,
                  decisions: DecisionSigning | None = None,
                  received: Mapping[str, receipts.Receipt] | None = None) -> list[Row]:
    """One row per submission sub-folder, each within its bounds (None: tiers/review.yaml's).
    `received`: the SIG's receipts of reports it decided on before (signing/receipts.py)."""
    folder = Path(folder)
    if not folder.is_dir():
        raise UserError(f"review: {folder} is not a directory")
    subs = sorted(p for p in folder.iterdir() if (p.is_dir() or p.is_symlink()) and not p.name.startswith("."))
    if not subs:
        raise UserError(f"review: {folder} has no submission sub-folders")
    releases_file = Path(releases_file or releases.default_path())
    known = releases.load_releases(releases_file)
    ctx = Context(today or trust.utc_now().date(), validity.load_policy(releases_file), revocations, decisions,
                  dict(received or {}))
    worker: bounds.BoundedWorker[Path, Row]
    with bounds.BoundedWorker(lambda f: _row(f, trusted, known, releases_file, waivers_file, ctx)) as worker:
        rows = [review_submission(p, trusted, known, releases_file, waivers_file, timeout_s, max_bytes, worker, ctx)
                for p in subs]
    mark_same_products(rows)
    receipts.mark_redated(rows)
    mark_keyring_lookalikes(rows, trusted or [])
    register.mark_standing(rows, register.tier_order(), counted=register.counted_rows(rows, verified_only=bool(trusted)))
    return rows


def mark_keyring_lookalikes(rows: Sequence[Row], trusted: Sequence[TrustedKey]) -> None:
    """A note on each row whose vendor looks like a keyring vendor without being that vendor."""
    declared = list(dict.fromkeys(v for k in trusted for v in (k.vendors or ())))
    for row in rows:
        for vendor in declared:
            if _known(row.vendor) and identity.looks_alike(row.vendor, vendor) and not identity.same(row.vendor, vendor):
                differ = identity.differing_characters(row.vendor, vendor)
                row.notes.append(f"look-alike: vendor looks like the keyring's vendor {ascii(vendor)} but is spelt "
                                 f"differently" + (f" (it has {', '.join(differ)})" if differ else ""))


def render(rows: Sequence[Row], fmt: str = "text") -> str:
    """The table; every cell is outside text, so each is sanitised for its medium."""
    if fmt == "json":
        return json.dumps([r.public() for r in rows], indent=2)
    if fmt not in FORMATS:
        raise UserError(f"--format: unknown format {fmt!r}; expected one of {', '.join(FORMATS)}")
    if fmt == "md":
        cells = [[markdown_cell(c, limit=300) for c in r.cells()] for r in rows]
        return tabulate(cells, headers=_HEADERS, tablefmt="github", disable_numparse=True)
    cells = [[terminal(c, limit=300) for c in r.cells()] for r in rows]
    return tabulate(cells, headers=_HEADERS, tablefmt="simple", disable_numparse=True)
