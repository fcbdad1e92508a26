"""Key generation, loading, keyid and keyring behaviour."""
from __future__ import annotations

import base64
import hashlib
import os
import shutil
import stat
import subprocess
from pathlib import Path

import pytest
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import ec, rsa

from conformance.cli.signing import main
from conformance.errors import UserError
from conformance.signing import keyring, keys

PASS_VAR = "RAYCONF_TEST_PASSPHRASE"


@pytest.mark.parametrize("algorithm", keys.ALGORITHMS)
def test_keygen_writes_0600_private_and_public_pem(tmp_path: Path, algorithm: str, capsys) -> None:
    rc = main(["keygen", "--out", str(tmp_path / "k"), "--algorithm", algorithm])
    out = capsys.readouterr()
    priv, pub = tmp_path / "k" / keys.PRIVATE_KEY_NAME, tmp_path / "k" / keys.PUBLIC_KEY_NAME
    assert rc == 0
    assert stat.S_IMODE(priv.stat().st_mode) == 0o600
    public_key = keys.load_public_key(pub)
    assert keys.algorithm_of(public_key) == algorithm
    assert str(pub) in out.out and f"keyid: {keys.keyid(public_key)}" in out.out
    assert "PRIVATE KEY-----" not in out.out + out.err
    # the private key matches the public key
    private_key = keys.load_private_key(priv)
    assert keys.verify(public_key, keys.sign(private_key, b"msg"), b"msg")


def test_default_algorithm_is_ecdsa_p256(tmp_path: Path) -> None:
    pair = keys.write_keypair(tmp_path)
    key = keys.load_public_key(pair.public_path)
    assert isinstance(key, ec.EllipticCurvePublicKey) and key.curve.name == "secp256r1"


def test_keygen_refuses_to_overwrite_either_file(tmp_path: Path, capsys) -> None:
    assert main(["keygen", "--out", str(tmp_path)]) == 0
    before = (tmp_path / keys.PRIVATE_KEY_NAME).read_bytes()
    capsys.readouterr()
    assert main(["keygen", "--out", str(tmp_path)]) == 2
    err = capsys.readouterr().err
    assert "already exists" in err and err.count("\n") == 1
    assert (tmp_path / keys.PRIVATE_KEY_NAME).read_bytes() == before
    # only the public key present: still refused, and no private key is left behind
    other = tmp_path / "other"
    other.mkdir()
    (other / keys.PUBLIC_KEY_NAME).write_text("mine")
    with pytest.raises(UserError, match="already exists"):
        keys.write_keypair(other)
    assert not (other / keys.PRIVATE_KEY_NAME).exists()
    assert (other / keys.PUBLIC_KEY_NAME).read_text() == "mine"


def test_passphrase_comes_from_env_and_is_never_printed(tmp_path: Path, monkeypatch, capsys) -> None:
    secret = "correct horse battery staple"
    monkeypatch.setenv(PASS_VAR, secret)
    assert main(["keygen", "--out", str(tmp_path), "--passphrase-env", PASS_VAR]) == 0
    out = capsys.readouterr()
    assert secret not in out.out + out.err
    pem = (tmp_path / keys.PRIVATE_KEY_NAME).read_bytes()
    assert b"ENCRYPTED PRIVATE KEY" in pem
    with pytest.raises(UserError, match="is encrypted; name the variable"):
        keys.load_private_key(tmp_path / keys.PRIVATE_KEY_NAME)
    with pytest.raises(UserError, match="wrong passphrase") as exc:
        keys.load_private_key(tmp_path / keys.PRIVATE_KEY_NAME, b"nope")
    assert secret not in str(exc.value)
    assert keys.load_private_key(tmp_path / keys.PRIVATE_KEY_NAME, secret.encode())


def test_passphrase_env_unset_or_empty_is_a_user_error(monkeypatch) -> None:
    monkeypatch.delenv(PASS_VAR, raising=False)
    with pytest.raises(UserError, match=f"{PASS_VAR} is not set"):
        keys.passphrase_from_env(PASS_VAR)
    monkeypatch.setenv(PASS_VAR, "")
    with pytest.raises(UserError, match="is empty"):
        keys.passphrase_from_env(PASS_VAR)
    assert keys.passphrase_from_env(None) is None


