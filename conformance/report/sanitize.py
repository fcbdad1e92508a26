"""Making strings from outside (manifests, plugins, reports, keyrings) safe to show.

A vendor name, a check reason or a keyid is written by someone else: printed raw, a newline and
ANSI escapes can forge `PASS` lines in a terminal, and a `|` can shift a Markdown table so that an
invalid row reads "verified". Every such string goes through one of these functions on its way
to a terminal or a Markdown file (HTML pages escape through their template engine's autoescape).
"""
from __future__ import annotations

import re
import unicodedata

# C0/C1 control characters (ESC included), DEL, and Unicode format/bidi controls that can
# reorder or hide text (e.g. U+202E RIGHT-TO-LEFT OVERRIDE).
_CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f\u200b-\u200f\u202a-\u202e\u2066-\u2069\ufeff]")
_ANSI = re.compile(r"\x1b(\[[0-?]*[ -/]*[@-~]|\][^\x07\x1b]*(\x07|\x1b\\)?|[@-Z\\-_])")


def _visible(ch: str) -> str:
    return f"\\x{ord(ch):02x}" if ord(ch) < 0x100 else f"\\u{ord(ch):04x}"


def terminal(text: object, *, limit: int = 2000, one_line: bool = True) -> str:
    """One printable line: escape sequences removed, other controls shown as `\\xNN`.

    Newlines become a visible `\\n` when `one_line` (so a value can never start a new output line);
    the result is cut to `limit` characters with an ellipsis.
    """
    s = str(text)
    s = _ANSI.sub("", s)
    if one_line:
        s = s.replace("\r\n", "\n").replace("\n", "\\n").replace("\t", " ")
    s = _CONTROL.sub(lambda m: _visible(m.group(0)), s)
    s = "".join(ch if unicodedata.category(ch) != "Cs" else "\ufffd" for ch in s)
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
    s = _CONTROL.sub(lambda m: _visible(m.group(0)), s.replace("\r\n", "\n"))
    for ch in "<>[]`|":
        s = s.replace(ch, "\\" + ch)
    if len(s) > limit:
        s = s[: max(0, limit - 1)] + "…"
    return s


def markdown_code(text: object, *, limit: int = 20000) -> str:
    """Outside text for a fenced code block (```` ~~~ ```` fences): controls removed, lines kept;
    a line that could close the fence is defused."""
    s = _ANSI.sub("", str(text)).replace("\r\n", "\n")
    s = "\n".join(_CONTROL.sub(lambda m: _visible(m.group(0)), line.replace("\t", "    "))
                  for line in s.split("\n"))
    s = s.replace("~~~", "~ ~ ~").replace("```", "` ` `")
    if len(s) > limit:
        s = s[: max(0, limit - 1)] + "…"
    return s
