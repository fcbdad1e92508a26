"""Encrypted PKCS#8 private keys with a modern KDF (scrypt), and a check of an existing key's KDF.

`cryptography` writes encrypted PKCS#8 only with PBKDF2 at 2,048 iterations
(BestAvailableEncryption), far below today's guidance (OWASP: PBKDF2-SHA256 >= 600,000, or
scrypt). So keygen builds the EncryptedPrivateKeyInfo itself: PBES2 with scrypt (RFC 7914 s.7,
N=2^15, r=8, p=1) and AES-256-CBC, the same structure `openssl pkcs8 -topk8 -scrypt` writes,
and any OpenSSL-based loader (cryptography's `load_pem_private_key` included) decrypts it.
Old keys stay loadable; `kdf_weakness` says why one is weak so `sign` can warn.
"""
from __future__ import annotations

import base64
import os
import re

from cryptography.hazmat.primitives import padding
from cryptography.hazmat.primitives.ciphers import Cipher, algorithms, modes
from cryptography.hazmat.primitives.kdf.scrypt import Scrypt

OID_PBES2 = "1.2.840.113549.1.5.13"
OID_PBKDF2 = "1.2.840.113549.1.5.12"
OID_SCRYPT = "1.3.6.1.4.1.11591.4.11"
OID_AES256_CBC = "2.16.840.1.101.3.4.1.42"
OID_HMAC_SHA256 = "1.2.840.113549.2.9"
SCRYPT_N, SCRYPT_R, SCRYPT_P = 2 ** 15, 8, 1  # 32 MiB per derivation
MIN_SCRYPT_N = 2 ** 14
MIN_PBKDF2_SHA256_ITERATIONS = 600_000


# --------------------------------------------------------------------------- DER, the little we need

def _len(n: int) -> bytes:
    if n < 0x80:
        return bytes([n])
    body = n.to_bytes((n.bit_length() + 7) // 8, "big")
    return bytes([0x80 | len(body)]) + body


def _tlv(tag: int, content: bytes) -> bytes:
    return bytes([tag]) + _len(len(content)) + content


def _seq(*items: bytes) -> bytes:
    return _tlv(0x30, b"".join(items))


def _int(n: int) -> bytes:
    body = n.to_bytes(max(1, (n.bit_length() + 8) // 8), "big")
    return _tlv(0x02, body)


def _octets(b: bytes) -> bytes:
    return _tlv(0x04, b)


def _oid(dotted: str) -> bytes:
    arcs = [int(a) for a in dotted.split(".")]
    out = bytearray([40 * arcs[0] + arcs[1]])
    for arc in arcs[2:]:
        chunk = [arc & 0x7F]
        arc >>= 7
        while arc:
            chunk.append(0x80 | (arc & 0x7F))
            arc >>= 7
        out += bytes(reversed(chunk))
    return _tlv(0x06, bytes(out))


def _read(buf: bytes, pos: int = 0) -> tuple[int, bytes, int]:
    """(tag, content, next position); raises ValueError on anything malformed."""
    if pos + 2 > len(buf):
        raise ValueError("truncated DER")
    tag, first = buf[pos], buf[pos + 1]
    pos += 2
    if first & 0x80:
        n = first & 0x7F
        if n == 0 or n > 4 or pos + n > len(buf):
            raise ValueError("bad DER length")
        length = int.from_bytes(buf[pos:pos + n], "big")
        pos += n
    else:
        length = first
    if pos + length > len(buf):
        raise ValueError("truncated DER")
    return tag, buf[pos:pos + length], pos + length


def _children(content: bytes) -> list[tuple[int, bytes]]:
    out, pos = [], 0
    while pos < len(content):
        tag, body, pos = _read(content, pos)
        out.append((tag, body))
    return out


def _oid_text(body: bytes) -> str:
    arcs = [body[0] // 40, body[0] % 40]
    value = 0
    for b in body[1:]:
        value = (value << 7) | (b & 0x7F)
        if not b & 0x80:
            arcs.append(value)
            value = 0
    return ".".join(map(str, arcs))


# --------------------------------------------------------------------------- write / inspect

def encrypt_pkcs8(plain_der: bytes, passphrase: bytes) -> bytes:
    """PEM 'ENCRYPTED PRIVATE KEY' of an unencrypted PKCS#8 DER, PBES2 + scrypt + AES-256-CBC."""
    salt, iv = os.urandom(16), os.urandom(16)
    key = Scrypt(salt=salt, length=32, n=SCRYPT_N, r=SCRYPT_R, p=SCRYPT_P).derive(passphrase)
    padder = padding.PKCS7(128).padder()
    padded = padder.update(plain_der) + padder.finalize()
    encryptor = Cipher(algorithms.AES(key), modes.CBC(iv)).encryptor()
    encrypted = encryptor.update(padded) + encryptor.finalize()
    kdf = _seq(_oid(OID_SCRYPT), _seq(_octets(salt), _int(SCRYPT_N), _int(SCRYPT_R), _int(SCRYPT_P), _int(32)))
    scheme = _seq(_oid(OID_AES256_CBC), _octets(iv))
    der = _seq(_seq(_oid(OID_PBES2), _seq(kdf, scheme)), _octets(encrypted))
    body = base64.encodebytes(der).decode("ascii").replace("\n", "")
    lines = [body[i:i + 64] for i in range(0, len(body), 64)]
    return ("-----BEGIN ENCRYPTED PRIVATE KEY-----\n" + "\n".join(lines)
            + "\n-----END ENCRYPTED PRIVATE KEY-----\n").encode("ascii")


def kdf_weakness(pem: bytes) -> str | None:
    """Why an encrypted PKCS#8 PEM's key derivation is weak, or None (strong, or not encrypted PKCS#8)."""
    m = re.search(rb"-----BEGIN ENCRYPTED PRIVATE KEY-----(.*?)-----END ENCRYPTED PRIVATE KEY-----", pem, re.S)
    if not m:
        return None
    try:
        der = base64.b64decode(b"".join(m.group(1).split()))
        _, top, _ = _read(der)
        (_, alg), _ = _children(top)
        (_, oid), (_, params) = _children(alg)[:2]
        if _oid_text(oid) != OID_PBES2:
            return f"encrypted with the legacy scheme {_oid_text(oid)} (not PBES2)"
        (_, kdf), _ = _children(params)[:2]
        kdf_oid, kdf_params = _children(kdf)[:2]
        name = _oid_text(kdf_oid[1])
        fields = _children(kdf_params[1])
        if name == OID_SCRYPT:
            n = int.from_bytes(fields[1][1], "big")
            return None if n >= MIN_SCRYPT_N else f"scrypt with N={n} (< {MIN_SCRYPT_N})"
        if name == OID_PBKDF2:
            iterations = int.from_bytes(fields[1][1], "big")
            prf = next((_oid_text(_children(b)[0][1]) for t, b in fields[2:] if t == 0x30), "1.2.840.113549.2.7")
            if prf != OID_HMAC_SHA256:
                return f"PBKDF2 with PRF {prf} (not HMAC-SHA256), {iterations} iterations"
            if iterations < MIN_PBKDF2_SHA256_ITERATIONS:
                return f"PBKDF2-SHA256 with {iterations} iterations (< {MIN_PBKDF2_SHA256_ITERATIONS})"
            return None
        return f"unknown key derivation {name}"
    except (ValueError, IndexError, TypeError):
        return "unreadable encryption parameters"
