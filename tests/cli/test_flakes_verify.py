"""Issue 48 item 3: verify recomputes `flaky` from a report's recorded attempts. A signed report
whose check failed and then passed on a re-run verifies as `flaky` and certifies nothing that
check is required for; the same report re-signed claiming `pass` (or claiming `flaky` with no
failed attempt) is refused on the summary line. No Ray.
"""
from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

import pytest

from conformance.catalog.capabilities import compute_capabilities, load_profiles
from conformance.signing import keys
from conformance.signing.keyring import key_from_file
from conformance.signing.sign import sign_report_dir
from conformance.signing.verify import Verification, verify_path
from signing_support import build_report, retier, suite, write_releases, write_report_dir

CHECK = "DP-019"   # a device MUST: the experimental tier and the device profile require it


@pytest.fixture(scope="module")
def world(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    d = tmp_path_factory.mktemp("flakes")
    pair = keys.write_keypair(d / "k")
    write_releases(d / "releases.yaml")
    return {"key": pair.private_path, "pub": pair.public_path, "releases": d / "releases.yaml"}


def flaky_report(claimed: str = "flaky", first: str = "fail") -> dict[str, Any]:
    report = build_report({CHECK: claimed})
    entry = next(c for c in report["checks"] if c["id"] == CHECK)
    test = entry["tests"][0]
    entry["attempts"] = [{"test": test, "attempt": 1, "outcome": first, "reason": "was accepted", "duration_s": 0.1},
                         {"test": test, "attempt": 2, "outcome": "pass", "reason": None, "duration_s": 0.15}]
    entry["duration_s"] = 0.25
    retier(report)
    report["summary"]["flaky"] = sum(c["outcome"] == "flaky" for c in report["checks"])
    return report


def signed_and_verified(world: dict[str, Path], folder: Path, report: dict[str, Any]) -> Verification:
    write_report_dir(folder, report)
    sign_report_dir(folder, world["key"], releases_file=world["releases"])
    return verify_path(folder, [key_from_file(world["pub"])], releases_file=world["releases"])


def failed(v: Verification) -> dict[str, str]:
    return {line.name: line.detail for line in v.lines if not line.ok}


def test_a_flaky_check_verifies_as_flaky_and_counts_for_nothing(world: dict[str, Path], tmp_path: Path) -> None:
    report = flaky_report()
    v = signed_and_verified(world, tmp_path / "r", report)
    assert v.ok, failed(v)
    assert report["tier"] is None   # the lowest tier requires the check: no tier rests on a flake
    profiles = compute_capabilities(report["checks"], suite().checklist, load_profiles(), report["manifest"])
    device = next(p for p in profiles if p["name"] == "device")
    assert device["state"] == "not certified" and {"id": CHECK, "outcome": "flaky"} in device["blocking"]
    md = (tmp_path / "r" / "report.md").read_text()
    assert "## Flaky checks for the SIG" in md and "attempt 1 of" in md and "attempt 2 of" in md
    assert 'failure message="flaky:' in (tmp_path / "r" / "junit.xml").read_text()


@pytest.mark.parametrize("claimed,first,said", [
    ("pass", "fail", "claims pass but its recorded attempts show a failure"),
    ("flaky", "pass", "claims flaky but no recorded test failed and then passed"),
])
def test_an_outcome_its_attempts_contradict_is_refused(world: dict[str, Path], tmp_path: Path,
                                                       claimed: str, first: str, said: str) -> None:
    report = copy.deepcopy(flaky_report(claimed, first))
    v = signed_and_verified(world, tmp_path / "r", report)
    assert not v.ok and said in failed(v).get("summary", ""), failed(v)
