"""Revoke a report, not only a key: the SIG's signed list of report.json digests it takes back.

Why: revoking a key (keyring `revoked`, signing/revocation.py) takes back every report that key
signed from a date on; a single report found wrong later (a waiver granted in error, a forged
figure found after the fact) needs its own word. Sigstore's advice is the same: "revoke
artifacts, not keys".

The SIG keeps the list as YAML in git (revocations.schema.json beside this module):

    revoked:
      - report_sha256: <sha256 of report.json>
        reason: CC-010's figures were measured on another machine
        date: 2026-12-01

and signs it with its key (`ray-conformance revoke-reports LIST --key SIG_KEY --out FILE`) into a
DSSE envelope over an in-toto Statement whose subjects are the revoked report.json digests and
whose predicate is the list itself. `verify`, `verify-decision`, `review` and `diff` read the
signed file (`--revocations FILE`) and refuse a report on it in one line naming the reason; a
list not signed by the SIG's key is refused as a whole (nothing else may take a report back).
"""
from __future__ import annotations

import json
from dataclasses import dataclass
from datetime import date, datetime, timezone
from importlib import resources
from pathlib import Path
from typing import Any, Sequence

from conformance.catalog.datafiles import CompiledSchema, compiled_schema_bytes, read_yaml_or_json
from conformance.catalog.strict_input import as_map
from conformance.errors import UserError
from conformance.sanitize import terminal
from conformance.signing import attestation as att
from conformance.signing import dsse, keys
from conformance.signing.canonical import canonical_json, loads_strict
from conformance.signing.keyring import TrustedKey, _dates_as_text

PREDICATE_TYPE = "https://github.com/ray-project/ray-accelerator-conformance/revoked-reports/v1"
SCHEMA_NAME = "revocations.schema.json"


@dataclass(frozen=True)
class Revoked:
    report_sha256: str
    reason: str
    day: date

    def line(self) -> str:
        return f"revoked by the SIG on {self.day}: {terminal(self.reason, limit=300)}"


@dataclass(frozen=True)
class RevocationList:
    """The signed list as read: who signed it, when, and what it takes back."""

    path: Path
    signer: str
    issued: str
    entries: tuple[Revoked, ...]

    def find(self, report_sha256: str) -> Revoked | None:
        return next((e for e in self.entries if e.report_sha256 == report_sha256), None)


def schema() -> CompiledSchema:
    return compiled_schema_bytes(resources.files("conformance.signing").joinpath(SCHEMA_NAME).read_bytes(), SCHEMA_NAME)


def _validated(raw: object, where: str) -> list[Revoked]:
    doc = _dates_as_text(raw)
    problem = schema().first_error(doc)
    if problem:
        raise UserError(f"{where}: {terminal(problem, limit=400)}")
    entries = [Revoked(e["report_sha256"], e["reason"], date.fromisoformat(e["date"])) for e in doc["revoked"]]
    seen: set[str] = set()
    for i, e in enumerate(entries):
        if e.report_sha256 in seen:
            raise UserError(f"{where}: revoked[{i}].report_sha256: {e.report_sha256[:16]}… is listed twice")
        seen.add(e.report_sha256)
    return entries


def build_statement(entries: Sequence[Revoked], issued: str) -> dict[str, Any]:
    """The in-toto Statement the SIG signs: subjects are the revoked report.json digests."""
    listed = [{"report_sha256": e.report_sha256, "reason": e.reason, "date": e.day.isoformat()} for e in entries]
    return {"_type": att.STATEMENT_TYPE,
            "subject": [{"name": att.REPORT_JSON, "digest": {"sha256": e.report_sha256}} for e in entries],
            "predicateType": PREDICATE_TYPE,
            "predicate": {"issued": issued, "revoked": listed}}


def sign_list(source: Path, key_path: Path, out: Path, passphrase: bytes | None = None, *,
              now: datetime | None = None, overwrite: bool = False) -> tuple[Path, int]:
    """Sign the SIG's YAML list `source` into `out` (a DSSE envelope); returns (out, entries)."""
    entries = _validated(read_yaml_or_json(Path(source), what="revocation list"), f"revocation list {source}")
    private_key = keys.load_private_key(Path(key_path), passphrase)
    issued = (now or datetime.now(timezone.utc)).replace(microsecond=0).isoformat().replace("+00:00", "Z")
    envelope = dsse.make_envelope(canonical_json(build_statement(entries, issued)), private_key)
    out = Path(out)
    try:
        att.write_new(out, (json.dumps(envelope, indent=2, sort_keys=True) + "\n").encode(), overwrite)
    except FileExistsError:
        raise UserError(f"revoke-reports: {out} already exists; refusing to overwrite (pass --force)",
                        field="--out") from None
    return out, len(entries)


def load_list(path: Path, sig_keys: Sequence[TrustedKey]) -> RevocationList:
    """The signed list at `path`, checked: signed by one of `sig_keys` (the SIG's), the statement
    ours, every entry valid, the subjects exactly the listed digests. One-line UserError otherwise."""
    path = Path(path)
    where = f"--revocations {path}"
    if not sig_keys:
        raise UserError(f"{where}: the SIG's public key is needed to check the list (--sig-key PUB)")
    raw = att.read_file(path, "--revocations", max_bytes=att.MAX_ENVELOPE_BYTES)
    try:
        doc = loads_strict(raw.decode("utf-8"))
    except (UnicodeDecodeError, ValueError):
        raise UserError(f"{where}: not a JSON DSSE envelope") from None
    env = dsse.parse_envelope(doc, where)
    signer = dsse.verify_envelope(env, sig_keys)
    if signer is None:
        raise UserError(f"{where}: not signed by the SIG's key ({', '.join(k.keyid for k in sig_keys)}); "
                        "only the SIG may take a report back")
    try:
        st = loads_strict(env.body.decode("utf-8"))
    except (UnicodeDecodeError, ValueError):
        raise UserError(f"{where}: the signed payload is not JSON") from None
    if not isinstance(st, dict) or st.get("_type") != att.STATEMENT_TYPE or st.get("predicateType") != PREDICATE_TYPE:
        raise UserError(f"{where}: not a revocation list (predicateType {PREDICATE_TYPE} expected)")
    pred = as_map(st.get("predicate"))
    entries = _validated({"revoked": pred.get("revoked")}, where)
    subjects = sorted(s.get("digest", {}).get("sha256", "") for s in st.get("subject") or [] if isinstance(s, dict))
    if subjects != sorted(e.report_sha256 for e in entries):
        raise UserError(f"{where}: the statement's subjects are not the listed report digests")
    return RevocationList(path, signer.name, str(pred.get("issued")), tuple(entries))


def refusal(listed: Revoked, what: str = "report.json") -> str:
    """The one line a revoked report is refused with."""
    return f"{what} (sha256 {listed.report_sha256[:16]}…) is on the SIG's revocation list: {listed.line()}"
