"""Signing keys: generate, load, identify, sign and verify (all crypto via `cryptography`).

Algorithms: ECDSA P-256 with SHA-256 and DER signatures (default: cosign's native key type and
the only DSSE algorithm every Sigstore client handles) and pure Ed25519 (never Ed25519ph, which
DSSE tooling does not use). Anything else is refused, so a verifier never meets a key type it
has not been tested with.

Key files: the private key is PKCS#8 PEM (optionally encrypted with a passphrase: PBES2 with
scrypt, see pkcs8.py), created with mode 0600 and never overwritten; signing refuses a key file
that group or others can access unless told otherwise (`--allow-insecure-key-mode`); the public key is SubjectPublicKeyInfo PEM, which is what
`cosign --key`, OpenSSL and securesystemslib read.
"""
from __future__ import annotations

import base64
import hashlib
import os
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Union

from cryptography.exceptions import InvalidSignature, UnsupportedAlgorithm
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec, ed25519

from conformance.errors import UserError
from conformance.signing import pkcs8

MAX_KEY_FILE_BYTES = 64 * 1024

PrivateKey = Union[ec.EllipticCurvePrivateKey, ed25519.Ed25519PrivateKey]
PublicKey = Union[ec.EllipticCurvePublicKey, ed25519.Ed25519PublicKey]

ALGORITHMS = ("ecdsa-p256", "ed25519")
DEFAULT_ALGORITHM = "ecdsa-p256"
PRIVATE_KEY_NAME = "conformance.key"
PUBLIC_KEY_NAME = "conformance.pub"


@dataclass(frozen=True)
class KeyPair:
    """Where `write_keypair` put the keys, and the public key's id."""

    private_path: Path
    public_path: Path
    keyid: str
    algorithm: str


def algorithm_of(key: object) -> str:
    """'ecdsa-p256' or 'ed25519'; raises UserError for any other key type or curve."""
    if isinstance(key, (ed25519.Ed25519PrivateKey, ed25519.Ed25519PublicKey)):
        return "ed25519"
    if isinstance(key, (ec.EllipticCurvePrivateKey, ec.EllipticCurvePublicKey)) \
            and isinstance(key.curve, ec.SECP256R1):
        return "ecdsa-p256"
    raise UserError(f"unsupported key type {type(key).__name__}"
                    f"{' on curve ' + key.curve.name if hasattr(key, 'curve') else ''}; "
                    f"use ECDSA P-256 or Ed25519")


def keyid(public_key: PublicKey) -> str:
    """'SHA256:' + unpadded base64 of sha256 over the OpenSSH wire-format public key.

    This is `ssh-keygen -l -E sha256` and go-securesystemslib's SHA256KeyID; sigstore-go (the
    cosign v3 bundle path) skips a signature whose non-empty keyid differs from it.
    """
    openssh = public_key.public_bytes(serialization.Encoding.OpenSSH, serialization.PublicFormat.OpenSSH)
    blob = base64.b64decode(openssh.split()[1])
    return "SHA256:" + base64.b64encode(hashlib.sha256(blob).digest()).decode("ascii").rstrip("=")


def public_pem(public_key: PublicKey) -> bytes:
    return public_key.public_bytes(serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo)


def generate_private_key(algorithm: str = DEFAULT_ALGORITHM) -> PrivateKey:
    if algorithm == "ecdsa-p256":
        return ec.generate_private_key(ec.SECP256R1())
    if algorithm == "ed25519":
        return ed25519.Ed25519PrivateKey.generate()
    raise UserError(f"--algorithm: unknown algorithm {algorithm!r}; expected one of {', '.join(ALGORITHMS)}")


def _create_exclusive(path: Path, data: bytes, mode: int) -> None:
    """Create `path` with `mode` from the start (no window with wider permissions); never overwrite."""
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, mode)
    try:
        os.fchmod(fd, mode)  # the umask may have narrowed it; make it exact
        os.write(fd, data)
    finally:
        os.close(fd)


def write_keypair(out_dir: Path, algorithm: str = DEFAULT_ALGORITHM,
                  passphrase: bytes | None = None) -> KeyPair:
    """Generate a key pair into `out_dir` (created if missing); refuse to overwrite either file."""
    out_dir = Path(out_dir)
    if out_dir.exists() and not out_dir.is_dir():
        raise UserError(f"--out: {out_dir} exists and is not a directory")
    priv_path, pub_path = out_dir / PRIVATE_KEY_NAME, out_dir / PUBLIC_KEY_NAME
    for path in (priv_path, pub_path):
        if path.exists() or path.is_symlink():
            raise UserError(f"keygen: {path} already exists; refusing to overwrite a key "
                            f"(choose another --out directory)")
    key = generate_private_key(algorithm)
    if passphrase:
        plain = key.private_bytes(serialization.Encoding.DER, serialization.PrivateFormat.PKCS8,
                                  serialization.NoEncryption())
        private_bytes = pkcs8.encrypt_pkcs8(plain, passphrase)
    else:
        private_bytes = key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                                          serialization.NoEncryption())
    out_dir.mkdir(parents=True, exist_ok=True)
    try:
        _create_exclusive(priv_path, private_bytes, 0o600)
    except FileExistsError:
        raise UserError(f"keygen: {priv_path} already exists; refusing to overwrite a key") from None
    try:
        _create_exclusive(pub_path, public_pem(key.public_key()), 0o644)
    except FileExistsError:
        priv_path.unlink()  # we created it a moment ago; do not leave half a pair
        raise UserError(f"keygen: {pub_path} already exists; refusing to overwrite a key") from None
    return KeyPair(priv_path, pub_path, keyid(key.public_key()), algorithm)