def test_keyid_is_the_openssh_sha256_fingerprint(tmp_path: Path) -> None:
    for algorithm in keys.ALGORITHMS:
        key = keys.generate_private_key(algorithm).public_key()
        openssh = key.public_bytes(serialization.Encoding.OpenSSH, serialization.PublicFormat.OpenSSH)
        blob = base64.b64decode(openssh.split()[1])
        expected = "SHA256:" + base64.b64encode(hashlib.sha256(blob).digest()).decode().rstrip("=")
        assert keys.keyid(key) == expected and "=" not in expected
        if shutil.which("ssh-keygen"):
            f = tmp_path / f"{algorithm}.pub"
            f.write_bytes(openssh + b"\n")
            fp = subprocess.run(["ssh-keygen", "-l", "-E", "sha256", "-f", str(f)],
                                capture_output=True, text=True, check=True).stdout.split()[1]
            assert fp == keys.keyid(key)


def test_unsupported_key_types_are_refused(tmp_path: Path) -> None:
    for key in (ec.generate_private_key(ec.SECP384R1()), rsa.generate_private_key(65537, 2048)):
        p = tmp_path / "pub.pem"
        p.write_bytes(key.public_key().public_bytes(serialization.Encoding.PEM,
                                                    serialization.PublicFormat.SubjectPublicKeyInfo))
        with pytest.raises(UserError, match="unsupported key type"):
            keys.load_public_key(p)


def test_load_public_key_errors_are_one_line(tmp_path: Path) -> None:
    with pytest.raises(UserError, match="file not found"):
        keys.load_public_key(tmp_path / "missing.pub")
    (tmp_path / "junk.pub").write_text("hello")
    with pytest.raises(UserError, match="not a PEM public key"):
        keys.load_public_key(tmp_path / "junk.pub")
    pair = keys.write_keypair(tmp_path / "k")
    with pytest.raises(UserError, match="is a private key"):
        keys.load_public_key(pair.private_path)


def test_keyring_accepts_paths_and_inline_pem(tmp_path: Path) -> None:
    a = keys.write_keypair(tmp_path / "a")
    b = keys.write_keypair(tmp_path / "b", "ed25519")
    inline = "\n".join("      " + line for line in b.public_path.read_text().splitlines())
    ring = tmp_path / "keyring.yaml"
    ring.write_text(f"keys:\n  - name: vendor-a\n    public_key: a/{keys.PUBLIC_KEY_NAME}\n    vendors: [A]\n"
                    f"    keyid: \"{a.keyid}\"\n  - name: vendor-b\n    vendors: [B, B2]\n    public_key: |\n{inline}\n")
    loaded = keyring.load_keyring(ring)
    assert [(k.name, k.keyid, k.algorithm) for k in loaded] == [
        ("vendor-a", a.keyid, "ecdsa-p256"), ("vendor-b", b.keyid, "ed25519")]


