"""report.html as a pure function of report.json: content, self-containment, sanitising, tolerance.

These render in-process (no browser, no Ray); tests/cli/test_report_html_browser.py loads the same
pages in headless Chromium.
"""
from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from conformance.report.build import write_html
from conformance.report.html import model, render_report_html
from html_samples import HOSTILE, example_report, failing_report

_ATTR = re.compile(r'\b(?:src|href|xlink:href|action|srcset|poster)\s*=\s*"([^"]*)"')


def _links(page: str) -> list[str]:
    return _ATTR.findall(page)


@pytest.fixture(scope="module")
def example_page() -> str:
    return render_report_html(example_report())


@pytest.fixture(scope="module")
def failing_page() -> str:
    return render_report_html(failing_report())


def test_example_page_has_every_section_and_four_pictures(example_page: str) -> None:
    page = example_page
    for section in ("tiers", "areas", "topology", "bandwidth", "pairwise", "recovery", "failures", "checks", "run"):
        assert f'id="{section}"' in page, section
    assert page.count('<svg role="img"') == 4
    for label in ("topology:", "bandwidth curve:", "pairwise matrix:", "recovery timeline:"):
        assert f'aria-label="{label}' in page, label
    assert 'id="tier-achieved"' in page and ">stable<" in page
    assert page.count('class="tile ') >= 64           # one tile per check (and the legend)
    assert "simlink" in page and "200 GB/s" in page   # links by kind and bandwidth
    assert "interconnect: simlink-a" in page          # domains
    assert "No check failed or errored." in page
    assert "FR-016" in page and "61014" in page        # the waived check, with its upstream issue


def test_page_is_self_contained(example_page: str) -> None:
    """Nothing is fetched: no scripts, no stylesheets, no remote images; a CSP forbids them anyway."""
    page = example_page
    assert "<script" not in page.lower() and "<link" not in page.lower() and "@import" not in page
    assert "Content-Security-Policy" in page and "default-src 'none'" in page
    for target in _links(page):
        # in-page anchors, inline images, and plain links (navigation on click, never a load)
        assert target.startswith(("#", "data:")) or re.match(r"https://github\.com/", target), target
    assert "src=\"http" not in page


def test_same_report_gives_the_same_page(example_page: str) -> None:
    assert render_report_html(example_report()) == example_page


def test_failing_report_shows_failures_next_steps_and_missing_sections(failing_page: str) -> None:
    page = failing_page
    assert ">none<" in page and 'id="interrupted"' in page
    assert 'id="fail-DP-008"' in page and 'id="fail-TR-004"' in page
    assert "No module named &#39;nimbus_sdk&#39;" in page           # the log excerpt, escaped
    assert 'href="logs/DP-008/worker-01.err"' in page               # relative log file: a link
    assert "/home/vendor/secret.log" in page and 'href="/home' not in page
    assert "No topology data" not in page                            # census fallback draws devices
    assert "device census" in page
    assert "The manifest declares no transport, so this report has no bandwidth sweep." not in page
    assert "The transport checks did not run or recorded nothing, so this report has no bandwidth sweep." in page
    assert "so this report has no pairwise matrix" in page
    assert 'id="next-steps"' in page and "To reach experimental" in page
    assert ">docs/checks.md#dp-008<" in page and "href=\"docs/" not in page   # a project path: text
    assert "This hardware shape can reach at most: beta" in page
    assert "171.2 s / 150 s" in page                                 # the scenario over its bound
    assert "6/9 SHOULD checks passed" in page and "needs experimental first" in page


def test_outside_strings_are_inert(failing_page: str) -> None:
    page = failing_page
    assert "<script" not in page and "<img" not in page and "<b>" not in page
    assert "&lt;script&gt;" in page and "&lt;b&gt;Compute&lt;/b&gt;" in page
    assert "\x1b" not in page and "\u202e" not in page and "\\u202e" in page
    assert "javascript:" not in " ".join(_links(page))
    assert HOSTILE not in page


