"""verify's `page` line: the folder's report.html is report.json's page (held-out round 25: N25_19,
N25_20).

report.html is not a signed subject (the Statement signs report.json, junit.xml and report.md), yet
it is what a reader opens: a page edited after signing, or the page of another run left beside
this report.json, verified with nothing said. The page is derived, never stated: this verifier
renders report.json (conformance.report.html.render_report_html, deterministic: a run's page is
that rendering byte for byte) and a report.html of this verifier's own release that is not that
rendering is refused. A report of an older release was paged by that release's code: its page is
not judged, and the line says report.json is what is signed. No report.html: nothing shown, nothing
to hold.

A hostile file (a symlink out, a FIFO, over the size cap) is a problem line, never an exception.
"""
from __future__ import annotations

from pathlib import Path
from typing import Any, Mapping

from conformance.catalog.strict_input import as_map
from conformance.errors import UserError
from conformance.sanitize import terminal

PAGE = "report.html"


def page_lines(folder: Path, report: Mapping[str, Any], current: str | None) -> list[tuple[str, bool, str]]:
    """One `page` line for `folder`'s report.html against `report` (report.json, parsed)."""
    from conformance.report.html import render_report_html
    from conformance.signing.attestation import read_file

    path = Path(folder) / PAGE
    if not path.exists() and not path.is_symlink():
        return [("page", True, "no report.html in the folder (report.json, junit.xml and report.md are what is signed)")]
    try:
        raw = read_file(path, "verify", within=Path(folder))
    except UserError as exc:
        return [("page", False, terminal(str(exc), limit=300))]
    version = as_map(report.get("suite")).get("version")
    if current is None or version != current:
        return [("page", True, f"report.html of release {terminal(str(version), limit=40)} was paged by that release's "
                               "code: not judged here; report.json is what is signed")]
    try:
        rendered = render_report_html(dict(report)).encode("utf-8")
    except (KeyError, TypeError, ValueError, AttributeError, IndexError):
        rendered = None
    if rendered != raw:
        return [("page", False, "report.html is not this verifier's page of report.json (it is not signed: a page "
                                "edited after signing, or another run's, shows what report.json does not say); "
                                "keep the page the run wrote, or remove it")]
    return [("page", True, "report.html is this verifier's page of report.json, byte for byte")]
