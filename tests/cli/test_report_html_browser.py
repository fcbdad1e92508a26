"""report.html and the review dashboard in a real browser: Debian's headless Chromium (`make browser`).

Each page is loaded from a file with the DevTools protocol watching: no console error, no
uncaught exception, no request other than the page itself and inline `data:` images, the key
elements in the DOM, and a full-page screenshot that is a real picture. A deliberately broken
page shows the harness hears errors and fetches, so a silent pass means something.
"""
from __future__ import annotations

import io
import os
from pathlib import Path
from urllib.parse import unquote, urlparse

import pytest

from chromium import Chromium, PageResult, chromium_binary
from conformance.report.html import render_report_html
from html_samples import example_report, failing_report, write_submissions

ROOT = Path(__file__).resolve().parents[2]
SECTIONS = ("tiers", "areas", "topology", "bandwidth", "pairwise", "recovery", "failures", "checks", "run")
DOM = {
    "title": "document.title",
    "tier": "document.querySelector('#tier-achieved .value').textContent.trim()",
    "sections": f"{list(SECTIONS)!r}.filter(id => !document.getElementById(id))",
    "charts": "Array.from(document.querySelectorAll('svg.chart')).map(s => Math.round(s.getBoundingClientRect().width))",
    "tiles": "document.querySelectorAll('#areas .tiles a.tile').length",
    "rows": "document.querySelectorAll('#checks tr[id^=check-]').length",
    "scripts": "document.scripts.length",
    "images": "document.images.length",
    "hrefs": "Array.from(document.querySelectorAll('[href]')).map(a => a.getAttribute('href'))",
    "product": "document.getElementById('product').textContent",
    "failures": "Array.from(document.querySelectorAll('#failures article.problem')).map(a => a.id)",
    "missing": "Array.from(document.querySelectorAll('.missing')).map(p => p.closest('section').id)",
    "excerpt": "(document.querySelector('#fail-DP-008 pre.log') || {}).textContent || ''",
    "next": "!!document.getElementById('next-steps')",
}


@pytest.fixture(scope="module")
def browser():
    binary = chromium_binary()
    if binary is None:
        message = "chromium is not installed: run `make browser` (apt-get install chromium)"
        if os.environ.get("CI"):
            pytest.fail(message)
        pytest.skip(message)
    with Chromium(binary) as b:
        yield b


def _load(browser: Chromium, tmp_path: Path, name: str, html: str) -> PageResult:
    page = tmp_path / name
    page.write_text(html, encoding="utf-8")
    result = browser.load(page, DOM)
    (tmp_path / f"{page.stem}.png").write_bytes(result.screenshot)
    own = page.resolve().as_uri()
    fetched = [u for u in result.requests if u != own and not u.startswith("data:")]
    assert fetched == [], f"the page fetched {fetched}"
    assert result.errors() == [], result.errors()
    return result