def test_dollar_signs_and_markup_in_chart_labels() -> None:
    r = example_report()
    node = r["sections"]["Topology"]["data"]["nodes"][0]["plugin"]["description"]
    node["links"][0]["kind"] = "$x^2$ link"
    node["devices"][0]["id"] = "$0"
    node["links"][0]["a"] = "$0"
    node["links"][1]["kind"] = "</svg><script>alert(1)</script>"
    r["sections"]["Recovery"]["data"]["scenarios"][0]["scenario"] = "a_$b$_c <i>"
    r["sections"]["Transport"]["data"]["pairs"]["cpu"]["labels"][0] = 'n0:"><script>'
    page = render_report_html(r)
    assert "could not be drawn" not in page
    assert "$x^2$ link" in page and "a_$b$_c &lt;i&gt;" in page
    assert "<script" not in page and "&lt;/svg&gt;&lt;script&gt;" in page   # chart text is escaped too


@pytest.mark.parametrize("report", [
    {},
    {"checks": [None, 3, {"id": "X-1"}], "tiers": [None, {"name": 5}], "sections": "nope", "summary": []},
    {"sections": {"Topology": {"data": {"nodes": [{"plugin": {"description": {"links": [{"a": 1}]}}}]}},
                  "Transport": {"data": {"sweep": {"cpu": {"rows": [{"bytes": 1024}]}},
                                         "pairs": {"cpu": {"labels": ["a", "b"], "gbps": [[None, 1]]}}}},
                  "Recovery": {"data": {"scenarios": [{"check": "FR-1"}]}}}},
])
def test_malformed_reports_still_render(report: dict) -> None:
    page = render_report_html(report)
    assert page.startswith("<!doctype html>") and "</html>" in page
    assert 'id="tier-achieved"' in page


def test_safe_href() -> None:
    assert model.safe_href("https://github.com/ray-project/ray/issues/1") == "https://github.com/ray-project/ray/issues/1"
    assert model.safe_href("docs/tiers.md#shape") == "docs/tiers.md#shape"
    for bad in ("javascript:alert(1)", "JaVaScRiPt:x", "data:text/html,x", "file:///etc/passwd", "/etc/passwd",
                "../../secret", "a b", "", None, 3, "vbscript:x"):
        assert model.safe_href(bad) is None, bad


def test_write_html_writes_beside_report_json(tmp_path: Path, example_page: str) -> None:
    path = write_html(example_report(), tmp_path)
    assert path == tmp_path / "report.html"
    assert path.read_text(encoding="utf-8") == example_page
    assert [p.name for p in tmp_path.iterdir()] == ["report.html"]   # no temporary file left


def test_committed_example_page_is_current() -> None:
    """reports/example/report.html is what the renderer makes of the committed report.json."""
    folder = Path(__file__).resolve().parents[2] / "reports" / "example"
    committed = (folder / "report.html").read_text(encoding="utf-8")
    assert committed == render_report_html(json.loads((folder / "report.json").read_text())), \
        "regenerate with: make example (or write_html on reports/example/report.json)"


def test_capabilities_are_drawn_with_their_state_and_blockers(example_page: str) -> None:
    """Each profile the report records: certified ones with their check count, a declared one that
    failed names its blocking checks (linked), an undeclared one says so; none recorded: a notice."""
    assert 'id="capability-device"' in example_page and "cap-certified" in example_page
    r = failing_report()
    r["capabilities"] = [
        {"name": "device", "state": "not certified", "declared": True, "required_checks": ["DP-008"],
         "blocking": [{"id": "DP-008", "outcome": "fail"}]},
        {"name": "collective " + HOSTILE, "state": "not declared", "declared": False, "required_checks": [], "blocking": []}]
    page = render_report_html(r)
    device = page[page.index('id="capability-device"'):].split("</li>")[0]
    assert "not certified" in device and 'href="#check-DP-008"' in device
    assert "not declared" in page and "<script>alert" not in page
    del r["capabilities"]
    assert "No capabilities recorded" in render_report_html(r)
