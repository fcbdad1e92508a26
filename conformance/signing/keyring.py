"""The trusted keys a verifier accepts: one `--key` public key file, or a `--keyring` file.

Keyring format (YAML; the SIG keeps it in git and changes it only through reviewed PRs; the
schema is conformance/signing/keyring.schema.json, the verifier's format, not release data):

    keys:
      - name: simacc-ci                    # shown in verify/review output
        public_key: keys/simacc-ci.pub     # PEM file, relative to the keyring file ...
        vendors: [SimAcc]                  # the manifest vendor names this key may sign for
      - name: examplecorp-2025
        vendors: [ExampleCorp]
        public_key: |                      # ... or the PEM inline
          -----BEGIN PUBLIC KEY-----
          ...
          -----END PUBLIC KEY-----
        keyid: "SHA256:..."                # optional; if given it must match the key
        revoked:                           # optional: the key stops counting from a date on
          from: 2026-11-01                 # reports signed on or after this day do not verify
                                           # (not after today: a date to come is refused)
          reason: rotated to examplecorp-2026
          reports: [<sha256 of report.json>, ...]   # optional: exactly these stay valid

The signature's keyid is only a hint for picking a key; every trusted key is still tried.
`vendors` is the identity binding: verify accepts a report only when its manifest vendor is
one the signing key is bound to (a key given alone with `--key` is bound to no vendor list:
the person passing it vouches for it). Names are compared NFKC-normalised and trimmed
(conformance/identity.py). A keyring is refused when a key or vendor name has a character that
prints as nothing or as a plain space, mixes scripts ("Ray Аccelerator" with a Cyrillic А), or
looks like another name of the keyring (the same confusable skeleton, Unicode TR39), and when a
key's name reads as a vendor of the keyring that the key is not bound to ("signed by SimAcc" on
another vendor's key). The file
is read with the strict loader, so a key given twice in one entry (two `public_key:` lines) is
an error, not "last one wins".
"""
from __future__ import annotations

from dataclasses import dataclass
from datetime import date, datetime, timezone
from importlib import resources
from pathlib import Path
from typing import Any

from conformance import identity
from conformance.catalog.datafiles import CompiledSchema, compiled_schema_bytes, read_yaml_or_json
from conformance.errors import UserError
from conformance.sanitize import terminal
from conformance.signing.keys import PublicKey, algorithm_of, keyid, load_public_key, load_public_key_pem

SCHEMA_NAME = "keyring.schema.json"


@dataclass(frozen=True)
class Revocation:
    """From `since` on the key no longer counts (signing/revocation.py judges a report against it)."""

    since: date
    reason: str
    # sha256 of the report.json files the SIG recorded before `since`: when given, exactly these
    # stay valid; None: a report stays valid when everything it shows dates it before `since`
    reports: frozenset[str] | None = None


@dataclass(frozen=True)
class TrustedKey:
    name: str
    public_key: PublicKey
    keyid: str
    algorithm: str
    # Vendor names this key may sign for; None: not bound (a single key passed with --key).
    vendors: tuple[str, ...] | None = None
    revoked: Revocation | None = None

    def may_sign_for(self, vendor: object) -> bool:
        return self.vendors is None or any(identity.same(vendor, v) for v in self.vendors)


def trusted_key(public_key: PublicKey, name: str, vendors: tuple[str, ...] | None = None,
                revoked: Revocation | None = None) -> TrustedKey:
    return TrustedKey(name, public_key, keyid(public_key), algorithm_of(public_key), vendors, revoked)


def key_from_file(path: Path) -> TrustedKey:
    """A single trusted key (`--key PUB`), named after its file."""
    return trusted_key(load_public_key(Path(path)), Path(path).name)


def schema() -> CompiledSchema:
    return compiled_schema_bytes(resources.files("conformance.signing").joinpath(SCHEMA_NAME).read_bytes(), SCHEMA_NAME)


