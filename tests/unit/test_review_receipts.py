"""The SIG's receipts in review (signing/receipts.py, redteam RV1): a product's history follows the
SIG's signed decisions, not the vendor's `finished_at`; a report dated before one the SIG received
earlier is marked; a report received inside its release's window is re-verified on that day.
Real reports, signed as tests/support/signing_support.py builds them, reviewed through the CLI."""
from __future__ import annotations

import copy
import json
import shutil
from pathlib import Path
from typing import Any

import pytest
import yaml

from conformance.cli.signing import main
from conformance.signing import clock, keys, receipts
from conformance.signing.keyring import key_from_file
from conformance.signing.sign import sign_report_dir
from signing_support import build_report, stable_only_check, write_releases, write_report_dir


@pytest.fixture
def world(tmp_path: Path) -> dict[str, Path]:
    root = tmp_path
    vendor, sig = keys.write_keypair(root / "vendor"), keys.write_keypair(root / "sig")
    releases = write_releases(root / "releases.yaml")
    keyring = root / "keyring.yaml"
    keyring.write_text(f"keys:\n  - name: examplecorp\n    public_key: {vendor.public_path}\n    vendors: [ExampleCorp]\n")
    return {"root": root, "subs": root / "subs", "releases": releases, "keyring": keyring, "vendor": vendor.private_path,
            "sig": sig.private_path, "sig_pub": sig.public_path, "decisions": root / "decisions"}


def _submit(world: dict[str, Path], name: str, report: dict[str, Any], releases: Path | None = None) -> None:
    folder = write_report_dir(world["subs"] / name, report)
    sign_report_dir(folder, world["vendor"], releases_file=releases or world["releases"])


def _review(world: dict[str, Path], capsys, now: str, *extra: str, decide: bool = True,
            monkeypatch: pytest.MonkeyPatch, releases: Path | None = None) -> tuple[int, dict[str, dict[str, Any]]]:
    """`review --format json` on the SIG's clock `now`, signing its decisions (decide) or not."""
    monkeypatch.setenv(clock.ENV, now)
    signing = ["--decision-key", str(world["sig"]), "--decisions", str(world["decisions"])] if decide else []
    rc = main(["review", str(world["subs"]), "--keyring", str(world["keyring"]), "--releases",
               str(releases or world["releases"]), "--format", "json", *signing, *extra])
    out = capsys.readouterr().out
    return rc, {r["submission"]: r for r in json.loads(out)}


def _redated_beta() -> dict[str, Any]:
    """A later run that fails a check the top tier needs, dated before the report the SIG holds."""
    report = build_report({stable_only_check(): "fail"})
    report["started_at"], report["finished_at"] = "2026-02-01T11:00:00Z", "2026-02-01T12:00:00Z"
    return report


def test_a_report_dated_before_one_the_sig_received_earlier_is_marked_and_demotes(world, capsys, monkeypatch) -> None:
    _submit(world, "a-x1", build_report())                       # stable, finished 2026-03-01
    rc, rows = _review(world, capsys, "2026-03-02T09:00:00Z", monkeypatch=monkeypatch)
    assert rc == 0 and rows["a-x1"]["signature"].startswith("verified") and rows["a-x1"]["received"] is None
    _submit(world, "b-x1", _redated_beta())                      # received after a-x1, claims February

    # without the SIG's record the vendor's date decides: the stable report reads as the latest
    rc, rows = _review(world, capsys, "2026-04-05T09:00:00Z", decide=False, monkeypatch=monkeypatch)
    assert rows["a-x1"]["current"] and rows["a-x1"]["product_tier"] == "stable" and not rows["b-x1"]["redated_before"]

    rc, rows = _review(world, capsys, "2026-04-05T09:00:00Z", monkeypatch=monkeypatch)
    a, b = rows["a-x1"], rows["b-x1"]
    assert a["received"] == "2026-03-02T09:00:00Z (a-x1.decision.intoto.json)" and b["received"] is None
    assert b["current"] and b["product_tier"] == "beta" and b["demoted"].startswith("demoted from stable")
    assert b["redated_before"] == ["a-x1"] and not a["redated_before"]
    assert any(n.startswith("re-dated? finished_at 2026-02-01T12:00:00Z is before 2026-03-01T12:00:00Z of "
                            "submission a-x1, which the SIG received earlier (2026-03-02T09:00:00Z") for n in b["notes"])

    # the next review reads both decisions: the order and the mark stand, and the table shows it
    monkeypatch.setenv(clock.ENV, "2026-04-06T09:00:00Z")
    rc = main(["review", str(world["subs"]), "--keyring", str(world["keyring"]), "--releases", str(world["releases"]),
               "--decisions", str(world["decisions"]), "--sig-key", str(world["sig_pub"])])
    line = next(x for x in capsys.readouterr().out.splitlines() if x.startswith("b-x1"))
    assert rc == 0 and "RE-DATED? finished before a-x1" in line and "beta (this report)" in line


