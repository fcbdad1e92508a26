"""Vendor and key names compared the way people read them.

"Ray Accelerator" and "Ray Аccelerator" (a Cyrillic А) look the same on a screen; so do a name
and the same name with a trailing space, or with a full-width letter. A keyring that binds
such look-alikes to different keys, or a report whose vendor is one of them, would show a SIG
reviewer two vendors that look like one. So names are compared NFKC-normalised with
whitespace trimmed and runs of whitespace collapsed, and a name whose letters come from more
than one script is refused where names are declared (the keyring).
"""
from __future__ import annotations

import unicodedata


def normalized(name: object) -> str | None:
    """The comparison form of a name (None for a non-string)."""
    if not isinstance(name, str):
        return None
    return " ".join(unicodedata.normalize("NFKC", name).split())


def scripts(name: str) -> set[str]:
    """The scripts of the letters in `name` (LATIN, CYRILLIC, GREEK, CJK, ...), from Unicode names."""
    out = set()
    for ch in unicodedata.normalize("NFKC", name):
        if not ch.isalpha():
            continue
        try:
            out.add(unicodedata.name(ch).split(" ")[0])
        except ValueError:
            out.add("UNNAMED")
    return out


def mixed_script(name: str) -> bool:
    return len(scripts(name)) > 1


def same(a: object, b: object) -> bool:
    na, nb = normalized(a), normalized(b)
    return na is not None and na == nb