def _dates_as_text(value: object) -> Any:
    """YAML reads an unquoted 2026-11-01 as a date: the schema sees the text it was written as."""
    if isinstance(value, date):
        return value.isoformat()
    if isinstance(value, dict):
        return {k: _dates_as_text(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_dates_as_text(v) for v in value]
    return value


def validate_keyring(raw: object, where: str) -> dict[str, Any]:
    """The keyring document checked against keyring.schema.json; the first (most specific)
    problem is a one-line UserError naming the field (`keys[1].revoked.from: ...`)."""
    doc = _dates_as_text(raw)
    # the deepest problem first; at one depth an unknown field before a missing one (a misspelt
    # field is then named as what it is)
    problem = schema().first_error(doc, unknown_first=True)
    if problem:
        raise UserError(f"{where}: {terminal(problem, limit=400)}")
    keyring: dict[str, Any] = doc   # the schema's top level is an object
    return keyring


def utc_today() -> date:
    return datetime.now(timezone.utc).date()


def _revocation(entry: dict[str, Any], field: str, today: date) -> Revocation | None:
    """The entry's revocation; one whose `from` is after `today` (UTC) is refused.

    Why refused, not read as "from today": `from` is the first day the key may have been in other
    hands, and no one knows that of a day to come. A date ahead is a typo or a rotation scheduled in
    advance; either way the key would count, on the signer's own `finished_at`, for every report
    dated before that day, including reports made after it was stolen. Reading it as today would
    silently judge by a date the SIG did not write. So the keyring says so in one line, and the SIG
    writes the revocation on (or after) the day it takes effect."""
    revoked = entry.get("revoked")
    if revoked is None:
        return None
    since = date.fromisoformat(revoked["from"])
    if since > today:
        raise UserError(f"{field}.revoked.from: {since} is in the future (today is {today}, UTC); a revocation "
                        f"counts from the first day the key may have been in other hands, which cannot be a day to "
                        f"come: write it on or after that day")
    reports = revoked.get("reports")
    return Revocation(since, revoked["reason"], frozenset(reports) if reports is not None else None)


def _entry(entry: dict[str, Any], index: int, base: Path, where: str, today: date) -> TrustedKey:
    field = f"{where}: keys[{index}]"
    material = entry["public_key"]
    if "-----BEGIN" in material:
        key = load_public_key_pem(material.encode("utf-8"), f"{field}.public_key")
    else:
        path = Path(material)
        key = load_public_key(path if path.is_absolute() else base / path, what=f"{field}.public_key")
    tk = trusted_key(key, entry["name"], tuple(entry["vendors"]), _revocation(entry, field, today))
    if "keyid" in entry and entry["keyid"] != tk.keyid:
        raise UserError(f"{field}.keyid: {entry['keyid']!r} does not match the key ({tk.keyid})")
    return tk


def load_keyring(path: Path, *, today: date | None = None) -> list[TrustedKey]:
    """Parse and check a keyring file; every problem is a one-line UserError. `today`: the UTC date
    a revocation may not be after (default: the clock's)."""
    path = Path(path)
    doc = read_yaml_or_json(path, what="--keyring")
    where = f"--keyring {path}"
    if isinstance(doc, str) and "-----BEGIN" in doc:   # a PEM file reads as one YAML string
        kind = "private" if "PRIVATE KEY-----" in doc else "public"
        raise UserError(f"{where}: this is a {kind} key, not a keyring; a keyring is a YAML file listing trusted "
                        "keys (keys: [{name, vendors, public_key: FILE or PEM}], docs/signing.md)"
                        + ("; to trust one public key, pass it with verify --key FILE" if kind == "public" else
                           "; never hand a private key to a verifier"))
    doc = validate_keyring(doc, where)
    _check_names(doc["keys"], where)
    today = today or utc_today()
    keys = [_entry(e, i, path.parent, where, today) for i, e in enumerate(doc["keys"])]
    seen: dict[str, str] = {}
    for k in keys:
        if k.keyid in seen:
            raise UserError(f"{where}: keys {seen[k.keyid]!r} and {k.name!r} are the same key ({k.keyid})")
        seen[k.keyid] = k.name
    return keys


def _shown(name: str) -> str:
    return terminal(repr(name), limit=120)


def _check_names(entries: list[dict[str, Any]], where: str) -> None:
    """Refuse names that could print like others: a character that prints as nothing or as a
    plain space, mixed scripts within a name, or two spellings with one confusable skeleton (a
    key's vendors listing one name twice is also refused)."""
    declared: dict[str, list[tuple[int, str, str]]] = {"name": [], "vendors": []}  # kind -> (key, field, name)
    for i, entry in enumerate(entries):
        for kind, names in (("name", [entry["name"]]), ("vendors", list(entry["vendors"]))):
            for j, name in enumerate(names):
                field = f"keys[{i}].{kind}" + (f"[{j}]" if kind == "vendors" else "")
                hidden = identity.invisible_characters(name)
                if hidden:
                    raise UserError(f"{where}: {field}: {_shown(name)} has character(s) that print as nothing or "
                                    f"as a plain space ({', '.join(identity.describe(c) for c in hidden[:4])}); "
                                    f"names must show every difference")
                if identity.mixed_script(name):
                    raise UserError(f"{where}: {field}: {_shown(name)} mixes scripts "
                                    f"({', '.join(sorted(identity.scripts(name)))}); names must not look like others")
                for key, first_field, first in declared[kind]:
                    # one vendor on two keys is rotation; one vendor twice on one key, or two
                    # spellings of a name, are not
                    if identity.looks_alike(first, name) and (first != name or kind == "vendors" and key == i):
                        raise UserError(f"{where}: {first_field} {_shown(first)} and {field} {_shown(name)} are the "
                                        f"same name after normalisation (NFKC, whitespace, case and look-alike "
                                        f"characters, Unicode TR39 skeleton)")
                declared[kind].append((i, field, name))
    _check_key_names_against_vendors(entries, declared["vendors"], where)


def _check_key_names_against_vendors(entries: list[dict[str, Any]], vendors: list[tuple[int, str, str]],
                                     where: str) -> None:
    """A key's name is printed as "signed by NAME" beside the report's vendor: a name that reads as
    a vendor of the keyring (the same look-alike rules as vendor names, or that vendor as a word
    of it) must be one of the key's own vendors, or a report of one vendor reads as signed by another."""
    for i, entry in enumerate(entries):
        own = list(entry["vendors"])
        for _key, field, vendor in vendors:
            if identity.reads_as(entry["name"], vendor) and not any(identity.looks_alike(vendor, v) for v in own):
                raise UserError(f"{where}: keys[{i}].name {_shown(entry['name'])} reads as the vendor {_shown(vendor)} "
                                f"({field}), which this key is not bound to (it signs for "
                                f"{', '.join(_shown(v) for v in own)}); a key name must not name another vendor")
