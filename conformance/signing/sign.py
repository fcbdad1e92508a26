"""`sign_report_dir`: sign a report folder (used by `sign`, `run --sign-key` and the example).

Apart from conformance.signing.attestation (which builds the statement) because it reads the folder
through conformance.signing.submission, the reader verify uses, and that reader needs attestation's
file names: one module each way would be an import cycle.
"""
from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from conformance.catalog import releases
from conformance.errors import UserError
from conformance.sanitize import terminal
from conformance.signing import dsse, keys, submission
from conformance.signing.attestation import (
    BUNDLE_NAME,
    ENVELOPE_NAME,
    build_statement,
    plugin_artifact,
    write_new,
)
from conformance.signing.canonical import canonical_json


def report_release(report: dict[str, Any], releases_file: Path | None = None) -> releases.Release:
    """The listed release report.json names (suite.version): the statement carries that release's
    data digests, never this installation's, so a report of an older release is signed as
    verify judges it. A version no release lists is refused (verify would reject it)."""
    path = Path(releases_file or releases.default_path())
    known = releases.load_releases(path)
    version = report["suite"].get("version")
    release = known.get(version) if isinstance(version, str) else None
    if release is None:
        listed = ", ".join(list(known)[-3:]) or "none"
        raise UserError(f"sign: refused: report.json suite.version {terminal(repr(version), limit=80)} is not a "
                        f"release listed in {path} (latest: {listed}); verify would reject it")
    return release


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
                raise UserError(f"sign: {t} already exists; refusing to overwrite (pass --force to re-sign)")
    release = report_release(report, releases_file)
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
