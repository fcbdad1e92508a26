"""Vendor, product and key names compared the way people read them.

"Ray Accelerator" and "Ray Аccelerator" (a Cyrillic А) look the same on a screen; so do a name
and the same name with a trailing space, a full-width letter, a combining grapheme joiner
(U+034F), a variation selector (U+FE0F, U+E0100), a Khmer inherent vowel (U+17B5) or a braille
blank (U+2800). Three rules keep a SIG reviewer from seeing two vendors that look like one:

* **Equal** (`same`): the identity binding (a report's vendor is one its key may sign for)
  compares NFKC-normalised with whitespace trimmed and collapsed: the spelling must be the
  keyring's, up to compatibility forms and spacing.
* **Visible** (`name_problems`, `invisible_characters`): a declared name (keyring key names and
  vendors, the manifest's vendor and product) holds no character that prints as nothing or as
  a plain space without being one (`conformance.sanitize.invisible`: controls, format
  characters, default-ignorable code points, variation selectors, blanks and fillers, other
  spaces, unassigned code points), and no word mixes Latin with a script whose letters look
  Latin (a whole keyring name must not mix scripts at all: `mixed_script`).
* **Look-alike** (`looks_alike`, `lookalike_keys`): two different names whose confusable
  skeletons agree (Unicode TR39: the characters mapped to their prototypes, so "Ехаmple" in
  Cyrillic, "Examp1e" and "ExampIe" all have the skeleton of "Example") are one name to a
  reader: a keyring may not declare both, and review marks them. The table is TR39's whole
  (conformance/unicode/), looked up after NFD as TR39 does ("ſ", LONG S, is an "f") and after
  NFKD (it is also an "s"); a COMBINING DOT ABOVE on a Soft_Dotted letter ("i" + U+0307) is the
  letter's own dot and is dropped.
"""
from __future__ import annotations

import re
import unicodedata
from typing import Any, Literal, Mapping

from conformance.sanitize import BLANK, default_ignorable, invisible
from conformance.unicode.confusables import prototypes, soft_dotted


def normalized(name: object) -> str | None:
    """The comparison form of a name (None for a non-string)."""
    if not isinstance(name, str):
        return None
    return " ".join(unicodedata.normalize("NFKC", name).split())


def same(a: object, b: object) -> bool:
    na, nb = normalized(a), normalized(b)
    return na is not None and na == nb


# ---------------------------------------------------------------------------- scripts

def _script(ch: str) -> str:
    try:
        return unicodedata.name(ch).split(" ")[0]
    except ValueError:
        return "UNNAMED"


def scripts(name: str) -> set[str]:
    """The scripts of the letters in `name` (LATIN, CYRILLIC, GREEK, CJK, ...), from Unicode names."""
    return {_script(ch) for ch in unicodedata.normalize("NFKC", name) if ch.isalpha()}


def mixed_script(name: str) -> bool:
    return len(scripts(name)) > 1


# Scripts TR39's "highly restrictive" level lets one word combine (Latin with Han and Hiragana/
# Katakana, Bopomofo or Hangul): none of them has letters that pass for Latin ones.
_COMBINABLE = frozenset({"LATIN", "CJK", "HIRAGANA", "KATAKANA", "KATAKANA-HIRAGANA", "HANGUL", "BOPOMOFO",
                         "IDEOGRAPHIC"})


def _words(text: str) -> list[str]:
    """Runs of letters (with their combining marks): "Ω-Accel 2" is the words Ω and Accel."""
    words: list[str] = []
    current: list[str] = []
    for ch in text:
        if ch.isalpha() or unicodedata.category(ch) in ("Mn", "Mc") and current:
            current.append(ch)
        elif current:
            words.append("".join(current))
            current = []
    if current:
        words.append("".join(current))
    return words


def mixed_script_words(name: str) -> list[tuple[str, list[str]]]:
    """(word, its scripts) for each word (run of letters) of `name` that mixes scripts beyond what
    TR39's highly restrictive level allows (a Cyrillic or Greek letter inside a Latin word, say)."""
    out = []
    for word in _words(normalized(name) or ""):
        found = scripts(word)
        if len(found) > 1 and not found <= _COMBINABLE:
            out.append((word, sorted(found)))
    return out


# ---------------------------------------------------------------------------- visibility

def describe(ch: str) -> str:
    """`U+034F COMBINING GRAPHEME JOINER`."""
    return f"U+{ord(ch):04X} {unicodedata.name(ch, 'unnamed')}"


def invisible_characters(name: str) -> list[str]:
    """The characters of `name` that print as nothing or as a plain space without being one, in order, once each."""
    return list(dict.fromkeys(ch for ch in name if invisible(ch)))


def name_problems(name: object, field: str) -> list[str]:
    """Why `name` (the value of `field`) could print like another name; [] when it cannot."""
    if not isinstance(name, str):
        return []
    problems = []
    hidden = invisible_characters(name)
    if hidden:
        shown = ", ".join(describe(ch) for ch in hidden[:4]) + (" ..." if len(hidden) > 4 else "")
        problems.append(f"{field} has character(s) that print as nothing or as a plain space: {shown}")
    for word, found in mixed_script_words(name)[:2]:
        problems.append(f"{field}: the word {ascii(word)} mixes scripts ({', '.join(found)}), "
                        f"so it can look like a word of one script")
    return problems