def test_a_later_date_received_later_is_no_mark(world, capsys, monkeypatch) -> None:
    _submit(world, "a-x1", build_report())
    _review(world, capsys, "2026-03-02T09:00:00Z", monkeypatch=monkeypatch)
    later = build_report()
    later["started_at"], later["finished_at"] = "2026-03-10T11:00:00Z", "2026-03-10T12:00:00Z"
    _submit(world, "b-x1", later)
    _, rows = _review(world, capsys, "2026-03-11T09:00:00Z", monkeypatch=monkeypatch)
    assert not rows["a-x1"]["redated_before"] and not rows["b-x1"]["redated_before"] and rows["b-x1"]["current"]


def test_a_report_received_inside_its_release_window_is_judged_on_that_day(world, capsys, monkeypatch) -> None:
    """The release window (signing/release_window.py) is the SIG's clock at receipt: a report it
    decided on while its release certified still verifies after the window closed; the same
    release's report received after it does not."""
    doc = yaml.safe_load(world["releases"].read_text())
    (version, entry), = doc["releases"].items()
    doc["releases"] = {"0.0.1-old": entry, version: {**copy.deepcopy(entry), "published": "2026-03-05"}}
    two = world["root"] / "two-releases.yaml"
    two.write_text(yaml.safe_dump(doc, sort_keys=False))
    old = build_report()
    old["suite"]["version"] = "0.0.1-old"
    _submit(world, "a-x1", old, releases=two)
    rc, rows = _review(world, capsys, "2026-03-10T09:00:00Z", monkeypatch=monkeypatch, releases=two)
    assert rc == 0 and rows["a-x1"]["signature"].startswith("verified"), rows["a-x1"]["notes"]
    shutil.copytree(world["subs"] / "a-x1", world["root"] / "held")
    other = copy.deepcopy(old)
    other["manifest"]["product"] = "NPU X2"
    _submit(world, "b-x2", other, releases=two)                   # first seen after the window closed
    rc, rows = _review(world, capsys, "2026-12-30T09:00:00Z", monkeypatch=monkeypatch, releases=two)
    assert rows["a-x1"]["signature"].startswith("verified"), rows["a-x1"]["notes"]
    assert rows["b-x2"]["signature"] == "signed by examplecorp; failed: superseded", rows["b-x2"]["notes"]
    assert any("superseded by" in n and "up to 2026-03-18" in n for n in rows["b-x2"]["notes"])


def test_only_the_sig_s_own_decisions_are_receipts(world, capsys, monkeypatch) -> None:
    _submit(world, "a-x1", build_report())
    _review(world, capsys, "2026-03-02T09:00:00Z", monkeypatch=monkeypatch)
    assert len(receipts.read(world["decisions"], [key_from_file(world["sig_pub"])])) == 1
    other = keys.write_keypair(world["root"] / "other")
    assert receipts.read(world["decisions"], [key_from_file(other.public_path)]) == {}
    (world["decisions"] / "junk.decision.intoto.json").write_text("{not json")
    assert len(receipts.read(world["decisions"], [key_from_file(world["sig_pub"])])) == 1
    assert receipts.read(world["root"] / "none-yet", [key_from_file(world["sig_pub"])]) == {}


def test_decisions_without_the_sig_s_key_is_one_line_exit_2(world, capsys, monkeypatch) -> None:
    _submit(world, "a-x1", build_report())
    world["decisions"].mkdir()
    rc = main(["review", str(world["subs"]), "--keyring", str(world["keyring"]), "--releases", str(world["releases"]),
               "--decisions", str(world["decisions"])])
    err = capsys.readouterr().err
    assert rc == 2 and err.count("\n") == 1 and "--sig-key: review: --decisions DIR is read with the SIG's key" in err
    (world["root"] / "a-file").write_text("x")
    rc = main(["review", str(world["subs"]), "--keyring", str(world["keyring"]), "--releases", str(world["releases"]),
               "--decisions", str(world["root"] / "a-file"), "--sig-key", str(world["sig_pub"])])
    err = capsys.readouterr().err
    assert rc == 2 and err.count("\n") == 1 and "--decisions: review:" in err and "not a directory" in err
