"""Held-out round 34, R1 and R2 (issue 43 item 2): report.md and report.html are derived from
report.json, or cross-checked against it, for every release verify accepts, not only its own. Built
on the repo's real reports: reports/example (a whole run of 0.1.0+data.28 or later) and
tests/support/real_run_data6 (a run of 0.1.0+data.6, rendered by code that wrote other bytes)."""
from __future__ import annotations

import copy
import hashlib
import json
from functools import lru_cache
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
EXAMPLE = ROOT / "reports" / "example"
DATA6 = ROOT / "tests" / "support" / "real_run_data6"

# this verifier's renderings of the data.6 run's report.json: a renderer change that moves them
# changes what runs of the published releases wrote; move rendering.RENDERED_SINCE with it
DATA6_MD_SHA256 = "9208f70ebbd71d3eb3464dba6a83667f9c0756bd86b8a0d909d9feba358b6e2e"
DATA6_HTML_SHA256 = "1210ca8a3d3194aa59d884092c79756a63bc16e590f1be5bbe03ab9c31093155"


@lru_cache(maxsize=2)
def _load(folder: Path) -> dict[str, Any]:
    return json.loads((folder / "report.json").read_text())


def _report(folder: Path = EXAMPLE) -> dict[str, Any]:
    return copy.deepcopy(_load(folder))


def _known() -> Any:
    from conformance.catalog.releases import load_releases

    return load_releases()


def _claim(report: dict[str, Any], version: str) -> None:
    """R1/R2's relabel: suite.version and the digests report.json records set to `version`'s."""
    entry = _known()[version]
    report["suite"]["version"] = version
    for key in ("checklist_sha256", "tiers_sha256", "report_schema_sha256", "waivers_sha256"):
        report["suite"][key] = getattr(entry, key)


def _companions(report: dict[str, Any], markdown: str, junit: bytes | None = None) -> tuple[bool, str]:
    from conformance.report.view import Report
    from conformance.signing.companions import companion_lines
    from conformance.signing.rendering import renders_release

    junit = (EXAMPLE / "junit.xml").read_bytes() if junit is None else junit
    derived = renders_release(report["suite"]["version"], _known())
    (name, ok, detail), = companion_lines(Report.from_json(report), junit, markdown.encode("utf-8"), derived)
    return ok, detail


def _page(tmp_path: Path, report: dict[str, Any], page: bytes) -> tuple[bool, str]:
    from conformance.report.view import Report
    from conformance.signing.page import page_lines
    from conformance.signing.rendering import renders_release

    (tmp_path / "report.html").write_bytes(page)
    (name, ok, detail), = page_lines(tmp_path, Report.from_json(report), renders_release(report["suite"]["version"], _known()))
    return ok, detail


def _hand_edit(markdown: str) -> str:
    """R1's edit: the /dev/shm leftover and FR-016's failing rows out, a vendor note in."""
    lines = [ln for ln in markdown.splitlines() if "/dev/shm" not in ln
             and not (ln.startswith("| FR-016 |") and "fail" in ln)]
    at = next(i for i, ln in enumerate(lines) if ln.startswith("Capabilities:"))
    lines.insert(at + 1, "\nVendor note: every recovery scenario passed; nothing was left on the host.\n")
    return "\n".join(lines) + "\n"


def test_every_release_from_rendered_since_is_derived() -> None:
    from conformance.catalog.releases import current_version
    from conformance.signing.rendering import RENDERED_SINCE, renders_release

    known = _known()
    assert RENDERED_SINCE in known
    assert renders_release(current_version(), known) and renders_release(_load(EXAMPLE)["suite"]["version"], known)
    assert renders_release("0.1.0+data.19", known) and renders_release("0.1.0+data.27", known)
    assert not renders_release("0.1.0+data.18", known) and not renders_release("0.1.0+data.6", known)
    assert renders_release("9.9.9+never", known) and renders_release(None, known)


def test_the_real_reports_render_as_their_runs_wrote_them() -> None:
    """The evidence RENDERED_SINCE rests on, kept: the example's report.md and report.html are this
    verifier's renderings byte for byte; the data.6 run's renderings are the recorded ones."""
    from conformance.report.build import render_markdown
    from conformance.report.html import render_report_html

    assert render_markdown(_report()) == (EXAMPLE / "report.md").read_text(encoding="utf-8")
    assert render_report_html(_report()).encode("utf-8") == (EXAMPLE / "report.html").read_bytes()
    assert hashlib.sha256(render_markdown(_report(DATA6)).encode()).hexdigest() == DATA6_MD_SHA256
    assert hashlib.sha256(render_report_html(_report(DATA6)).encode()).hexdigest() == DATA6_HTML_SHA256


