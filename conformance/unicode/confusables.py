"""The confusable-prototype table of Unicode TR39, the subset a name can reach, shipped as data.

`confusables.tsv` (beside this module) holds one mapping a line, `SOURCE<TAB>PROTOTYPE` in hex
code points, generated from the UCD's `security/<version>/confusables.txt` by

    python -m conformance.unicode.confusables confusables.txt > conformance/unicode/confusables.tsv

Its header names the source file, its version and sha256, so a reviewer can regenerate it and
compare; `tests/unit/test_identity.py` checks the table against the rule below.

Why a subset: names are compared through `identity.skeleton`, which takes NFKD of the name
(NFKC as every name comparison here, then TR39's NFD) before it looks characters up. NFKD leaves
no character that has a decomposition, so an entry whose source character is not its own NFKD
(precomposed letters, the mathematical alphabets, full-width forms, ligatures: 3,784 of the
6,311 entries of 14.0.0) can never be looked up. The subset keeps exactly the other 2,527
entries, so it compares names as the full table would, at a twentieth of the size.
Version 14.0.0 matches the Unicode version of Python 3.11's `unicodedata`, which does the
normalisation, so the two never disagree about what a character is.
"""
from __future__ import annotations

import functools
import hashlib
import sys
import unicodedata
from importlib import resources
from pathlib import Path

DATA_NAME = "confusables.tsv"


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


def reachable(source: str) -> bool:
    """Whether a name in NFKD can contain `source` (see the module docstring)."""
    return unicodedata.normalize("NFKD", source) == source


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


def generate(source_text: str) -> str:
    """The shipped table for one UCD confusables.txt."""
    version = header_fields(source_text).get("Version", "?")
    digest = hashlib.sha256(source_text.encode("utf-8")).hexdigest()
    lines = [
        "# Unicode TR39 confusable prototypes, the entries a name in NFKD can contain",
        f"# Source: https://www.unicode.org/Public/security/{version}/confusables.txt",
        f"# Version: {version}",
        f"# Source-SHA256: {digest}",
        "# Generator: python -m conformance.unicode.confusables confusables.txt",
        "# Terms: https://www.unicode.org/terms_of_use.html (Unicode data files, redistributable with this notice)",
        "# Format: source code point <TAB> prototype code points (space separated), hex",
    ]
    for source, prototype in parse_ucd(source_text):
        if reachable(source):
            lines.append(f"{ord(source):04X}\t" + " ".join(f"{ord(c):04X}" for c in prototype))
    return "\n".join(lines) + "\n"


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


def main(argv: list[str]) -> int:
    if len(argv) != 1:
        print("usage: python -m conformance.unicode.confusables PATH/TO/confusables.txt", file=sys.stderr)
        return 2
    sys.stdout.write(generate(Path(argv[0]).read_bytes().decode("utf-8")))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