def passphrase_from_env(var: str | None) -> bytes | None:
    """The passphrase held in environment variable `var` (None when no variable was named).

    Passphrases come only from the environment, never argv (visible in `ps` and shell history).
    """
    if not var:
        return None
    if not re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", var):
        # do not echo it: it may be the passphrase itself, passed by mistake
        raise UserError("--passphrase-env: expects the NAME of an environment variable holding the passphrase")
    value = os.environ.get(var)
    if value is None:
        raise UserError(f"--passphrase-env: environment variable {var} is not set")
    if value == "":
        raise UserError(f"--passphrase-env: environment variable {var} is empty")
    return value.encode("utf-8")


def check_private_key_mode(path: Path, allow_insecure: bool = False) -> None:
    """Refuse a private key file that group or others may access (like ssh does), unless allowed."""
    try:
        mode = os.stat(path).st_mode & 0o777
    except OSError:
        return  # the read below reports the problem
    if mode & 0o077 and not allow_insecure:
        raise UserError(f"--key: {path} has mode {mode:04o}: group or others can access the private key; "
                        f"run `chmod 600 {path}` (or pass --allow-insecure-key-mode)")


def kdf_warning(path: Path) -> str | None:
    """A one-line warning when the key file is encrypted with a weak KDF (it still loads)."""
    try:
        weakness = pkcs8.kdf_weakness(Path(path).read_bytes()[:MAX_KEY_FILE_BYTES])
    except OSError:
        return None
    return (f"{path} is encrypted with {weakness}; re-encrypt it with a modern KDF, e.g. "
            f"`openssl pkcs8 -topk8 -scrypt -in {path} -out new.key`, or make a new key with keygen") if weakness else None


def load_private_key(path: Path, passphrase: bytes | None = None, *, allow_insecure_mode: bool = False) -> PrivateKey:
    """Load a PEM private key; every failure is a one-line UserError that never shows key bytes."""
    from conformance.catalog import strict_input

    path = Path(path)
    if not path.exists():
        raise UserError(f"--key: file not found: {path}")
    check_private_key_mode(path, allow_insecure_mode)
    data = strict_input.read_regular(path, "--key", max_bytes=MAX_KEY_FILE_BYTES)
    try:
        key = serialization.load_pem_private_key(data, passphrase)
    except TypeError:
        if passphrase is None:
            raise UserError(f"--key: {path} is encrypted; name the variable holding its passphrase "
                            f"with --passphrase-env") from None
        raise UserError(f"--key: {path} is not encrypted but a passphrase was given") from None
    except ValueError:
        if passphrase is not None:
            raise UserError(f"--key: cannot decrypt {path}: wrong passphrase or not a PEM private key") from None
        raise UserError(f"--key: {path} is not a PEM private key") from None
    except UnsupportedAlgorithm:
        raise UserError(f"--key: {path}: unsupported key algorithm") from None
    algorithm_of(key)
    return key  # type: ignore[return-value]  # algorithm_of let only a PrivateKey's algorithms through


def load_public_key_pem(data: bytes, source: str) -> PublicKey:
    """Parse a SubjectPublicKeyInfo PEM; `source` names where it came from in errors."""
    try:
        key = serialization.load_pem_public_key(data)
    except (ValueError, UnsupportedAlgorithm):
        raise UserError(f"{source}: not a PEM public key") from None
    try:
        algorithm_of(key)
    except UserError as exc:
        raise UserError(f"{source}: {exc}") from None
    return key  # type: ignore[return-value]  # algorithm_of let only a PublicKey's algorithms through


def load_public_key(path: Path, what: str = "--key") -> PublicKey:
    from conformance.catalog import strict_input

    path = Path(path)
    if not path.exists():
        raise UserError(f"{what}: file not found: {path}")
    data = strict_input.read_regular(path, what, max_bytes=MAX_KEY_FILE_BYTES)
    if b"PRIVATE KEY" in data:
        raise UserError(f"{what}: {path} is a private key; verification needs the public key")
    return load_public_key_pem(data, f"{what}: {path}")


def sign(private_key: PrivateKey, data: bytes) -> bytes:
    """Sign `data`: pure Ed25519, or ECDSA P-256/SHA-256 with an ASN.1 DER signature."""
    if isinstance(private_key, ed25519.Ed25519PrivateKey):
        return private_key.sign(data)
    algorithm_of(private_key)
    return private_key.sign(data, ec.ECDSA(hashes.SHA256()))


def verify(public_key: PublicKey, signature: bytes, data: bytes) -> bool:
    """True only if `signature` over `data` verifies with `public_key`."""
    try:
        if isinstance(public_key, ed25519.Ed25519PublicKey):
            public_key.verify(signature, data)
        elif isinstance(public_key, ec.EllipticCurvePublicKey) and isinstance(public_key.curve, ec.SECP256R1):
            public_key.verify(signature, data, ec.ECDSA(hashes.SHA256()))
        else:
            return False
    except InvalidSignature:
        return False
    return True
