"""The SIG's decision as a signed artifact: a SLSA Verification Summary Attestation (VSA).

Why: `verify` and `review` tell a reviewer, on the reviewer's machine, whether a submission
holds. A user who reads "Acme X1 is stable" needs a statement of the SIG's own to check, offline,
with the SIG's public key alone, without the vendor's report or the suite's data files. That is
what a VSA is for (https://slsa.dev/verification_summary/v1): the verifier signs what it
verified, against which policy, with which result and level, and downstream trusts that one
signature instead of re-running the verifier.

The decision is a DSSE envelope (signing/dsse.py, the one signer) over an in-toto Statement v1:

  subject            report.json by sha256 (the artifact decided on)
  predicateType      https://slsa.dev/verification_summary/v1
  predicate          verifier.id          the SIG key's id (urn:...:sig-key:SHA256:...)
                     verifier.version     this suite's version
                     timeVerified         when the SIG decided
                     resourceUri          urn:...:report:sha256:<report.json digest>
                     policy               the suite release (uri) and the sha256 of its data digests
                     inputAttestations    the vendor's signed Statement (report.intoto.json) by the
                                          sha256 of its payload
                     verificationResult   PASSED or FAILED
                     verifiedLevels       RAYCONF_TIER_<TIER> and RAYCONF_CAPABILITY_<NAME>
                                          (VSA allows levels of one's own; none start with SLSA_)
                     rayAcceleratorConformance   what VSA has no field for (an in-toto extension):
                                          tier, capabilities, vendor, product, Ray version, suite
                                          release and its data digests (the policy, spelt out),
                                          report and statement digests, the checks that failed,
                                          the validity (validFrom, validUntil, validityRule)

`check` reads one back: signed by the SIG's key, the statement ours and self-consistent (the
levels, the policy digest and the resource are what the extension's fields give), not revoked,
not expired. Every refusal is one line.
"""
from __future__ import annotations

import json
from dataclasses import dataclass, field
from datetime import date, datetime
from pathlib import Path
from typing import Any, Mapping, Sequence

from conformance import __version__
from conformance.catalog import capabilities as caps
from conformance.catalog import datafiles, releases
from conformance.catalog.strict_input import as_list, as_map
from conformance.errors import UserError
from conformance.sanitize import terminal
from conformance.signing import attestation as att
from conformance.signing import dsse, keys, validity
from conformance.signing.canonical import canonical_json, loads_strict
from conformance.signing.keyring import TrustedKey
from conformance.signing.report_revocation import RevocationList, refusal

PREDICATE_TYPE = "https://slsa.dev/verification_summary/v1"
DECISION_NAME = "decision.intoto.json"
VERIFIER_PREFIX = "urn:ray-accelerator-conformance:sig-key:"
RESOURCE_PREFIX = "urn:ray-accelerator-conformance:report:sha256:"
TIER_LEVEL = "RAYCONF_TIER_"
CAPABILITY_LEVEL = "RAYCONF_CAPABILITY_"
EXTENSION_SCHEMA_VERSION = 1
_EXTENSION_FIELDS = ("schemaVersion", "tier", "capabilities", "vendor", "product", "rayVersion", "suiteVersion",
                     "releaseData", "reportSha256", "statementSha256", "failed", "validFrom", "validUntil",
                     "validityRule")


def levels(tier: str | None, capabilities: Sequence[str]) -> list[str]:
    """VSA verifiedLevels for a tier and capability profiles."""
    out = [f"{TIER_LEVEL}{tier.upper()}"] if tier else []
    return out + [f"{CAPABILITY_LEVEL}{c.upper()}" for c in capabilities]


def policy_digest(release_data: Mapping[str, str]) -> str:
    """sha256 of the release's data digests, canonical JSON: the VSA policy's digest."""
    return datafiles.sha256_bytes(canonical_json(dict(release_data)))


def build(*, report: Mapping[str, Any], report_sha256: str, statement_sha256: str, release: releases.Release,
          tier: str | None, capabilities: Sequence[str], failed: Sequence[str], valid: validity.Validity,
          signer_keyid: str, time_verified: datetime) -> dict[str, Any]:
    """The decision Statement (pure): PASSED when nothing failed and a tier was reached. `report`
    is the JSON verify read, schema-valid or not (decide), narrowed where it is read."""
    manifest, environment = as_map(report.get("manifest")), as_map(report.get("environment"))
    release_data = release.descriptors()
    result = "PASSED" if not failed and tier else "FAILED"
    decided_tier = tier if result == "PASSED" else None
    decided_capabilities = sorted(capabilities) if result == "PASSED" else []
    ext: dict[str, Any] = {
           "schemaVersion": EXTENSION_SCHEMA_VERSION, "tier": decided_tier, "capabilities": decided_capabilities,
           "vendor": manifest.get("vendor"), "product": manifest.get("product"), "rayVersion": environment.get("ray"),
           "suiteVersion": release.version, "releaseData": release_data, "reportSha256": report_sha256,
           "statementSha256": statement_sha256, "failed": sorted(failed),
           "validFrom": valid.valid_from.isoformat(), "validUntil": valid.valid_until.isoformat(),
           "validityRule": valid.rule}
    return {"_type": att.STATEMENT_TYPE,
            "subject": [{"name": att.REPORT_JSON, "digest": {"sha256": report_sha256}}],
            "predicateType": PREDICATE_TYPE,
            "predicate": {
                "verifier": {"id": VERIFIER_PREFIX + signer_keyid, "version": {"ray-accelerator-conformance": __version__}},
                "timeVerified": time_verified.replace(microsecond=0).isoformat().replace("+00:00", "Z"),
                "resourceUri": RESOURCE_PREFIX + report_sha256,
                "policy": {"uri": att.suite_uri(release.version), "digest": {"sha256": policy_digest(release_data)}},
                "inputAttestations": [{"uri": att.ENVELOPE_NAME, "digest": {"sha256": statement_sha256}}],
                "verificationResult": result,
                "verifiedLevels": levels(decided_tier, decided_capabilities),
                att.EXTENSION: ext}}