@pytest.mark.parametrize("body, message", [
    ("keys: []\n", r"keys: \[\] should be non-empty"),
    ("keys:\n  - name: x\n", "keys\\[0\\]: 'public_key' is a required property"),
    ("keys:\n  - name: x\n    public_key: a.pub\n    owner: y\n", r"keys\[0\]: .*'owner' was unexpected"),
    ("keys:\n  - name: x\n    public_key: nowhere.pub\n    vendors: [V]\n", "file not found"),
    ("keys:\n  - name: x\n    public_key: a.pub\n    vendors: [V]\n    keyid: SHA256:abc\n",
     r"keys\[0\].keyid: 'SHA256:abc' is not a keyid"),
    ("keys:\n  - name: x\n    public_key: a.pub\n    vendors: [V]\n    keyid: SHA256:" + "A" * 43 + "\n",
     "does not match the key"),
    ("keys:\n  - name: x\n    public_key: a.pub\n    vendors: [V]\n  - name: y\n    public_key: a.pub\n"
     "    vendors: [W]\n", "are the same key"),
    ("keys:\n  - name: x\n    public_key: a.pub\n", "keys\\[0\\]: 'vendors' is a required property"),
    ("keys:\n  - name: x\n    public_key: a.pub\n    vendors: []\n", r"keys\[0\].vendors: \[\] should be non-empty"),
    ("keys:\n  - name: x\n    public_key: a.pub\n    public_key: b.pub\n    vendors: [V]\n", "duplicate key"),
    ("keys: [\n", "invalid YAML"),
    # revocation (docs/signing.md): the date, the reason and the kept reports are checked too
    ("keys:\n  - name: x\n    public_key: a.pub\n    vendors: [V]\n    revoked: {from: '2026-13-01', reason: r}\n",
     r"keys\[0\].revoked.from: '2026-13-01' is not a 'date'"),
    ("keys:\n  - name: x\n    public_key: a.pub\n    vendors: [V]\n    revoked: {from: soon, reason: r}\n",
     r"keys\[0\].revoked.from: 'soon' is not a date YYYY-MM-DD"),
    ("keys:\n  - name: x\n    public_key: a.pub\n    vendors: [V]\n    revoked: {from: 2026-11-01}\n",
     r"keys\[0\].revoked: 'reason' is a required property"),
    ("keys:\n  - name: x\n    public_key: a.pub\n    vendors: [V]\n    revoked: {from: 2026-11-01, reason: r, "
     "reports: [abc]}\n", r"keys\[0\].revoked.reports\[0\]: 'abc' is not a sha256 digest"),
    ("keys:\n  - name: x\n    public_key: a.pub\n    vendors: [V]\n    revoked: {from: 2026-11-01, reason: r, "
     "until: 2027-01-01}\n", r"keys\[0\].revoked: .*'until' was unexpected"),
    ("keys:\n  - name: x\n    public_key: a.pub\n    vendors: [V]\n    revoked: 2026-11-01\n",
     r"keys\[0\].revoked: '2026-11-01' is not of type 'object'"),
])
def test_keyring_errors_name_the_problem(tmp_path: Path, body: str, message: str) -> None:
    pair = keys.write_keypair(tmp_path / "k")
    os.replace(pair.public_path, tmp_path / "a.pub")
    ring = tmp_path / "ring.yaml"
    ring.write_text(body)
    with pytest.raises(UserError, match=message) as exc:
        keyring.load_keyring(ring)
    assert "\n" not in str(exc.value)


def test_passphrase_on_the_command_line_is_refused_without_echo(capsys) -> None:
    from conformance.cli.signing import build_parser
    for argv in (["keygen", "--out", "x", "--passphrase", "hunter2-secret"],
                 ["keygen", "--out", "x", "--passphrase=hunter2-secret"],
                 ["sign", "dir", "--key", "k", "--passphrase", "hunter2-secret"]):
        with pytest.raises(SystemExit) as exc:
            build_parser().parse_args(argv)
        assert exc.value.code == 2
        err = capsys.readouterr().err
        assert "--passphrase-env" in err and "hunter2-secret" not in err
    with pytest.raises(UserError, match="NAME of an environment variable") as uerr:
        keys.passphrase_from_env("my secret pass!")
    assert "my secret" not in str(uerr.value)


@pytest.mark.parametrize("which, says", [(keys.PUBLIC_KEY_NAME, "this is a public key, not a keyring; a keyring is"),
                                         (keys.PRIVATE_KEY_NAME, "this is a private key, not a keyring")])
def test_a_pem_key_given_as_keyring_says_what_it_is(tmp_path: Path, capsys, which: str, says: str) -> None:
    """`review --keyring conformance.pub`: one line saying it is a key and what a keyring is."""
    keys.write_keypair(tmp_path / "k")
    (tmp_path / "subs").mkdir()
    for command in (["review", str(tmp_path / "subs")], ["verify", str(tmp_path / "subs")]):
        assert main([*command, "--keyring", str(tmp_path / "k" / which)]) == 2
        out = capsys.readouterr()
        assert out.out == "" and out.err.count("\n") == 1 and says in out.err, out.err
        assert "-----BEGIN" not in out.err and "is not of type" not in out.err
