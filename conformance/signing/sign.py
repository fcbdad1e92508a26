"""`sign_report_dir`: sign a report folder (used by `sign`, `run --sign-key` and the example).

Apart from conformance.signing.attestation (which builds the statement) because it reads the folder
through conformance.signing.submission, the reader verify uses, and that reader needs attestation's
file names: one module each way would be an import cycle.
"""
from __future__ import annotations

import json
from pathlib import Path

from conformance.catalog import releases
from conformance.errors import UserError
from conformance.report.view import Report
from conformance.sanitize import terminal
from conformance.signing import dsse, keys, submission
from conformance.signing.attestation import (
    BUNDLE_NAME,
    ENVELOPE_NAME,
    MAX_ENVELOPE_BYTES,
    REPORT_JSON,
    build_statement,
    plugin_artifact,
    read_file,
    write_new,
)
from conformance.signing.canonical import canonical_json


def report_release(report: Report, releases_file: Path | None = None) -> releases.Release:
    """The listed release report.json names (suite.version): the statement carries that release's
    data digests, never this installation's, so a report of an older release is signed as
    verify judges it. A version no release lists is refused (verify would reject it)."""
    path = Path(releases_file or releases.default_path())
    known = releases.load_releases(path)
    version = report.suite.version
    release = known.get(version)
    if release is None:
        listed = ", ".join(list(known)[-3:]) or "none"
        raise UserError(f"sign: refused: report.json suite.version {terminal(repr(version), limit=80)} is not a "
                        f"release listed in {path} (latest: {listed}); verify would reject it")
    return release


def signed_report_digest(path: Path) -> str | None:
    """The sha256 of report.json that the envelope or bundle at `path` names as its subject;
    None when it cannot be read as one (damaged, too large, not an envelope). Read only to word
    sign's refusal: nothing here is trusted, and the signature is not checked."""
    try:
        doc = json.loads(read_file(path, "signature", max_bytes=MAX_ENVELOPE_BYTES))
        statement = json.loads(dsse.parse_envelope(doc, str(path)).body)
        for subject in statement.get("subject") or []:
            if isinstance(subject, dict) and subject.get("name") == REPORT_JSON:
                digest = (subject.get("digest") or {}).get("sha256")
                return digest if isinstance(digest, str) else None
    except (UserError, ValueError, AttributeError, TypeError):
        return None
    return None


def existing_signature_refusal(target: Path, report_sha256: str) -> str:
    """sign's one line for a signature already in the folder. --force is offered only when that
    signature covers this very report.json (re-signing, e.g. with another key, loses nothing);
    one of another report.json is an earlier run's, which --force would destroy, so the line says
    to move it away instead."""
    name = terminal(target)
    if signed_report_digest(target) == report_sha256:
        return f"sign: {name} already signs this report.json; refusing to overwrite (pass --force to re-sign it)"
    return (f"sign: {name} is not a signature of this report.json (an earlier run's, or damaged); refusing to "
            f"overwrite it: move {ENVELOPE_NAME} and {BUNDLE_NAME} out of {terminal(target.parent)} first "
            f"(e.g. into its previous/ folder, where `run` keeps earlier runs)")


def sign_report_dir(report_dir: Path, key_path: Path, passphrase: bytes | None = None,
                    *, overwrite: bool = False, allow_insecure_key_mode: bool = False,
                    releases_file: Path | None = None) -> Path:
    """Sign the report in `report_dir`; write report.intoto.json (and report.sigstore.json).

    Refuses (UserError) whatever verify would refuse, first and with verify's own line
    (signing/submission.py): a report file missing, a symlink leaving the folder, a file over its
    cap, report.json not strict JSON or not schema-valid, a field without a trust status, a vendor
    or product name that could print like another (verify's `names` line, the same function), an
    envelope over verify's size cap. Also refuses a key that cannot be loaded or whose file is
    open to group/others (unless `allow_insecure_key_mode`), and an existing envelope unless
    `overwrite`, and a report whose suite.version is not a listed release (`releases_file`,
    default tiers/releases.yaml): the statement carries that release's data digests.
    Returns the path of report.intoto.json.
    """
    report_dir = Path(report_dir)
    if not report_dir.is_dir():
        raise UserError(f"sign: {report_dir} is not a directory")
    read = submission.read_folder(report_dir)
    report = read.report
    problem = submission.schema_problem(report, submission.report_schema_for(report))
    if problem:
        raise UserError(f"sign: refused, verify would say: FAIL schema: report.json: {problem}")
    plugin_artifact(report)
    problem = submission.trust_problem("report", report)
    if problem:
        raise UserError(f"sign: refused, verify would say: FAIL trust: {problem}")
    problem = submission.name_problem(report)
    if problem:
        raise UserError(f"sign: refused, verify would say: FAIL names: {problem}")
    targets = [report_dir / ENVELOPE_NAME, report_dir / BUNDLE_NAME]
    if not overwrite:
        for t in targets:
            if t.exists() or t.is_symlink():
                raise UserError(existing_signature_refusal(t, read.digests()[REPORT_JSON]))
    release = report_release(Report.from_json(report), releases_file)   # the schema held above
    private_key = keys.load_private_key(Path(key_path), passphrase, allow_insecure_mode=allow_insecure_key_mode)
    statement = build_statement(report, read.digests(), release.report_schema_sha256, release.descriptors())
    envelope = dsse.make_envelope(canonical_json(statement), private_key)
    texts = [(json.dumps(envelope, indent=2, sort_keys=True, allow_nan=False) + "\n").encode(),
             (json.dumps(dsse.make_bundle(envelope), indent=2, sort_keys=True, allow_nan=False) + "\n").encode()]
    for target, text in zip(targets, texts):
        problem = submission.envelope_size_problem(target, len(text))
        if problem:
            raise UserError(f"sign: refused, verify would say: {problem}")
    try:
        for target, text in zip(targets, texts):
            write_new(target, text, overwrite)
    except FileExistsError as exc:
        raise UserError(f"sign: {exc.filename} already exists; refusing to overwrite") from None
    return targets[0]
