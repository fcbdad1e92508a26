"""Making strings from outside (manifests, plugins, reports, keyrings) safe to show.

A vendor name, a check reason or a keyid is written by someone else: printed raw, a newline and
ANSI escapes can forge `PASS` lines in a terminal, and a `|` can shift a Markdown table so that an
invalid row reads "verified". Every such string goes through one of these functions on its way
to a terminal or a Markdown file (HTML pages escape through their template engine's autoescape).
"""
from __future__ import annotations

import re
import unicodedata

# Escaped wherever shown: every character whose Unicode category is a control (Cc: C0/C1, ESC,
# DEL, U+0085 NEL), a format character (Cf: bidi embeddings/overrides/isolates such as U+202E,
# zero-width characters, U+FEFF, U+061C) or a line/paragraph separator (Zl U+2028, Zp U+2029: a
# line-based reader starts a new line at each, so a raw one could forge a `VERIFIED:` line).
# Categories, not a list, so characters added to them in later Unicode versions are covered too.
_ESCAPED_CATEGORIES = frozenset({"Cc", "Cf", "Zl", "Zp"})
# Also escaped: what prints as nothing, or as a plain space, although it is a different character
# (a vendor name "SimAcc" + U+034F prints exactly like "SimAcc"):
# * unassigned and private-use code points (Cn, Co): no font is obliged to draw anything;
# * every space separator but U+0020 (Zs: NO-BREAK SPACE, EN QUAD ... IDEOGRAPHIC SPACE);
# * Default_Ignorable_Code_Point, the characters Unicode says a renderer may show as nothing
#   (combining grapheme joiner U+034F, variation selectors U+FE00..FE0F and U+E0100..E01EF,
#   Khmer inherent vowels U+17B4..17B5, Hangul fillers, Mongolian selectors, tags ...);
# * blank and filler characters that are not default-ignorable but draw an empty cell (BLANK).
_INVISIBLE_CATEGORIES = frozenset({"Cn", "Co", "Zs"})
# Default_Ignorable_Code_Point from the UCD's DerivedCoreProperties.txt, Unicode 14.0.0 (the
# version of Python 3.11's unicodedata); the whole property, 27 ranges, inclusive.
DEFAULT_IGNORABLE = (
    (0x00AD, 0x00AD), (0x034F, 0x034F), (0x061C, 0x061C), (0x115F, 0x1160), (0x17B4, 0x17B5),
    (0x180B, 0x180D), (0x180E, 0x180E), (0x180F, 0x180F), (0x200B, 0x200F), (0x202A, 0x202E),
    (0x2060, 0x2064), (0x2065, 0x2065), (0x2066, 0x206F), (0x3164, 0x3164), (0xFE00, 0xFE0F),
    (0xFEFF, 0xFEFF), (0xFFA0, 0xFFA0), (0xFFF0, 0xFFF8), (0x1BCA0, 0x1BCA3), (0x1D173, 0x1D17A),
    (0xE0000, 0xE0000), (0xE0001, 0xE0001), (0xE0002, 0xE001F), (0xE0020, 0xE007F),
    (0xE0080, 0xE00FF), (0xE0100, 0xE01EF), (0xE01F0, 0xE0FFF),
)
# Drawn as an empty cell although neither default-ignorable nor a space: BRAILLE PATTERN BLANK,
# MUSICAL SYMBOL NULL NOTEHEAD, KHITAN SMALL SCRIPT FILLER (the Hangul fillers are in the set above).
BLANK = frozenset({0x2800, 0x1D159, 0x16FE4})
_ANSI = re.compile(r"\x1b(\[[0-?]*[ -/]*[@-~]|\][^\x07\x1b]*(\x07|\x1b\\)?|[@-Z\\-_])")


def _visible(ch: str) -> str:
    return f"\\x{ord(ch):02x}" if ord(ch) < 0x100 else f"\\u{ord(ch):04x}" if ord(ch) < 0x10000 \
        else f"\\U{ord(ch):08x}"


_DEFAULT_IGNORABLE_SET = frozenset(cp for lo, hi in DEFAULT_IGNORABLE for cp in range(lo, hi + 1))  # 4,174


def default_ignorable(ch: str) -> bool:
    """Unicode's Default_Ignorable_Code_Point property (a renderer may draw the character as nothing)."""
    return ord(ch) in _DEFAULT_IGNORABLE_SET


def invisible(ch: str) -> bool:
    """A character that prints as nothing or as a plain space without being U+0020: a control,
    format or separator character, a default-ignorable or blank one, any other space, an
    unassigned or private-use code point. Printed, each is escaped; in a name, each is refused."""
    category = unicodedata.category(ch)
    return (ch != " " and (category in _ESCAPED_CATEGORIES or category in _INVISIBLE_CATEGORIES)
            or ord(ch) in BLANK or default_ignorable(ch))


def _escape_controls(s: str, keep: str = "") -> str:
    """Controls, format characters, separators and every other invisible character (`invisible`)
    as visible escapes (`keep`: allowed as is); lone surrogates (not encodable) become U+FFFD."""
    out = []
    for ch in s:
        category = unicodedata.category(ch)
        if ch in keep or ch == " " or ch.isascii() and ch.isprintable():
            out.append(ch)
        elif category != "Cs" and invisible(ch):
            out.append(_visible(ch))
        elif category == "Cs":
            out.append("\ufffd")
        else:
            out.append(ch)
    return "".join(out)


def terminal(text: object, *, limit: int = 2000, one_line: bool = True) -> str:
    """One printable line: escape sequences removed, other controls shown as `\\xNN`.

    Newlines become a visible `\\n` when `one_line` (so a value can never start a new output line);
    the result is cut to `limit` characters with an ellipsis.
    """
    s = str(text)
    s = _ANSI.sub("", s)
    if one_line:
        s = s.replace("\r\n", "\n").replace("\n", "\\n").replace("\t", " ")
    s = _escape_controls(s)
    if len(s) > limit:
        s = s[: max(0, limit - 1)] + "…"
    return s


def markdown_cell(text: object, *, limit: int = 2000) -> str:
    """A string safe inside one Markdown table cell: one line, `|` and markup characters escaped."""
    s = terminal(text, limit=limit)
    for ch in "|`*_[]<>#":
        s = s.replace(ch, "\\" + ch)
    return s


def markdown_text(text: object, *, limit: int = 20000) -> str:
    """A paragraph of outside text for Markdown: controls removed, HTML and link syntax inert."""
    s = _ANSI.sub("", str(text))
    s = _escape_controls(s.replace("\r\n", "\n"), keep="\n\t")
    for ch in "<>[]`|":
        s = s.replace(ch, "\\" + ch)
    if len(s) > limit:
        s = s[: max(0, limit - 1)] + "…"
    return s


def markdown_code(text: object, *, limit: int = 20000) -> str:
    """Outside text for a fenced code block (```` ~~~ ```` fences): controls removed, lines kept;
    a line that could close the fence is defused."""
    s = _ANSI.sub("", str(text)).replace("\r\n", "\n")
    s = "\n".join(_escape_controls(line.replace("\t", "    "))
                  for line in s.split("\n"))
    s = s.replace("~~~", "~ ~ ~").replace("```", "` ` `")
    if len(s) > limit:
        s = s[: max(0, limit - 1)] + "…"
    return s
