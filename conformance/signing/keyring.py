"""The trusted keys a verifier accepts: one `--key` public key file, or a `--keyring` file.

Keyring format (YAML; the SIG keeps it in git and changes it only through reviewed PRs):

    keys:
      - name: simacc-ci                    # shown in verify/review output
        public_key: keys/simacc-ci.pub     # PEM file, relative to the keyring file ...
        vendors: [SimAcc]                  # the manifest vendor names this key may sign for
      - name: examplecorp
        vendors: [ExampleCorp]
        public_key: |                      # ... or the PEM inline
          -----BEGIN PUBLIC KEY-----
          ...
          -----END PUBLIC KEY-----
        keyid: "SHA256:..."                # optional; if given it must match the key

The signature's keyid is only a hint for picking a key; every trusted key is still tried.
`vendors` is the identity binding: verify accepts a report only when its manifest vendor is
one the signing key is bound to (a key given alone with `--key` is bound to no vendor list:
the person passing it vouches for it). Names are compared NFKC-normalised and trimmed
(signing/identity.py); a keyring whose key or vendor names collide after normalisation, or
whose names mix scripts ("Ray Аccelerator" with a Cyrillic А), is refused. The file is read with the strict loader, so a key given
twice in one entry (two `public_key:` lines) is an error, not "last one wins".
"""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from conformance.catalog.data import read_yaml_or_json
from conformance.errors import UserError
from conformance.report.sanitize import terminal
from conformance.signing import identity
from conformance.signing.keys import PublicKey, algorithm_of, keyid, load_public_key, load_public_key_pem

_FIELDS = {"name", "public_key", "keyid", "vendors"}


@dataclass(frozen=True)
class TrustedKey:
    name: str
    public_key: PublicKey
    keyid: str
    algorithm: str
    # Vendor names this key may sign for; None: not bound (a single key passed with --key).
    vendors: tuple[str, ...] | None = None

    def may_sign_for(self, vendor: object) -> bool:
        return self.vendors is None or any(identity.same(vendor, v) for v in self.vendors)


def trusted_key(public_key: PublicKey, name: str, vendors: tuple[str, ...] | None = None) -> TrustedKey:
    return TrustedKey(name, public_key, keyid(public_key), algorithm_of(public_key), vendors)


def key_from_file(path: Path) -> TrustedKey:
    """A single trusted key (`--key PUB`), named after its file."""
    return trusted_key(load_public_key(Path(path)), Path(path).name)


def _entry(entry: Any, index: int, base: Path, where: str) -> TrustedKey:
    field = f"{where}: keys[{index}]"
    if not isinstance(entry, dict):
        raise UserError(f"{field}: expected a mapping with name and public_key")
    unknown = sorted(set(entry) - _FIELDS)
    if unknown:
        raise UserError(f"{field}: unknown field {unknown[0]!r} (allowed: keyid, name, public_key, vendors)")
    name, material = entry.get("name"), entry.get("public_key")
    if not isinstance(name, str) or not name.strip():
        raise UserError(f"{field}.name: required non-empty string")
    if not isinstance(material, str) or not material.strip():
        raise UserError(f"{field}.public_key: required (a PEM file path or an inline PEM)")
    vendors = entry.get("vendors")
    if not isinstance(vendors, list) or not vendors \
            or not all(isinstance(v, str) and v.strip() for v in vendors):
        raise UserError(f"{field}.vendors: required list of the vendor names this key may sign for")
    if "-----BEGIN" in material:
        key = load_public_key_pem(material.encode("utf-8"), f"{field}.public_key")
    else:
        path = Path(material)
        key = load_public_key(path if path.is_absolute() else base / path, what=f"{field}.public_key")
    tk = trusted_key(key, name, tuple(vendors))
    if "keyid" in entry and entry["keyid"] != tk.keyid:
        raise UserError(f"{field}.keyid: {entry['keyid']!r} does not match the key ({tk.keyid})")
    return tk


def load_keyring(path: Path) -> list[TrustedKey]:
    """Parse and check a keyring file; every problem is a one-line UserError."""
    path = Path(path)
    doc = read_yaml_or_json(path, what="--keyring")
    where = f"--keyring {path}"
    if not isinstance(doc, dict) or not isinstance(doc.get("keys"), list) or not doc["keys"]:
        raise UserError(f"{where}: expected a mapping with a non-empty 'keys' list")
    keys = [_entry(e, i, path.parent, where) for i, e in enumerate(doc["keys"])]
    _check_names(keys, where)
    seen: dict[str, str] = {}
    for k in keys:
        if k.keyid in seen:
            raise UserError(f"{where}: keys {seen[k.keyid]!r} and {k.name!r} are the same key ({k.keyid})")
        seen[k.keyid] = k.name
    return keys


def _check_names(keys: list[TrustedKey], where: str) -> None:
    """Refuse look-alike names: mixed scripts within a name, or two different spellings that are
    one name after normalisation (a key's vendors listing one name twice is also refused)."""
    spelled: dict[tuple[str, str], str] = {}
    for i, k in enumerate(keys):
        for kind, names in (("name", [k.name]), ("vendors", list(k.vendors or ()))):
            for name in names:
                if identity.mixed_script(name):
                    raise UserError(f"{where}: keys[{i}].{kind}: {terminal(repr(name), limit=120)} mixes scripts "
                                    f"({', '.join(sorted(identity.scripts(name)))}); names must not look like others")
                norm = identity.normalized(name) or ""
                first = spelled.get((kind, norm))
                if first is not None and (first != name or kind == "vendors" and names.count(name) > 1):
                    raise UserError(f"{where}: {kind} {terminal(repr(first), limit=120)} and "
                                    f"{terminal(repr(name), limit=120)} are the same name after normalisation "
                                    f"(NFKC, whitespace trimmed)")
                spelled.setdefault((kind, norm), name)
