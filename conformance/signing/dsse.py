"""DSSE (Dead Simple Signing Envelope) v1: PAE, envelope construction, parsing and verification.

The signature covers PAE(payloadType, body), so neither the type nor the body can change
without breaking it. Envelopes are written with standard, padded base64 (cosign decodes with
StdEncoding only); on reading, URL-safe base64 is accepted too, as the DSSE spec requires.
The keyid is an unauthenticated hint: it only decides which trusted key is tried first.
"""
from __future__ import annotations

import base64
import binascii
import re
from dataclasses import dataclass
from typing import Any, Sequence

from conformance.errors import UserError
from conformance.signing import keys
from conformance.signing.keyring import TrustedKey

PAYLOAD_TYPE = "application/vnd.in-toto+json"  # cosign's legacy path rejects any other value
BUNDLE_MEDIA_TYPE = "application/vnd.dev.sigstore.bundle.v0.3+json"

# A real envelope has one signature (a Sigstore bundle allows exactly one); a few co-signers at
# most. More is an attack on the verifier's time (600k signatures took 43 s before this cap).
MAX_SIGNATURES = 16

_B64 = re.compile(r"^[A-Za-z0-9+/\-_]*={0,2}$")


def pae(payload_type: str, body: bytes) -> bytes:
    """DSSEv1 Pre-Authentication Encoding; lengths are byte lengths in ASCII decimal."""
    t = payload_type.encode("utf-8")
    return b"DSSEv1 %d %b %d %b" % (len(t), t, len(body), body)


def b64encode(data: bytes) -> str:
    return base64.b64encode(data).decode("ascii")


def b64decode(text: str) -> bytes:
    """Decode standard or URL-safe base64, padded or not; raise ValueError on anything else."""
    if not isinstance(text, str) or not _B64.match(text):
        raise ValueError("not base64")
    url_safe = "-" in text or "_" in text
    if url_safe and ("+" in text or "/" in text):
        raise ValueError("not base64 (mixes standard and URL-safe alphabets)")
    unpadded = text.rstrip("=")
    altchars = b"-_" if url_safe else None
    try:
        raw = base64.b64decode(unpadded + "=" * (-len(unpadded) % 4), altchars=altchars, validate=True)
    except (binascii.Error, ValueError):
        raise ValueError("not base64") from None
    # Only the one canonical spelling of these bytes (unused low bits zero, padding all or
    # nothing): otherwise one envelope could be re-spelled without touching the signature.
    again = base64.b64encode(raw, altchars=altchars).decode("ascii")
    if text != again and text != again.rstrip("="):
        raise ValueError("not canonical base64 (non-zero unused bits or partial padding)")
    return raw


@dataclass(frozen=True)
class Signature:
    keyid: str
    sig: bytes | None  # None: the sig field was not valid base64 (cannot verify)


@dataclass(frozen=True)
class Envelope:
    payload_type: str
    body: bytes
    signatures: tuple[Signature, ...]


def make_envelope(body: bytes, private_key: keys.PrivateKey, payload_type: str = PAYLOAD_TYPE) -> dict[str, Any]:
    """Sign `body` and return the envelope as a JSON-ready dict."""
    signature = keys.sign(private_key, pae(payload_type, body))
    return {"payloadType": payload_type, "payload": b64encode(body),
            "signatures": [{"keyid": keys.keyid(private_key.public_key()), "sig": b64encode(signature)}]}


def make_bundle(envelope: dict[str, Any]) -> dict[str, Any]:
    """The same envelope as a key-based Sigstore bundle v0.3 (no tlog), the form cosign v3 prefers."""
    hint = envelope["signatures"][0].get("keyid", "")
    return {"mediaType": BUNDLE_MEDIA_TYPE,
            "verificationMaterial": {"publicKey": {"hint": hint}, "tlogEntries": [],
                                     "timestampVerificationData": {"rfc3161Timestamps": []}},
            "dsseEnvelope": envelope}


def parse_envelope(doc: object, source: str) -> Envelope:
    """Check the envelope's structure (a bare DSSE envelope or a Sigstore bundle holding one).

    Structural problems mean unreadable input: a one-line UserError (exit 2). A signature whose
    base64 is damaged is kept as unverifiable rather than refused, so the other checks still run.
    """
    if isinstance(doc, dict) and "dsseEnvelope" in doc:
        doc = doc["dsseEnvelope"]
    if not isinstance(doc, dict):
        raise UserError(f"{source}: not a DSSE envelope (expected a JSON object)")
    unknown = sorted(set(doc) - {"payloadType", "payload", "signatures"})
    if unknown:  # every byte of the envelope means something; no field rides along unchecked
        raise UserError(f"{source}: not a DSSE envelope: unknown field {unknown[0][:40]!r}")
    for name, kind in (("payloadType", str), ("payload", str), ("signatures", list)):
        if not isinstance(doc.get(name), kind):
            raise UserError(f"{source}: not a DSSE envelope: {name} missing or not a {kind.__name__}")
    try:
        body = b64decode(doc["payload"])
    except ValueError:
        raise UserError(f"{source}: payload is not valid base64") from None
    if not doc["signatures"]:
        raise UserError(f"{source}: the envelope has no signatures")
    if len(doc["signatures"]) > MAX_SIGNATURES:
        raise UserError(f"{source}: {len(doc['signatures'])} signatures, over the limit of {MAX_SIGNATURES}")
    sigs = []
    for i, s in enumerate(doc["signatures"]):
        if not isinstance(s, dict) or not isinstance(s.get("sig"), str):
            raise UserError(f"{source}: signatures[{i}]: expected an object with a 'sig' string")
        if set(s) - {"keyid", "sig"}:
            raise UserError(f"{source}: signatures[{i}]: unknown field {sorted(set(s) - {'keyid', 'sig'})[0][:40]!r}")
        kid = s.get("keyid", "")
        try:
            raw: bytes | None = b64decode(s["sig"])
        except ValueError:
            raw = None
        sigs.append(Signature(kid if isinstance(kid, str) else "", raw))
    return Envelope(doc["payloadType"], body, tuple(sigs))


def valid_signers(env: Envelope, trusted: Sequence[TrustedKey]) -> list[TrustedKey]:
    """Every trusted key that made a valid signature over PAE(type, body), in signature order.

    The keyid only orders the attempt (hinted key first); a wrong or missing keyid never stops
    a trusted key from being tried, and a matching keyid never substitutes for the signature.
    (DSSE does not sign the keyid, and other tools use other keyid conventions.)
    """
    message = pae(env.payload_type, env.body)
    found: list[TrustedKey] = []
    for s in env.signatures:
        if s.sig is None:
            continue
        ordered = sorted(trusted, key=lambda k: k.keyid != s.keyid)
        for key in ordered:
            if keys.verify(key.public_key, s.sig, message):
                if key not in found:
                    found.append(key)
                break
    return found


def verify_envelope(env: Envelope, trusted: Sequence[TrustedKey]) -> TrustedKey | None:
    """The first trusted key that made a valid signature over PAE(type, body), or None."""
    signers = valid_signers(env, trusted)
    return signers[0] if signers else None
