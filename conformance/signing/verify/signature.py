"""Who signed what: the signature and its key's binding, the bundle, the Statement, each signed
file, the printed names, and a revoked key's date. All but the last judge the JSON as read,
before report.json is held to its schema."""
from __future__ import annotations

from conformance.catalog import strict_input
from conformance.catalog.strict_input import as_map
from conformance.errors import UserError
from conformance.signing import attestation as att
from conformance.signing import dsse, revocation, submission
from conformance.signing.verify.case import Judged, Sealed
from conformance.signing.verify.envelope import envelope_doc, read_envelope
from conformance.signing.verify.lines import Verification, short

MAX_ARTIFACT_BYTES = 8 * 1024 ** 3  # the plugin artifact beside the report is hashed in a stream


def signed_by_a_trusted_key_bound_to_the_vendor(v: Verification, case: Sealed) -> None:
    """`signature`: by a trusted key; `identity`: that key bound to the report's vendor (naming both if not).
    A sealed check: the vendor is read off the JSON as signed, whether or not the report schema holds."""
    env, trusted = case.envelope, case.trusted
    signers = dsse.valid_signers(env, trusted) if trusted else []
    vendor = as_map(case.document.get("manifest")).get("vendor")
    # a key revoked from a date is the last choice: a report signed by the old and the new key
    # of a rotation is judged by the new one
    bound = sorted((k for k in signers if k.may_sign_for(vendor)), key=lambda k: k.revoked is not None)
    signer = bound[0] if bound else (signers[0] if signers else None)
    v.signer = signer
    if signer is None:
        hints = ", ".join(sorted({s.keyid for s in env.signatures if s.keyid})[:5]) or "none"
        v.add("signature", False, f"no valid signature by any of {len(trusted)} trusted key(s) "
                                  f"(envelope keyids: {hints})")
        return
    v.add("signature", True, f"signed by {signer.name} ({signer.keyid}, {signer.algorithm})")
    if signer.vendors is None:
        v.add("identity", True, f"key {signer.name} was given with --key (not bound to vendors; "
                                f"a --keyring binds keys to vendors)")
    elif bound:
        v.add("identity", True, f"key {signer.name} is bound to vendor {vendor!r}")
    else:
        v.add("identity", False, f"report vendor {vendor!r} is not a vendor key {signer.name} may sign for "
                                 f"(bound to {', '.join(map(repr, signer.vendors))})")


def names_print_as_they_compare(v: Verification, case: Sealed) -> None:
    """`names`: the vendor and product print as they compare: nothing invisible, no word mixing scripts."""
    problem = submission.name_problem(case.document)
    v.add("names", problem is None, problem if problem else
          "manifest.vendor and manifest.product have no character that prints as nothing or as a plain space, "
          "and no word mixes scripts")


def bundle_carries_the_same_envelope(v: Verification, case: Sealed) -> None:
    """`bundle`: the other file of the pair (bundle beside envelope, or envelope beside bundle) must agree."""
    envelope_path, env = case.envelope_path, case.envelope
    names = (att.ENVELOPE_NAME, att.BUNDLE_NAME)
    if envelope_path.name not in names:
        return
    other = envelope_path.with_name(names[1 - names.index(envelope_path.name)])
    if not (other.exists() or other.is_symlink()):
        return
    bundle_path = other if other.name == att.BUNDLE_NAME else envelope_path
    try:
        bundle_doc = envelope_doc(bundle_path, within=envelope_path.parent)
        if not isinstance(bundle_doc, dict) or bundle_doc.get("mediaType") != dsse.BUNDLE_MEDIA_TYPE \
                or not isinstance(bundle_doc.get("dsseEnvelope"), dict):
            raise UserError(f"{bundle_path.name} is not a Sigstore bundle v0.3 with a dsseEnvelope")
        same = (read_envelope(other, within=envelope_path.parent) == env)
    except UserError as exc:
        v.add("bundle", False, str(exc))
        return
    v.add("bundle", same, f"{att.BUNDLE_NAME} carries the same envelope as {att.ENVELOPE_NAME}" if same else
          f"{att.BUNDLE_NAME} and {att.ENVELOPE_NAME} carry different envelopes")


def statement_is_ours(v: Verification, case: Sealed) -> None:
    """`statement`: payloadType, Statement type and predicate type are the ones we sign."""
    v.add("statement", case.statement is not None, case.statement_why)


def subjects_match_the_files(v: Verification, case: Sealed) -> None:
    """`subjects`, `subject NAME`: each signed file digest equals the file beside the envelope."""
    assert case.statement is not None  # the registry runs this only on our Statement
    signed: dict[str, object] = {}
    for s in case.statement["subject"]:
        if not isinstance(s, dict) or not isinstance(s.get("name"), str) or not isinstance(s.get("digest"), dict):
            v.add("subjects", False, "a subject is not {name, digest}")
            return
        if s["name"] in signed:
            v.add("subjects", False, f"subject {s['name']!r} listed twice")
            return
        signed[s["name"]] = s["digest"].get("sha256")
    try:
        expected = att.expected_subject_names(case.document)
        art = att.plugin_artifact(case.document)
    except UserError as exc:
        v.add("subjects", False, str(exc))
        return
    extra = sorted(set(signed) - set(expected))
    if extra:
        v.add("subjects", False, f"unexpected subject(s): {', '.join(extra)}")
    folder = case.folder
    for name in expected:
        claimed = signed.get(name)
        if claimed is None:
            v.add(f"subject {name}", False, "not among the signed subjects")
            continue
        if name in case.digests:
            actual: str | None
            actual, where = case.digests[name], "file"
        else:  # the plugin artifact: check the file when it sits beside the envelope
            beside = folder / name
            if "/" not in name and "\\" not in name and not name.startswith(".") and beside.is_file():
                try:
                    actual, where = strict_input.sha256_regular(beside, "verify", max_bytes=MAX_ARTIFACT_BYTES,
                                                                within=folder), "file"
                except UserError as exc:
                    v.add(f"subject {name}", False, str(exc))
                    continue
            else:
                actual, where = art["sha256"] if art else None, "report.json plugin_artifact (file not present)"
        if actual == claimed:
            v.add(f"subject {name}", True, f"sha256 {short(actual)} matches the {where}")
        else:
            v.add(f"subject {name}", False, f"{where} has sha256 {short(actual)}, signed {short(claimed)}")


def revoked_key_signed_before_its_revocation(v: Verification, case: Judged) -> None:
    """`revocation`: a revoked signing key counts only for reports signed before its revocation
    (signing/revocation.py); no line when the key is not revoked."""
    if v.signer is None or v.signer.revoked is None:
        return
    release = case.release
    ok, why = revocation.judge(v.signer, case.report.document, case.sealed.report_sha256,
                               release.version if release else None, release.published_date() if release else None)
    v.add("revocation", ok, why)