def report_name_problems(report: Mapping[str, Any]) -> list[str]:
    """The manifest's vendor and product (what review and the dashboard show) as declared names.
    `report` is JSON as read: sign and review judge the names before (or without) the report schema,
    and the manifest loader passes its raw data."""
    manifest = report.get("manifest")
    if not isinstance(manifest, Mapping):
        return []
    return [p for f in ("vendor", "product") for p in name_problems(manifest.get(f), f"manifest.{f}")]


# ---------------------------------------------------------------------------- look-alikes

_Form = Literal["NFD", "NFKD"]
_ROUNDS = 4  # prototypes are themselves normalised and mapped again; the table settles in two
_DOT_ABOVE = "\u0307"
_ABOVE = 230  # canonical combining class of the marks drawn above a letter


def _without_soft_dots(text: str) -> str:
    """`text` (decomposed) without a COMBINING DOT ABOVE that stands where a Soft_Dotted letter's
    own dot is (i, j, Cyrillic і ...: "i" + U+0307 prints as "i"). Only the first mark above the
    letter replaces its dot, so marks below may come between; a dot over another mark above shows."""
    soft = soft_dotted()
    out: list[str] = []
    dotted = False  # the last base letter is soft-dotted and no mark above has covered it yet
    for ch in text:
        ccc = unicodedata.combining(ch)
        if ch == _DOT_ABOVE and dotted:
            dotted = False
            continue
        if ccc == 0:
            dotted = ch in soft
        elif ccc == _ABOVE:
            dotted = False
        out.append(ch)
    return "".join(out)


def _mapped(s: str, form: _Form) -> str:
    """One round of the skeleton: invisible characters dropped, spaces as one space, each character
    replaced by its prototype, normalised again (`form`)."""
    table = prototypes()
    out = []
    for ch in s:
        if ord(ch) in BLANK or unicodedata.category(ch) in ("Zs", "Zl", "Zp") or ch in "\t\n\r\v\f":
            out.append(" ")
        elif default_ignorable(ch) or unicodedata.category(ch) in ("Cn", "Co", "Cc", "Cf"):
            continue  # drawn as nothing (or as a box no reader can tell from another)
        else:
            out.append(table.get(ch, ch))
    return unicodedata.normalize(form, "".join(out))


def skeleton(name: str, *, compatibility: bool = False) -> str:
    """TR39's skeleton of `name`: NFD (NFKD with `compatibility`), default-ignorable characters (and
    controls, unassigned and private-use code points) removed, blanks and other spaces as one space,
    every character replaced by its confusable prototype (repeated until nothing changes), the dot
    above a Soft_Dotted letter dropped once (after the first round, so a Cyrillic і or a dotless ı
    mapped to "i", and a dot-like mark mapped to U+0307, count too), whitespace trimmed and collapsed.

    TR39 itself decomposes canonically (NFD), so a compatibility character keeps its own entry
    (LATIN SMALL LETTER LONG S is a look-alike of "f"); `compatibility` gives the skeleton of
    NFKC(name), the form every other comparison here uses (LONG S is then an "s")."""
    form: _Form = "NFKD" if compatibility else "NFD"
    s = _without_soft_dots(_mapped(unicodedata.normalize(form, name), form))  # once: a second dot shows
    for _ in range(_ROUNDS):
        mapped = _mapped(s, form)
        if mapped == s:
            break
        s = mapped
    return " ".join(s.split())


def lookalike_keys(name: object) -> frozenset[str]:
    """Names that share a key look alike: TR39's skeleton, the skeleton of NFKC(name), and that of
    the case-folded name (so "SIMACC" and "SimAcc" are one vendor too). Empty for a non-string."""
    if not isinstance(name, str):
        return frozenset()
    folded = unicodedata.normalize("NFKC", name).casefold()
    return frozenset({skeleton(name), skeleton(name, compatibility=True), skeleton(folded, compatibility=True)})


def looks_alike(a: object, b: object) -> bool:
    return bool(lookalike_keys(a) & lookalike_keys(b))


def _skeletons(name: str) -> list[str]:
    folded = unicodedata.normalize("NFKC", name).casefold()
    return [skeleton(name), skeleton(name, compatibility=True), skeleton(folded, compatibility=True),
            skeleton(folded)]


def reads_as(name: object, other: object) -> bool:
    """Whether `name` reads as `other` or shows it as a word of its own ("SimAcc", "simacc-ci" and
    "Sim\u0410cc official" all show the vendor SimAcc): each skeleton of `other` found in the same
    skeleton of `name`, with no letter or digit touching it on either side."""
    if not isinstance(name, str) or not isinstance(other, str) or not other.strip():
        return False
    for inner, outer in zip(_skeletons(other), _skeletons(name)):
        if inner and re.search(r"(?<![^\W_])" + re.escape(inner) + r"(?![^\W_])", outer):
            return True
    return False


def differing_characters(name: str, other: str) -> list[str]:
    """Characters of `name` not in `other` (what makes a look-alike differ), described."""
    return [describe(ch) for ch in dict.fromkeys(name) if ch not in other][:4]
