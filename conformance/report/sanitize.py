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
_ANSI = re.compile(r"\x1b(\[[0-?]*[ -/]*[@-~]|\][^\x07\x1b]*(\x07|\x1b\\)?|[@-Z\\-_])")


def _visible(ch: str) -> str:
    return f"\\x{ord(ch):02x}" if ord(ch) < 0x100 else f"\\u{ord(ch):04x}" if ord(ch) < 0x10000 \
        else f"\\U{ord(ch):08x}"


def _escape_controls(s: str, keep: str = "") -> str:
    """Controls, format characters and separators as visible escapes (`keep`: allowed as is);
    lone surrogates (not encodable) become U+FFFD."""
    out = []
    for ch in s:
        category = unicodedata.category(ch)
        if category in _ESCAPED_CATEGORIES and ch not in keep:
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
