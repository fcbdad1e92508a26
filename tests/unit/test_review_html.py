"""`review DIR --format html`: the SIG dashboard and one page per submission, written to a folder."""
from __future__ import annotations

import html
import re
from pathlib import Path
from urllib.parse import unquote

import pytest

from conformance.cli.signing import main
from html_samples import write_submissions


@pytest.fixture(scope="module")
def site(tmp_path_factory) -> tuple[Path, Path, str]:
    root = tmp_path_factory.mktemp("review-html")
    subs, releases, keyring = write_submissions(root)
    out = root / "site"
    rc = main(["review", str(subs), "--format", "html", "--out", str(out), "--releases", str(releases),
               "--keyring", str(keyring)])
    assert rc == 1  # d-broken is an error row: review says so in its exit code, and still writes every page
    return subs, out, (out / "index.html").read_text(encoding="utf-8")


def _rows(index: str) -> dict[str, str]:
    return dict(re.findall(r'<tr class="submission[^"]*" id="sub-([^"]+)">(.*?)</tr>', index, re.S))


def test_one_row_per_submission_with_the_review_columns(site) -> None:
    _, _, index = site
    rows = _rows(index)
    assert list(rows) == ["a-honest", "b-inflated", "c-unsigned-x", "d-broken"]
    for header in ("vendor", "product", "verification", "claimed tier", "recomputed tier", "Ray", "date"):
        assert f"<th>{header}</th>" in index
    a = rows["a-honest"]
    assert "ExampleCorp" in a and "NPU X1" in a and "2.60.0" in a and "2026-03-01" in a
    assert "sig-good" in a and "verified (examplecorp)" in a
    assert 'class="submission mismatch" id="sub-b-inflated"' in index     # claims more than its results give
    assert "sig-unknown" in rows["c-unsigned-x"] and "unsigned" in rows["c-unsigned-x"]
    assert "sig-bad" in rows["d-broken"] and "report-link" not in rows["d-broken"]


def test_each_readable_submission_links_a_page_rendered_from_its_report_json(site) -> None:
    subs, out, index = site
    links = re.findall(r'class="report-link" href="([^"]+)"', index)
    assert len(links) == 3
    for href in links:
        page = (out / href).read_text(encoding="utf-8")
        assert 'id="tier-achieved"' in page and "<script" not in page   # ours, not the submitted report.html


def test_outside_strings_are_escaped_and_log_links_lead_to_the_submission(site) -> None:
    subs, out, index = site
    assert "<script" not in index and "&lt;script&gt;" in index and "\x1b" not in index
    page_path = out / "submissions" / "c-unsigned-x" / "report.html"
    href = re.search(r'<a href="([^"]+worker\.err)"', page_path.read_text(encoding="utf-8")).group(1)
    href = unquote(html.unescape(href))
    assert (page_path.parent / href).resolve() == (subs / "c unsigned <x>" / "logs" / "first" / "worker.err").resolve()


def test_rerun_replaces_its_own_pages_but_never_a_users_file(site, tmp_path: Path, capsys) -> None:
    subs, out, _ = site
    assert main(["review", str(subs), "--format", "html", "--out", str(out)]) == 1  # d-broken is an error row
    mine = tmp_path / "mine"
    mine.mkdir()
    (mine / "index.html").write_text("my notes")
    assert main(["review", str(subs), "--format", "html", "--out", str(mine)]) == 2
    assert (mine / "index.html").read_text() == "my notes"
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "--out" in err and "not written by ray-conformance" in err