def _picture(png: bytes) -> tuple[tuple[int, int], int]:
    from PIL import Image

    image = Image.open(io.BytesIO(png)).convert("RGB")
    small = image.resize((image.width // 8, image.height // 8))
    return image.size, len(small.getcolors(1 << 24) or [])


def test_example_report_in_chromium(browser: Chromium, tmp_path: Path) -> None:
    report = example_report()
    r = _load(browser, tmp_path, "example.html", render_report_html(report))
    v = r.values
    assert v["title"].startswith("Conformance report: Ray Accelerator SIG")
    assert v["tier"] == "stable" and v["sections"] == []
    assert len(v["charts"]) == 4 and all(w > 300 for w in v["charts"]), v["charts"]
    assert v["tiles"] == v["rows"] == len(report["checks"])
    assert v["scripts"] == 0 and v["images"] == 0
    assert v["failures"] == ["waived-FR-016"] and v["missing"] == ["collective", "workload", "findings"]   # no backend; older than WL-001 and WL-010
    (width, height), colours = _picture(r.screenshot)
    assert width == 1280 and height > 3000 and colours > 50, (width, height, colours)


def test_failing_report_in_chromium(browser: Chromium, tmp_path: Path) -> None:
    r = _load(browser, tmp_path, "failing.html", render_report_html(failing_report()))
    v = r.values
    assert v["tier"] == "none" and v["sections"] == []
    assert v["scripts"] == 0 and v["images"] == 0           # the hostile <script>/<img> stayed text
    assert "<script>alert('x')</script>" in v["product"]
    assert not any(h.lower().startswith(("javascript:", "/")) for h in v["hrefs"]), v["hrefs"]
    assert {"fail-DP-008", "fail-TR-004"} <= set(v["failures"])
    assert "No module named 'nimbus_sdk'" in v["excerpt"]
    assert set(v["missing"]) == {"bandwidth", "pairwise", "collective", "workload", "findings"} and v["next"]
    assert len(v["charts"]) == 2                              # topology (from the census) and recovery
    (width, height), colours = _picture(r.screenshot)
    assert width == 1280 and height > 1500 and colours > 30


def test_review_dashboard_in_chromium(browser: Chromium, tmp_path: Path) -> None:
    from conformance.cli.signing import main

    subs, releases, keyring = write_submissions(tmp_path)
    out = tmp_path / "site"
    assert main(["review", str(subs), "--format", "html", "--out", str(out), "--releases", str(releases),
                 "--keyring", str(keyring)]) == 1  # d-broken is an error row
    r = browser.load(out / "index.html", {
        "rows": "Array.from(document.querySelectorAll('tr.submission')).map(t => t.id)",
        "links": "Array.from(document.querySelectorAll('a.report-link')).map(a => a.href)",
        "mismatch": "Array.from(document.querySelectorAll('tr.mismatch')).map(t => t.id)",
        "scripts": "document.scripts.length"})
    assert r.errors() == [] and all(u == (out / "index.html").as_uri() for u in r.requests), (r.errors(), r.requests)
    assert r.values["rows"] == ["sub-a-honest", "sub-b-inflated", "sub-c-unsigned-x", "sub-d-broken"]
    assert "sub-b-inflated" in r.values["mismatch"] and r.values["scripts"] == 0
    assert len(r.values["links"]) == 3
    page = browser.load(Path(unquote(urlparse(r.values["links"][2]).path)), DOM)
    assert page.errors() == [] and page.values["scripts"] == 0 and page.values["sections"] == []
    assert "Evil <script>" in page.values["product"] or "Evil" in page.values["title"]


def test_the_harness_hears_errors_and_fetches(browser: Chromium, tmp_path: Path) -> None:
    """Teeth: a page with a console error, an exception and a remote image is caught on all three."""
    page = tmp_path / "broken.html"
    page.write_text('<!doctype html><html><body><img src="http://127.0.0.1:9/x.png">'
                    '<script>console.error("boom"); notAFunction();</script></body></html>')
    r = browser.load(page, {"ok": "1"}, screenshot=False)
    texts = " ".join(m["text"] for m in r.errors())
    assert "boom" in texts and "notAFunction" in texts
    assert "http://127.0.0.1:9/x.png" in r.requests


def test_readme_shows_the_committed_screenshot() -> None:
    shot = ROOT / "docs" / "report-example.png"
    assert shot.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert "docs/report-example.png" in (ROOT / "README.md").read_text()


def test_dashboard_shows_duplicates_look_alikes_invisible_names_and_capped_pages(browser: Chromium,
                                                                                tmp_path: Path) -> None:
    """Issue 30 class 5 in the browser: two submissions of one product are marked, a Cyrillic
    look-alike product is marked, a vendor with U+034F shows the escape, and a report with 300
    sweeps draws a bounded page that says what it left out."""
    import copy

    from conformance.cli.signing import main
    from signing_support import build_report, write_releases, write_report_dir

    releases = write_releases(tmp_path / "releases.yaml")
    subs = tmp_path / "subs"
    for name in ("a-first", "b-again"):
        write_report_dir(subs / name, build_report())
    lookalike = build_report()
    lookalike["manifest"]["product"] = "NPU \u04251"
    write_report_dir(subs / "c-lookalike", lookalike)
    hidden = build_report()
    hidden["manifest"]["vendor"], hidden["manifest"]["product"] = "ExampleCorp\u034f", "NPU X2"
    write_report_dir(subs / "d-hidden", hidden)
    many = example_report()
    data = many["sections"]["Transport"]["data"]
    sweep = next(iter(data["sweep"].values()))
    data["sweep"] = {f"dev{i}": copy.deepcopy(sweep) for i in range(300)}
    write_report_dir(subs / "e-many", many)
    out = tmp_path / "site"
    main(["review", str(subs), "--format", "html", "--out", str(out), "--releases", str(releases)])
    r = browser.load(out / "index.html", {
        "marks": "Object.fromEntries(Array.from(document.querySelectorAll('tr.submission')).map(t => [t.id, "
                 "Array.from(t.querySelectorAll('.mark')).map(m => m.textContent.trim())]))",
        "vendors": "Object.fromEntries(Array.from(document.querySelectorAll('tr.submission')).map(t => [t.id, "
                   "t.querySelector('td.who').textContent]))",
        "outlined": "document.querySelectorAll('td.who.duplicate, td.who.look-alike').length",
        "pills": "[document.getElementById('duplicates').textContent, document.getElementById('lookalikes').textContent]",
        "notes": "document.getElementById('sub-e-many').nextElementSibling.textContent"})
    assert r.errors() == [] and all(u == (out / "index.html").as_uri() for u in r.requests), (r.errors(), r.requests)
    v = r.values
    assert v["marks"]["sub-a-first"] == ["DUPLICATE of b-again", "LOOK-ALIKE of c-lookalike"]
    assert v["marks"]["sub-c-lookalike"] == ["LOOK-ALIKE of a-first, b-again"] and v["marks"]["sub-d-hidden"] == []
    assert v["vendors"]["sub-d-hidden"] == "ExampleCorp\\u034f" and v["outlined"] == 6
    assert v["pills"][0].startswith("2 duplicate") and v["pills"][1].startswith("3 look-alike")
    assert "page capped: chart" in v["notes"]
    page = browser.load(out / "submissions" / "e-many" / "report.html", {
        **DOM, "capped": "(document.getElementById('capped') || {}).textContent || ''"})
    assert page.errors() == [] and page.values["scripts"] == 0
    assert len(page.values["charts"]) <= 16 + 1 and "not drawn" in page.values["capped"]   # + the topology picture


_VISIBLE = "Array.from(document.querySelectorAll('tr.product')).filter(t => getComputedStyle(t).display !== 'none').length"


def _pick(facet: str, value: str) -> str:
    """JS: check the radio of `facet` labelled `value` (as a user clicks it), then count the products shown."""
    return ("(() => { const l = Array.from(document.querySelectorAll('#filter-" + facet + " label'))"
            ".find(l => l.textContent.trim() === " + repr(value) + "); l.querySelector('input').click(); return "
            + _VISIBLE + "; })()")


def test_dashboard_register_history_demotion_and_filters(browser: Chromium, tmp_path: Path) -> None:
    """Issue 46 in the browser: one row per product, its current tier (the later beta report
    demotes the earlier stable one, and says so), validity, the history of each product, and the
    vendor / tier / capability / Ray filters working with no script on the page."""
    from conformance.cli.signing import main
    from signing_support import stable_only_check, write_product_history

    subs, releases, keyring, _ = write_product_history(tmp_path)
    out = tmp_path / "site"
    assert main(["review", str(subs), "--format", "html", "--out", str(out), "--releases", str(releases),
                 "--keyring", str(keyring), "--at", "2027-03-15"]) == 0
    r = browser.load(out / "index.html", {
        "products": "Array.from(document.querySelectorAll('tr.product')).map(t => [t.querySelectorAll('td.who')[1]"
                    ".textContent, t.querySelector('.current-tier').textContent, t.querySelector('td.validity')"
                    ".textContent.trim(), t.querySelectorAll('table.history tr.report').length])",
        "demoted": "(document.querySelector('tr.product .demoted') || {}).textContent || ''",
        "scripts": "document.scripts.length",
        "all": _VISIBLE,
        "beta": _pick("tier", "beta"),
        "stable": _pick("tier", "stable"),
        "tier_all": _pick("tier", "all"),
        "vendor": _pick("vendor", "ExampleCorp"),
        "ray_other": _pick("ray", "2.60.0"),
        "capability": _pick("capability", "transport")})
    assert r.errors() == [] and all(u == (out / "index.html").as_uri() for u in r.requests), (r.errors(), r.requests)
    v = r.values
    assert v["scripts"] == 0
    assert v["products"] == [["NPU X1", "beta", "expiring (until 2027-03-31)", 2],
                             ["NPU X2", "stable", "expired (until 2027-02-28)", 1]], v["products"]
    assert v["demoted"].startswith("demoted from stable on 2026-04-01") and f"{stable_only_check()} pass→fail" in v["demoted"]
    assert (v["all"], v["beta"], v["stable"], v["tier_all"]) == (2, 1, 1, 2)
    assert v["vendor"] == 2 and v["ray_other"] == 2 and v["capability"] == 2, v