def write(path: Path, statement: Mapping[str, Any], key_path: Path, passphrase: bytes | None = None) -> Path:
    """Sign `statement` with the SIG's private key into `path` (never overwriting a file)."""
    private_key = keys.load_private_key(Path(key_path), passphrase)
    envelope = dsse.make_envelope(canonical_json(dict(statement)), private_key)
    path = Path(path)
    try:
        att.write_new(path, (json.dumps(envelope, indent=2, sort_keys=True) + "\n").encode(), overwrite=False)
    except FileExistsError:
        raise UserError(f"decision: {path} already exists; refusing to overwrite it", field="--decision-out") from None
    return path


def sig_keyid(key_path: Path, passphrase: bytes | None = None) -> str:
    return keys.keyid(keys.load_private_key(Path(key_path), passphrase).public_key())


def decide(folder: Path, envelope: Path, report: Mapping[str, Any], *, ok: bool, failed: Sequence[str],
           recomputed_tier: str | None, releases_file: Path, key_path: Path, passphrase: bytes | None,
           now: datetime) -> dict[str, Any]:
    """The decision on the report in `folder` as verify judged it (`ok`, `failed`, the tier it
    recomputed). A verified report's capabilities are its claimed ones: verify recomputed and
    matched them. The validity comes from the releases file's policy (signing/validity.py).
    `report` is the JSON verify read: a FAILED decision may be of a report that failed its schema,
    so it is read narrowed, never through the typed view."""
    from conformance.signing.submission import read_folder
    from conformance.signing.verify import read_envelope

    read = read_folder(folder)
    env = read_envelope(envelope)
    version = as_map(report.get("suite")).get("version")
    known = releases.load_releases(releases_file)
    release = known.get(version) if isinstance(version, str) else None
    if release is None:
        raise UserError(f"decision: the report names release {terminal(repr(version), limit=60)}, which "
                        f"{releases_file} does not list; no decision can name its policy")
    policy = validity.load_policy(releases_file)
    valid = validity.certificate_validity(report, release, policy)
    if valid is None:
        raise UserError(f"decision: {releases_file} sets no certificate validity (certificates:) or the report's "
                        "finished_at is not a date; a decision must say how long it holds")
    certified = caps.certified_names(c for c in as_list(report.get("capabilities")) if isinstance(c, dict))
    return build(report=report, report_sha256=read.digests()[att.REPORT_JSON],
                 statement_sha256=datafiles.sha256_bytes(env.body), release=release,
                 tier=recomputed_tier if ok else None, capabilities=certified if ok else [],
                 failed=[] if ok else (list(failed) or ["verify"]), valid=valid,
                 signer_keyid=sig_keyid(key_path, passphrase), time_verified=now)


# ----------------------------------------------------------------------------- reading one back

@dataclass
class Checked:
    """A decision read back: `ok` only when accepted; `refusal` is its one line otherwise."""

    path: Path
    ok: bool = False
    refusal: str = ""
    fields: dict[str, Any] = field(default_factory=dict)
    result: str = ""
    state: str = ""

    def summary(self) -> str:
        f = self.fields
        capabilities = ", ".join(f.get("capabilities") or []) or "none"
        return (f"{terminal(f.get('vendor'), limit=80)} {terminal(f.get('product'), limit=80)}: tier "
                f"{f.get('tier') or 'none'}; capabilities {terminal(capabilities, limit=300)}; "
                f"{self.state} {f.get('validFrom')} .. {f.get('validUntil')} ({terminal(f.get('validityRule'), limit=120)}); "
                f"release {terminal(f.get('suiteVersion'), limit=60)}; report.json sha256 "
                f"{str(f.get('reportSha256'))[:16]}…")


def read(path: Path) -> dsse.Envelope:
    raw = att.read_file(Path(path), "verify-decision", max_bytes=att.MAX_ENVELOPE_BYTES)
    try:
        doc = loads_strict(raw.decode("utf-8"))
    except (UnicodeDecodeError, ValueError):
        raise UserError(f"verify-decision: {path} is not a JSON DSSE envelope") from None
    return dsse.parse_envelope(doc, str(path))


