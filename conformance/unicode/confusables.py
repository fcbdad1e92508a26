"""The confusable-prototype table of Unicode TR39, whole, and the Soft_Dotted letters, shipped as data.

`confusables.tsv` (beside this module) holds one mapping a line, `SOURCE<TAB>PROTOTYPE` in hex
code points: every entry of the UCD's `security/<version>/confusables.txt`, none left out. It is
generated from the published files by

    python -m conformance.unicode.confusables confusables.txt PropList.txt > conformance/unicode/confusables.tsv

Its header names each source file, its version and sha256, so a reviewer can regenerate it and
compare (`tests/unit/test_identity.py` regenerates it from the header's own rows and checks the
counts); the release records the table's sha256 (`confusables_sha256` in tiers/releases.yaml).
The header also carries the `Soft_Dotted` letters of that version's PropList.txt (i, j and the
letters like them): a mark above such a letter takes the place of its dot, so "i" followed by
COMBINING DOT ABOVE (U+0307) prints as a plain "i" (identity.skeleton drops that dot, as CLDR's
casing rules do).

Why the whole table: TR39's skeleton looks characters up after NFD, not NFKD, so an entry whose
source has a compatibility decomposition is still looked up: LATIN SMALL LETTER LONG S (U+017F)
is a look-alike of "f" in the table, while NFKD would make it an "s". (An earlier subset kept
only the entries NFKD leaves alone, and so missed it.) Version 14.0.0 matches the Unicode
version of Python 3.11's `unicodedata`, which does the normalisation, so the two never disagree
about what a character is.
"""
from __future__ import annotations

import functools
import hashlib
import sys
from importlib import resources
from pathlib import Path

DATA_NAME = "confusables.tsv"
SOFT_DOTTED_FIELD = "Soft_Dotted"


def parse_ucd(text: str) -> list[tuple[str, str]]:
    """(source, prototype) pairs of a UCD confusables.txt (`SRC ; PROTO ; MA # comment`)."""
    pairs = []
    for line in text.lstrip("\ufeff").splitlines():
        fields = line.split("#", 1)[0].strip()
        if not fields:
            continue
        source, prototype = (f.strip() for f in fields.split(";")[:2])
        pairs.append((chr(int(source, 16)), "".join(chr(int(cp, 16)) for cp in prototype.split())))
    return pairs


def parse_property(text: str, name: str) -> list[int]:
    """The code points a UCD property file (PropList.txt: `0069..006A ; Soft_Dotted # ...`) gives `name`."""
    out: list[int] = []
    for line in text.lstrip("\ufeff").splitlines():
        fields = [f.strip() for f in line.split("#", 1)[0].split(";")]
        if len(fields) < 2 or fields[1] != name:
            continue
        lo, _, hi = fields[0].partition("..")
        out += range(int(lo, 16), int(hi or lo, 16) + 1)
    return out


def header_fields(text: str) -> dict[str, str]:
    """`# Key: value` lines at the top of a UCD file or of the generated table."""
    out: dict[str, str] = {}
    for line in text.lstrip("\ufeff").splitlines():
        if not line.startswith("#"):
            break
        key, sep, value = line[1:].partition(":")
        if sep:
            out.setdefault(key.strip(), value.strip())
    return out


def _sha256(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def generate(source_text: str, proplist_text: str) -> str:
    """The shipped table for one UCD confusables.txt and the PropList.txt of the same version."""
    version = header_fields(source_text).get("Version", "?")
    soft = parse_property(proplist_text, SOFT_DOTTED_FIELD)
    lines = [
        "# Unicode TR39 confusable prototypes (every entry of confusables.txt) and the Soft_Dotted letters",
        f"# Source: https://www.unicode.org/Public/security/{version}/confusables.txt",
        f"# Version: {version}",
        f"# Source-SHA256: {_sha256(source_text)}",
        f"# Soft-Dotted-Source: https://www.unicode.org/Public/{version}/ucd/PropList.txt",
        f"# Soft-Dotted-Source-SHA256: {_sha256(proplist_text)}",
        f"# {SOFT_DOTTED_FIELD}: " + " ".join(f"{cp:04X}" for cp in soft),
        "# Generator: python -m conformance.unicode.confusables confusables.txt PropList.txt",
        "# Terms: https://www.unicode.org/terms_of_use.html (Unicode data files, redistributable with this notice)",
        "# Format: source code point <TAB> prototype code points (space separated), hex",
    ]
    for source, prototype in parse_ucd(source_text):
        lines.append(f"{ord(source):04X}\t" + " ".join(f"{ord(c):04X}" for c in prototype))
    return "\n".join(lines) + "\n"


def table_path() -> Path:
    """The shipped table's file (the release digests it)."""
    return Path(str(resources.files(__package__).joinpath(DATA_NAME)))


def table_text() -> str:
    return resources.files(__package__).joinpath(DATA_NAME).read_text(encoding="utf-8")


@functools.lru_cache(maxsize=1)
def prototypes() -> dict[str, str]:
    """source character -> its prototype string, from the shipped table."""
    out = {}
    for line in table_text().splitlines():
        if line and not line.startswith("#"):
            source, prototype = line.split("\t")
            out[chr(int(source, 16))] = "".join(chr(int(cp, 16)) for cp in prototype.split())
    return out


@functools.lru_cache(maxsize=1)
def soft_dotted() -> frozenset[str]:
    """The Soft_Dotted letters (PropList.txt of the table's version), from the shipped table's header."""
    listed = header_fields(table_text()).get(SOFT_DOTTED_FIELD, "")
    return frozenset(chr(int(cp, 16)) for cp in listed.split())


def main(argv: list[str]) -> int:
    if len(argv) != 2:
        print("usage: python -m conformance.unicode.confusables PATH/TO/confusables.txt PATH/TO/PropList.txt",
              file=sys.stderr)
        return 2
    texts = [Path(p).read_bytes().decode("utf-8") for p in argv]
    sys.stdout.write(generate(*texts))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
