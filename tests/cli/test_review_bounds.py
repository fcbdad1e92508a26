"""Issue 43, item 4: every submission's review is bounded in size and time (tiers/review.yaml), one
row saying "too large" or "took too long" when it is not, and every chart kind capped per page and
marked in the dashboard. Through the real CLI (`ray-conformance review`) and the files it writes."""
from __future__ import annotations

import json
import sys
import time
from pathlib import Path
from typing import Any

import pytest
import yaml

sys.path.insert(0, str(Path(__file__).parent))

from conformance.catalog import datafiles
from conformance.cli.signing import main
from conformance.report.html import limits
from conformance.signing import bounds, keys
from conformance.signing.attestation import MAX_REPORT_FILE_BYTES
from conformance.signing.sign import sign_report_dir
from html_samples import workload_report
from signing_support import build_report, write_releases, write_report_dir


@pytest.fixture(scope="module")
def subs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    d = tmp_path_factory.mktemp("bounds")
    releases = write_releases(d / "releases.yaml")
    pair = keys.write_keypair(d / "k")
    root = d / "subs"
    good = write_report_dir(root / "a-good", build_report())
    sign_report_dir(good, pair.private_path, releases_file=releases)
    big = write_report_dir(root / "b-big", build_report())
    with open(big / "junit.xml", "ab") as fh:   # sparse: a file of 17 MiB that costs nothing to make
        fh.truncate(bounds.load_bounds().max_bytes + 1024)
    write_report_dir(root / "c-charts", workload_report(65))
    return {"root": root, "releases": releases, "pub": pair.public_path}


def test_the_bounds_are_data() -> None:
    doc = yaml.safe_load((datafiles.data_root() / "tiers" / "review.yaml").read_text())
    datafiles.validate(doc, "review", what="review bounds")
    got = bounds.load_bounds()
    assert (got.max_bytes, got.timeout_s) == (doc["submission"]["max_bytes"], doc["submission"]["timeout_s"])
    assert got.max_bytes < MAX_REPORT_FILE_BYTES   # a submission over it is never parsed


def test_a_submission_over_the_size_cap_is_one_row_that_says_so(subs: dict[str, Any],
                                                                capsys: pytest.CaptureFixture[str]) -> None:
    rc = main(["review", str(subs["root"]), "--releases", str(subs["releases"]), "--format", "json"])
    rows = {r["submission"]: r for r in json.loads(capsys.readouterr().out)}
    assert rc == 1   # an error row
    assert rows["b-big"]["over_bound"].startswith("too large: ") and "junit.xml" in rows["b-big"]["over_bound"]
    assert rows["b-big"]["signature"] == f"error: {rows['b-big']['over_bound']}"
    assert rows["a-good"]["signature"] == "unverified" and not rows["a-good"]["over_bound"]
    main(["review", str(subs["root"]), "--releases", str(subs["releases"])])
    text = capsys.readouterr().out
    assert sum("too large" in line for line in text.splitlines()) == 1


def test_the_dashboard_bounds_and_marks_every_submission(subs: dict[str, Any], tmp_path: Path) -> None:
    """The big submission gets no page, the one with 130 workload charts a page capped at the
    page's cap and marked as capped on its row; the whole review stays inside its bound."""
    out = tmp_path / "site"
    started = time.monotonic()
    assert main(["review", str(subs["root"]), "--format", "html", "--out", str(out), "--releases",
                 str(subs["releases"])]) == 1
    elapsed = time.monotonic() - started
    index = (out / "index.html").read_text(encoding="utf-8")
    page = (out / "submissions" / "c-charts" / "report.html").read_text(encoding="utf-8")
    assert page.count('class="chart"') <= limits.DEFAULT.charts
    assert "per-round" in page and "not drawn: the page already has 16 charts" in page
    assert 'id="capped">1 report page(s) capped' in index and "PAGE CAPPED: charts: " in index
    assert not (out / "submissions" / "b-big").exists() and "too large" in index
    assert (out / "submissions" / "a-good" / "report.html").is_file()
    assert elapsed < 3 * bounds.load_bounds().timeout_s
