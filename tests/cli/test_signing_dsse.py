"""Canonical JSON, DSSE PAE/envelopes, interop with securesystemslib, and exhaustive tamper checks."""
from __future__ import annotations

import base64
import copy
import json
from pathlib import Path

import pytest

from conformance.errors import UserError
from conformance.signing import dsse, keys
from conformance.signing.canonical import canonical_json, loads_strict
from conformance.signing.keyring import trusted_key

BODY = canonical_json({"_type": "https://in-toto.io/Statement/v1", "subject": [
    {"name": "report.json", "digest": {"sha256": "0" * 64}}], "predicate": {"result": "PASSED", "n": 3}})


@pytest.fixture(params=keys.ALGORITHMS)
def private_key(request):
    return keys.generate_private_key(request.param)


def test_pae_matches_the_dsse_spec_vector() -> None:
    assert dsse.pae("http://example.com/HelloWorld", b"hello world") == \
        b"DSSEv1 29 http://example.com/HelloWorld 11 hello world"
    # lengths are byte lengths, not character counts
    assert dsse.pae("t\u00e9", b"\xc3\xa9") == b"DSSEv1 3 t\xc3\xa9 2 \xc3\xa9"


def test_canonical_json_is_sorted_compact_utf8() -> None:
    assert canonical_json({"b": 1, "a": [True, None, "\u00e9"]}) == '{"a":[true,null,"\u00e9"],"b":1}'.encode()
    with pytest.raises(ValueError, match="floats are not allowed"):
        canonical_json({"x": [1.5]})


def test_strict_loader_refuses_duplicate_keys() -> None:
    with pytest.raises(ValueError, match="duplicate key 'tier'"):
        loads_strict('{"tier": "beta", "tier": "stable"}')


def test_envelope_shape_and_roundtrip(private_key) -> None:
    env = dsse.make_envelope(BODY, private_key)
    assert env["payloadType"] == "application/vnd.in-toto+json"
    assert base64.b64decode(env["payload"], validate=True) == BODY  # standard, padded base64
    assert env["signatures"][0]["keyid"] == keys.keyid(private_key.public_key())
    signer = dsse.verify_envelope(dsse.parse_envelope(env, "e"), [trusted_key(private_key.public_key(), "k")])
    assert signer is not None and signer.name == "k"


def test_url_safe_base64_is_accepted(private_key) -> None:
    env = dsse.make_envelope(BODY + b"??>>", private_key)
    env["payload"] = base64.urlsafe_b64encode(BODY + b"??>>").decode().rstrip("=")
    parsed = dsse.parse_envelope(env, "e")
    assert parsed.body == BODY + b"??>>"
    assert dsse.verify_envelope(parsed, [trusted_key(private_key.public_key(), "k")])


def test_keyid_is_only_a_hint(private_key) -> None:
    trusted = [trusted_key(keys.generate_private_key().public_key(), "other"),
               trusted_key(private_key.public_key(), "right")]
    env = dsse.make_envelope(BODY, private_key)
    env["signatures"][0]["keyid"] = "SHA256:wrong"
    assert dsse.verify_envelope(dsse.parse_envelope(env, "e"), trusted).name == "right"
    # a keyid naming a trusted key does not make a signature by another key valid
    forged = dsse.make_envelope(BODY, keys.generate_private_key())
    forged["signatures"][0]["keyid"] = keys.keyid(private_key.public_key())
    assert dsse.verify_envelope(dsse.parse_envelope(forged, "e"), trusted) is None


def test_wrong_key_is_rejected(private_key) -> None:
    env = dsse.parse_envelope(dsse.make_envelope(BODY, private_key), "e")
    for algorithm in keys.ALGORITHMS:
        other = trusted_key(keys.generate_private_key(algorithm).public_key(), "other")
        assert dsse.verify_envelope(env, [other]) is None


def test_every_single_byte_change_in_payload_or_signature_is_rejected(private_key) -> None:
    """Exhaustive: each byte of the payload and of the signature, flipped, fails verification."""
    env = dsse.parse_envelope(dsse.make_envelope(BODY, private_key), "e")
    trusted = [trusted_key(private_key.public_key(), "k")]
    assert dsse.verify_envelope(env, trusted)
    sig = env.signatures[0].sig
    assert sig is not None
    for i in range(len(env.body)):
        for flip in (0x01, 0x80):
            body = bytearray(env.body)
            body[i] ^= flip
            bad = dsse.Envelope(env.payload_type, bytes(body), env.signatures)
            assert dsse.verify_envelope(bad, trusted) is None, f"payload byte {i} ^ {flip:#x} accepted"
    for i in range(len(sig)):
        for flip in (0x01, 0x80):
            s = bytearray(sig)
            s[i] ^= flip
            bad = dsse.Envelope(env.payload_type, env.body, (dsse.Signature(env.signatures[0].keyid, bytes(s)),))
            assert dsse.verify_envelope(bad, trusted) is None, f"signature byte {i} ^ {flip:#x} accepted"
    # the payload type is bound by the PAE too
    bad = dsse.Envelope("application/json", env.body, env.signatures)
    assert dsse.verify_envelope(bad, trusted) is None


