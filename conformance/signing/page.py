"""verify's `page` line: the folder's report.html is report.json's page (held-out rounds 25: N25_19,
N25_20; 34: R2).

report.html is not a signed subject (the Statement signs report.json, junit.xml and report.md), yet
it is what a reader opens: a page edited after signing, or the page of another run left beside
this report.json, verified with nothing said. The page is derived, never stated, and no text may be
added to it: for a report of a release this verifier renders (signing/rendering.py: from
RENDERED_SINCE on) this verifier renders report.json (conformance.report.html.render_report_html,
deterministic) and the page must be that rendering byte for byte. A report of a release listed
before RENDERED_SINCE was paged by code that wrote other bytes: its page is cross-checked, the facts
it states read back from it (the tier achieved, and the All checks table: one row per check of
report.json, in order, each with report.json's outcome). No report.html: nothing shown, nothing to
hold.

A hostile file (a symlink out, a FIFO, over the size cap) is a problem line, never an exception;
the page is parsed once, by the standard library's HTMLParser, within read_file's size cap.
"""
from __future__ import annotations

from html.parser import HTMLParser
from pathlib import Path

from conformance.errors import UserError
from conformance.report.view import Report
from conformance.sanitize import terminal

PAGE = "report.html"


class _Facts(HTMLParser):
    """What a report page states: the tier badge's value and each All-checks row's (id, outcome)."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.tiers: list[str] = []
        self.rows: list[list[str]] = []   # [id, outcome class, ...] per <tr id="check-...">
        self._in_badge = 0                # div depth inside #tier-achieved
        self._value: list[str] | None = None
        self._row: list[str] | None = None
        self._cell: list[str] | None = None

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        a = {k: v or "" for k, v in attrs}
        if tag == "div":
            if self._in_badge:
                self._in_badge += 1
                if "value" in a.get("class", "").split():
                    self._value = []
            elif a.get("id") == "tier-achieved":
                self._in_badge = 1
        elif tag == "tr":
            self._row = [] if a.get("id", "").startswith("check-") else None
            if self._row is not None:
                self.rows.append(self._row)
        elif tag == "td" and self._row is not None and not self._row:
            self._cell = []
        elif tag == "span" and self._row is not None and len(self._row) == 1:
            pills = [c[2:] for c in a.get("class", "").split() if c.startswith("o-")]
            if "pill" in a.get("class", "").split() and pills:
                self._row.append(pills[0])

    def handle_endtag(self, tag: str) -> None:
        if tag == "div" and self._in_badge:
            if self._value is not None:
                self.tiers.append("".join(self._value).strip())
                self._value = None
            self._in_badge -= 1
        elif tag == "td" and self._cell is not None and self._row is not None:
            self._row.append("".join(self._cell).strip())
            self._cell = None
        elif tag in ("tr", "table"):
            self._row = self._cell = None

    def handle_data(self, data: str) -> None:
        for part in (self._value, self._cell):
            if part is not None:
                part.append(data)


def page_facts_problems(report: Report, raw: bytes) -> list[str]:
    """Where the page's stated facts (tier, each check's outcome) disagree with report.json."""
    from conformance.report.html.page import _slug

    try:
        facts = _Facts()
        facts.feed(raw.decode("utf-8"))
        facts.close()
    except (UnicodeDecodeError, ValueError, AssertionError):
        return ["report.html is not UTF-8 HTML"]
    problems = []
    tier = report.tier or "none"
    if facts.tiers != [tier]:
        problems.append(f"its tier badge says {terminal(facts.tiers[:2], limit=60)}, report.json's tier is {tier!r}")
    want = [(c.id, _slug(c.outcome)) for c in report.checks]
    got = [(r[0], r[1] if len(r) > 1 else "?") for r in facts.rows]
    if got != want:
        differ = next((f"{w[0]} {w[1]} vs {g[0]} {g[1]}" for w, g in zip(want, got) if w != g),
                      f"{len(got)} check rows for {len(want)} checks")
        problems.append(f"its checks are not report.json's (id, outcome; {terminal(differ, limit=100)})")
    return problems


def page_lines(folder: Path, report: Report, derived: bool = True) -> list[tuple[str, bool, str]]:
    """One `page` line for `folder`'s report.html against `report` (report.json, typed). `derived`:
    this verifier renders the report's release (signing/rendering.renders_release): the page is
    rendered from the JSON as signed (report.document), which the run paged."""
    from conformance.report.html import render_report_html
    from conformance.signing.attestation import read_file

    path = Path(folder) / PAGE
    if not path.exists() and not path.is_symlink():
        return [("page", True, "no report.html in the folder (report.json, junit.xml and report.md are what is signed)")]
    try:
        raw = read_file(path, "verify", within=Path(folder))
    except UserError as exc:
        return [("page", False, terminal(str(exc), limit=300))]
    try:
        rendered = render_report_html(dict(report.document)).encode("utf-8")
    except (KeyError, TypeError, ValueError, AttributeError, IndexError):
        rendered = None
    if rendered == raw:
        return [("page", True, "report.html is this verifier's page of report.json, byte for byte")]
    if derived:
        version = terminal(report.suite.version, limit=40)
        return [("page", False, f"report.html is not this verifier's page of report.json, and a run of release {version} "
                                "wrote exactly that page (it is not signed: a page edited after signing, or another "
                                "run's, shows what report.json does not say); keep the page the run wrote, or remove it")]
    problems = page_facts_problems(report, raw)
    if problems:
        return [("page", False, "report.html (its release's code paged it) states what report.json does not: "
                                + "; ".join(problems) + "; keep the page the run wrote, or remove it")]
    return [("page", True, "report.html (its release's code paged it) states report.json's tier and every check's "
                           "outcome")]
