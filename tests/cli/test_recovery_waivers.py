"""Waivers end to end: tiers/waivers.yaml -> report.json (`waived`, never `pass`) -> tier, and the
tier rule for a waiver's `blocks_tier` (conformance/catalog/ladder.py). No Ray cluster is started."""
from __future__ import annotations

import datetime as dt
import json
import os
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest
import yaml

from conformance.catalog.data import load_suite_data, parse_checklist, parse_ladder, waivers_path
from conformance.catalog.ladder import RunContext, compute_tiers
from conformance.report.results import TestRecord as Record
from conformance.report.results import aggregate
from conformance.run.command import suite_command

ROOT = Path(__file__).resolve().parents[2]
CATALOG = ROOT  # the data folders tiers/ and schemas/ are at the repository's top level
SIM_MANIFEST = ROOT / "conformance" / "simulated" / "manifest.yaml"


def checklist() -> Any:
    base = {"rationale": "because of y.", "since": "0.1.0", "cluster": "none"}   # its checks start no cluster
    return parse_checklist({"schema_version": 1, "checks": [
        {"id": "DP-001", "title": "dev", "area": "device", "level": "MUST", "requirement": "MUST do x.", **base},
        {"id": "FR-001", "title": "rec dev", "area": "recovery", "level": "MUST", "requirement": "MUST free x.",
         "tags": ["device-recovery"], **base},
        {"id": "FR-016", "title": "rec tr", "area": "recovery", "level": "MUST", "requirement": "MUST move x.", **base},
    ]})


def ladder(cl: Any, beta_allows: bool = True) -> Any:
    return parse_ladder({"schema_version": 1, "tiers": [
        {"name": "experimental", "summary": "s", "requires": [{"select": {"areas": ["device"]}}]},
        {"name": "beta", "summary": "s", "allow_waived": beta_allows,
         "requires": [{"select": {"areas": ["recovery"], "tags": ["device-recovery"]}}]},
        {"name": "stable", "summary": "s", "allow_waived": True, "requires": [{"select": {"areas": ["recovery"]}}]},
    ]}, checklist=cl)


def waived(cid: str, blocks: bool) -> dict[str, Any]:
    return {"id": cid, "outcome": "waived", "waiver": {"check": cid, "issue": "https://x/1", "reason": "r",
                                                       "expires": "2099-01-01", "blocks_tier": blocks,
                                                       "original_outcome": "fail"}}


@pytest.mark.parametrize("blocks, tier", [(False, "stable"), (True, "beta")])
def test_blocks_tier_decides_whether_a_waived_check_counts(blocks: bool, tier: str) -> None:
    cl = checklist()
    results = [{"id": "DP-001", "outcome": "pass"}, {"id": "FR-001", "outcome": "pass"}, waived("FR-016", blocks)]
    got, detail = compute_tiers(results, cl, ladder(cl), RunContext(True, 2))
    assert got == tier
    stable = detail[2]
    assert [b["id"] for b in stable["blocking"]] == ([] if not blocks else ["FR-016"])


def test_waived_never_counts_where_the_tier_disallows_waivers() -> None:
    cl = checklist()
    results = [{"id": "DP-001", "outcome": "pass"}, waived("FR-001", False), {"id": "FR-016", "outcome": "pass"}]
    got, detail = compute_tiers(results, cl, ladder(cl, beta_allows=False), RunContext(True, 2))
    assert got == "experimental"
    assert detail[1]["blocking"][0]["id"] == "FR-001"


def test_aggregate_carries_blocks_tier_into_the_report_entry() -> None:
    from conformance.catalog.data import Waiver

    cl = checklist()
    w = Waiver("FR-016", "https://github.com/ray-project/ray/issues/61014", "upstream limitation", "2099-01-01",
               blocks_tier=True)
    entries = aggregate([Record("t::x", "FR-016", "fail", "boom")], cl, [w])
    entry = next(e for e in entries if e["id"] == "FR-016")
    assert entry["outcome"] == "waived" and entry["waiver"]["blocks_tier"] is True


def test_the_shipped_waivers_file_is_valid_and_current() -> None:
    raw = yaml.safe_load(waivers_path().read_text())
    data = load_suite_data()
    ids = {c.id for c in data.checklist.checks}
    assert data.waivers, "tiers/waivers.yaml records the known Ray 2.60 limitations"
    for entry, w in zip(raw["waivers"], data.waivers):
        assert isinstance(entry["expires"], str), f"{w.check}: expires must be a quoted ISO date string"
        assert w.check in ids and w.issue.startswith("https://github.com/ray-project/ray/issues/")
        assert dt.date.fromisoformat(w.expires) > dt.date.today(), f"{w.check}: waiver expired; re-test and renew"
    fr16 = next(w for w in data.waivers if w.check == "FR-016")
    assert fr16.issue.endswith("/61014") and fr16.blocks_tier is False


