"""Names with compatibility forms of letters and digits (held-out round 25: N25_31).

verify's `names` line refuses a vendor or product that prints as nothing, as a plain space, or
mixes scripts in a word (conformance/identity.py). A full-width letter passes both ("SimAcc Ｘ1"
is Latin, every character visible) yet prints like "SimAcc X1": the identity binding compares
NFKC forms (the keyring's vendor matches it), but review, the dashboard and diff show and key the
name as written, so one product appears twice, or a product passes for another. A letter or
digit whose NFKC form is another letter or digit (full-width and half-width forms, mathematical
alphanumerics, circled and superscript digits, ligatures such as "ﬁ") is a second spelling of
that character: a declared name uses the character itself. Symbols NFKC spells out ("™") are not
letters and pass.

Pure: a name in, problem lines out.
"""
from __future__ import annotations

import unicodedata
from typing import Any, Mapping

from conformance.identity import describe


def compatibility_letters(name: str) -> list[str]:
    """The letters and digits of `name` that are a compatibility form of other letters or digits."""
    out = []
    for ch in name:
        folded = unicodedata.normalize("NFKC", ch)
        if folded != ch and unicodedata.category(ch)[0] in "LN" and folded.isalnum():
            out.append(ch)
    return list(dict.fromkeys(out))


def compat_name_problems(report: Mapping[str, Any]) -> list[str]:
    """The manifest's vendor and product (what review and the dashboard show) written with a
    compatibility form of a letter or digit. `report` is JSON as read: sign's admission and review
    judge the names before (or without) the report schema."""
    manifest = report.get("manifest")
    problems = []
    for field in ("vendor", "product"):
        name = manifest.get(field) if isinstance(manifest, Mapping) else None
        if not isinstance(name, str):
            continue
        found = compatibility_letters(name)
        if found:
            shown = ", ".join(f"{describe(ch)} for {unicodedata.normalize('NFKC', ch)!r}" for ch in found[:3])
            problems.append(f"manifest.{field} writes a letter or digit in a compatibility form ({shown}): it prints "
                            f"like {ascii(unicodedata.normalize('NFKC', name))[:80]}, which review and the dashboard "
                            "show as another name")
    return problems