@pytest.mark.parametrize("doc, message", [
    ([], "expected a JSON object"),
    ({"payload": "e30=", "signatures": []}, "payloadType missing"),
    ({"payloadType": dsse.PAYLOAD_TYPE, "payload": "@@@", "signatures": [{"sig": "AA=="}]}, "not valid base64"),
    ({"payloadType": dsse.PAYLOAD_TYPE, "payload": "e30=", "signatures": []}, "no signatures"),
    ({"payloadType": dsse.PAYLOAD_TYPE, "payload": "e30=", "signatures": ["x"]}, r"signatures\[0\]"),
])
def test_malformed_envelopes_are_user_errors(doc, message) -> None:
    with pytest.raises(UserError, match=message) as exc:
        dsse.parse_envelope(doc, "env.json")
    assert "\n" not in str(exc.value)


def test_bundle_wraps_the_same_envelope(private_key) -> None:
    env = dsse.make_envelope(BODY, private_key)
    bundle = dsse.make_bundle(env)
    assert bundle["mediaType"] == "application/vnd.dev.sigstore.bundle.v0.3+json"
    assert bundle["verificationMaterial"]["publicKey"]["hint"] == env["signatures"][0]["keyid"]
    assert bundle["verificationMaterial"]["tlogEntries"] == []
    assert dsse.parse_envelope(bundle, "b") == dsse.parse_envelope(env, "e")


def test_envelope_verifies_with_securesystemslib(private_key) -> None:
    """Interop: securesystemslib's independent DSSE implementation accepts our envelope."""
    from securesystemslib.dsse import Envelope
    from securesystemslib.signer import CryptoSigner, SSlibKey

    env = dsse.make_envelope(BODY, private_key)
    theirs = Envelope.from_dict(copy.deepcopy(env))
    assert theirs.pae() == dsse.pae(env["payloadType"], BODY)
    ssl_key = SSlibKey.from_crypto(private_key.public_key(), keyid=keys.keyid(private_key.public_key()))
    verified = theirs.verify([ssl_key], 1)
    assert list(verified) == [keys.keyid(private_key.public_key())]
    # and a tampered payload is rejected by them as well
    tampered = copy.deepcopy(env)
    tampered["payload"] = base64.b64encode(BODY.replace(b"PASSED", b"FAILED")).decode()
    with pytest.raises(Exception):  # noqa: B017 - securesystemslib raises its own types; any refusal will do
        Envelope.from_dict(tampered).verify([ssl_key], 1)
    # reverse direction: their signature (their own keyid convention) verifies with ours
    mine = Envelope(BODY, dsse.PAYLOAD_TYPE, {})
    mine.sign(CryptoSigner(private_key))
    parsed = dsse.parse_envelope(json.loads(json.dumps(mine.to_dict())), "theirs")
    assert dsse.verify_envelope(parsed, [trusted_key(private_key.public_key(), "k")])


def test_openssl_cli_verifies_the_signature(private_key, tmp_path: Path) -> None:
    """Interop without Python crypto: OpenSSL checks the signature over our PAE bytes."""
    import shutil
    import subprocess

    if not shutil.which("openssl"):
        pytest.skip("openssl not installed")
    env = dsse.parse_envelope(dsse.make_envelope(BODY, private_key), "e")
    (tmp_path / "pub.pem").write_bytes(keys.public_pem(private_key.public_key()))
    (tmp_path / "pae.bin").write_bytes(dsse.pae(env.payload_type, env.body))
    (tmp_path / "sig.bin").write_bytes(env.signatures[0].sig or b"")
    if keys.algorithm_of(private_key) == "ed25519":
        cmd = ["openssl", "pkeyutl", "-verify", "-pubin", "-inkey", "pub.pem", "-rawin",
               "-in", "pae.bin", "-sigfile", "sig.bin"]
    else:
        cmd = ["openssl", "dgst", "-sha256", "-verify", "pub.pem", "-signature", "sig.bin", "pae.bin"]
    ok = subprocess.run(cmd, cwd=tmp_path, capture_output=True, text=True, timeout=30)
    assert ok.returncode == 0, ok.stdout + ok.stderr
    (tmp_path / "pae.bin").write_bytes(dsse.pae(env.payload_type, env.body + b" "))
    assert subprocess.run(cmd, cwd=tmp_path, capture_output=True, timeout=30).returncode != 0