def test_r1_an_older_releases_report_md_edited_by_hand_is_refused() -> None:
    """R1: the run relabelled 0.1.0+data.27 (the renderer is the same since data.19), report.md's
    leftover and FR-016's failing rows removed, a vendor note added: verified before (an older
    release's report.md was only cross-checked by its check rows)."""
    from conformance.report.build import render_markdown

    report = _report()
    _claim(report, "0.1.0+data.27")
    rendered = render_markdown(copy.deepcopy(report))
    assert _companions(report, rendered)[0]
    ok, detail = _companions(report, _hand_edit(rendered))
    assert not ok and "not this verifier's rendering" in detail and "0.1.0+data.27" in detail
    ok, detail = _companions(report, rendered + "\nVendor note: all good.\n")   # added text only
    assert not ok and "no text may be added" in detail


def test_r2_an_older_releases_page_of_another_run_is_refused(tmp_path: Path) -> None:
    """R2: DP-006 fails honestly (tier none), the run claims data.27, report.html is the stable
    run's page: 'not judged' before."""
    report = _report()
    _claim(report, "0.1.0+data.27")
    dp006 = next(c for c in report["checks"] if c["id"] == "DP-006")
    dp006.update(outcome="fail", reason="node b advertises 3 of 4 devices")
    report["tier"] = None
    ok, detail = _page(tmp_path, report, (EXAMPLE / "report.html").read_bytes())
    assert not ok and "not this verifier's page" in detail and "0.1.0+data.27" in detail
    from conformance.report.html import render_report_html

    assert _page(tmp_path, report, render_report_html(copy.deepcopy(report)).encode())[0]


def test_the_data6_runs_own_report_md_cross_checks_and_every_edit_of_a_row_is_refused() -> None:
    """A release before RENDERED_SINCE: the real data.6 report.md (its renderer's bytes) states
    report.json's rows; a row's outcome, its reason, a row dropped or added, the tier or the
    outcome counts changed are each refused."""
    report = _report(DATA6)
    junit = (DATA6 / "junit.xml").read_bytes()
    real = (DATA6 / "report.md").read_text(encoding="utf-8")
    ok, detail = _companions(report, real, junit)
    assert ok and "its release's renderer wrote other bytes" in detail, detail
    lines = real.splitlines()
    row = next(i for i, ln in enumerate(lines) if ln.startswith("| TR-001 "))
    waived = next(i for i, ln in enumerate(lines) if "| WAIVED " in ln)
    edits = {
        "outcome": lines[:row] + [lines[row].replace("| PASS ", "| FAIL ")] + lines[row + 1:],
        "reason dropped": lines[:waived] + ["|".join(lines[waived].split("|")[:-2] + [" ", ""])] + lines[waived + 1:],
        "row dropped": lines[:row] + lines[row + 1:],
        "row added": lines[:row + 1] + [lines[row]] + lines[row + 1:],
        "tier": [ln.replace("**Tier achieved: stable**", "**Tier achieved: beta**") for ln in lines],
        "counts": [ln.replace("- Outcomes: pass 76", "- Outcomes: pass 77") for ln in lines],
    }
    for what, edited in edits.items():
        ok, detail = _companions(report, "\n".join(edited) + "\n", junit)
        assert not ok and "report.md" in detail, what


def test_an_older_releases_page_states_report_jsons_tier_and_outcomes(tmp_path: Path) -> None:
    """A release before RENDERED_SINCE: its page is read back (the tier badge, each All-checks
    row's outcome pill); a page that says stable or pass where report.json does not is refused."""
    from conformance.report.html import render_report_html

    report = _report(DATA6)
    page = render_report_html(copy.deepcopy(report))
    ok, detail = _page(tmp_path, report, page.replace("</body>", "<!-- -->\n</body>").encode())
    assert ok and "its release's code paged it" in detail, detail
    failing = copy.deepcopy(report)
    tr001 = next(c for c in failing["checks"] if c["id"] == "TR-001")
    tr001.update(outcome="fail", reason="bfloat16 corrupted")
    failing["tier"] = None
    ok, detail = _page(tmp_path, failing, page.encode())   # the stable page beside the failing run
    assert not ok and "tier badge" in detail and "TR-001" in detail
    assert not _page(tmp_path, report, b"<html><body><h1>stable: 100/100 pass</h1></body></html>")[0]
    assert not _page(tmp_path, report, b"\xff\xfe not utf-8")[0]