CHECK_FILE = '''
import pytest

@pytest.mark.check("DP-001")
def test_device():
    pass

@pytest.mark.check("FR-001")
def test_recovery_device():
    pass

@pytest.mark.check("FR-016")
def test_restarted_transport():
    assert False, "Unsupported tensor transport protocol: SIMXFER (upstream limitation)"
'''


def write_data(folder: Path, blocks: bool) -> Path:
    """Suite data files for the run: a 3-check checklist, the 3-tier ladder, one waiver."""
    shutil.copytree(CATALOG / "schemas", folder / "schemas")
    (folder / "tiers").mkdir(parents=True)
    for name in ("vocabulary.yaml", "labels.yaml"):
        shutil.copy(CATALOG / "tiers" / name, folder / "tiers" / name)
    # no check of this 3-check checklist is soaking (the release's soak names its own provisional ones)
    (folder / "tiers" / "soak.yaml").write_text("schema_version: 1\nsoak_runs: 10\nchecks: {}\n")
    base = {"rationale": "because of y.", "since": "0.1.0", "cluster": "none"}   # its checks start no cluster
    (folder / "tiers" / "checklist.yaml").write_text(yaml.safe_dump({"schema_version": 1, "checks": [
        {"id": "DP-001", "title": "dev", "area": "device", "level": "MUST", "requirement": "MUST do x.", **base},
        {"id": "FR-001", "title": "rec dev", "area": "recovery", "level": "MUST", "requirement": "MUST free x.",
         "tags": ["device-recovery"], **base},
        {"id": "FR-016", "title": "rec tr", "area": "recovery", "level": "MUST", "requirement": "MUST move x.",
         **base}]}))
    (folder / "tiers" / "tiers.yaml").write_text(yaml.safe_dump({"schema_version": 1, "tiers": [
        {"name": "experimental", "summary": "s", "requires": [{"select": {"areas": ["device"]}}]},
        {"name": "beta", "summary": "s", "allow_waived": True,
         "requires": [{"select": {"areas": ["recovery"], "tags": ["device-recovery"]}}]},
        {"name": "stable", "summary": "s", "allow_waived": True,
         "requires": [{"select": {"areas": ["recovery"]}}]}]}))
    (folder / "tiers" / "waivers.yaml").write_text(
        "schema_version: 1\nwaivers:\n"
        "  - check: FR-016\n    issue: https://github.com/ray-project/ray/issues/61014\n"
        "    reason: custom transports are not re-registered on restarted actors\n"
        f"    expires: \"2099-12-31\"\n    blocks_tier: {'true' if blocks else 'false'}\n")
    return folder


@pytest.mark.parametrize("blocks, tier", [(False, "stable"), (True, "beta")])
def test_waiver_file_to_report_to_tier(tmp_path: Path, blocks: bool, tier: str) -> None:
    data = write_data(tmp_path / "data", blocks)
    checks = tmp_path / "checks" / "test_waived.py"
    checks.parent.mkdir()
    checks.write_text(CHECK_FILE)
    out = tmp_path / "out"
    env = {**{k: v for k, v in os.environ.items() if k != "PYTEST_ADDOPTS"}, "CONFORMANCE_DATA_DIR": str(data)}
    proc = subprocess.run(suite_command(SIM_MANIFEST, out, [str(checks)], rootdir=None),
                          capture_output=True, text=True, timeout=300, env=env, cwd=tmp_path)
    assert (out / "report.json").exists(), proc.stdout[-3000:] + proc.stderr[-3000:]
    report = json.loads((out / "report.json").read_text())
    entry = next(c for c in report["checks"] if c["id"] == "FR-016")
    assert entry["outcome"] == "waived", proc.stdout[-2000:]
    assert entry["waiver"]["issue"].endswith("/61014") and entry["waiver"]["blocks_tier"] is blocks
    assert entry["waiver"]["original_outcome"] == "fail" and "Unsupported tensor transport" in entry["reason"]
    assert report["summary"]["waived"] == 1 and report["summary"]["pass"] == 2
    assert report["tier"] == tier
    assert "WAIVED" in (out / "report.md").read_text()
    assert 'skipped message="waived' in (out / "junit.xml").read_text()