def is_decision(path: Path) -> bool:
    """True when `path` is a file holding a DSSE envelope over a VSA (verify routes it here)."""
    try:
        env = read(path)
        st = loads_strict(env.body.decode("utf-8"))
    except (UserError, UnicodeDecodeError, ValueError):
        return False
    return isinstance(st, dict) and st.get("predicateType") == PREDICATE_TYPE


def _problem(st: object, signer: TrustedKey) -> str | None:
    """Why the signed statement is not a decision this suite writes, or None."""
    if not isinstance(st, dict) or st.get("_type") != att.STATEMENT_TYPE or st.get("predicateType") != PREDICATE_TYPE:
        return f"not an in-toto Statement with predicateType {PREDICATE_TYPE}"
    pred = as_map(st.get("predicate"))
    ext = as_map(pred.get(att.EXTENSION))
    missing = [k for k in _EXTENSION_FIELDS if k not in ext]
    if missing or ext.get("schemaVersion") != EXTENSION_SCHEMA_VERSION:
        return f"predicate.{att.EXTENSION} lacks {', '.join(missing) or 'schemaVersion 1'}"
    sha = ext.get("reportSha256")
    if st.get("subject") != [{"name": att.REPORT_JSON, "digest": {"sha256": sha}}] or \
            pred.get("resourceUri") != f"{RESOURCE_PREFIX}{sha}":
        return "the subject and resourceUri are not the decided report's digest"
    if as_map(pred.get("verifier")).get("id") != VERIFIER_PREFIX + signer.keyid:
        return f"verifier.id is not the signing SIG key ({signer.keyid})"
    release_data = ext.get("releaseData")
    policy = as_map(pred.get("policy"))
    if not isinstance(release_data, dict) or not all(isinstance(v, str) for v in release_data.values()) or \
            policy.get("uri") != att.suite_uri(str(ext.get("suiteVersion"))) or \
            policy.get("digest") != {"sha256": policy_digest(release_data)}:
        return "the policy is not the release and data digests the decision names"
    if pred.get("inputAttestations") != [{"uri": att.ENVELOPE_NAME, "digest": {"sha256": ext.get("statementSha256")}}]:
        return "inputAttestations is not the report's signed statement"
    capabilities, tier = ext.get("capabilities"), ext.get("tier")
    if not isinstance(capabilities, list) or not all(isinstance(c, str) for c in capabilities) or \
            not isinstance(tier, (str, type(None))) or pred.get("verifiedLevels") != levels(tier, capabilities):
        return "verifiedLevels are not the decision's tier and capabilities"
    if pred.get("verificationResult") not in ("PASSED", "FAILED"):
        return "verificationResult is neither PASSED nor FAILED"
    try:
        start, until = date.fromisoformat(str(ext["validFrom"])), date.fromisoformat(str(ext["validUntil"]))
    except ValueError:
        return "validFrom/validUntil are not dates"
    if until < start:
        return "validUntil is before validFrom"
    return None


def check(path: Path, sig_keys: Sequence[TrustedKey], *, today: date, expiring_within_days: int,
          revocations: RevocationList | None = None) -> Checked:
    """Read the decision at `path` with the SIG's public key(s) alone, as of `today`."""
    out = Checked(Path(path))
    env = read(path)
    if env.payload_type != dsse.PAYLOAD_TYPE:
        out.refusal = f"payloadType {terminal(env.payload_type, limit=80)!r} is not {dsse.PAYLOAD_TYPE}"
        return out
    signer = dsse.verify_envelope(env, sig_keys)
    if signer is None:
        hints = ", ".join(sorted({s.keyid for s in env.signatures if s.keyid})[:3]) or "none"
        out.refusal = (f"not signed by the SIG's key ({', '.join(k.keyid for k in sig_keys)}): the signature does not "
                       f"verify (edited after signing, or signed by another key; envelope keyids: {terminal(hints)})")
        return out
    try:
        st = loads_strict(env.body.decode("utf-8"))
    except (UnicodeDecodeError, ValueError):
        st = None
    problem = _problem(st, signer)
    if problem:
        out.refusal = f"signed by the SIG's key but not a decision this suite writes: {problem}"
        return out
    assert isinstance(st, dict)
    out.fields = dict(st["predicate"][att.EXTENSION])
    out.result = st["predicate"]["verificationResult"]
    until = date.fromisoformat(out.fields["validUntil"])
    out.state = validity.state(until, today, expiring_within_days)
    listed = revocations.find(str(out.fields["reportSha256"])) if revocations else None
    if listed is not None:
        out.refusal = refusal(listed, "the decided report.json")
    elif out.state == "expired":
        out.refusal = f"expired: the decision held until {until} ({terminal(out.fields['validityRule'], limit=120)}); as of {today} recertification is required"
    elif out.result != "PASSED":
        out.refusal = (f"the SIG's decision is FAILED (checks that failed: "
                       f"{terminal(', '.join(out.fields.get('failed') or []), limit=300) or '?'})")
    else:
        out.ok = True
    return out
