"""A checklist that names no `scenario_bound:` in an override data folder (CONFORMANCE_DATA_DIR: a
test's small checklist, tests/cli/test_recovery_waivers.py) loads: the fill from the verifier's own
checklist reads that checklist once and never fills it again (it recursed until the stack ran out,
reported as "vocabulary: nested deeper than 64 levels"; scenario_bounds.before_the_field). No Ray."""
from __future__ import annotations

import shutil
from pathlib import Path

import pytest
import yaml

from conformance.catalog import datafiles
from conformance.catalog.data import load_checklist, load_suite_data


def test_an_override_checklist_without_scenario_bounds_loads(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    packaged = datafiles.packaged_data_root()
    (tmp_path / "tiers").mkdir()
    for name in ("vocabulary.yaml", "labels.yaml"):
        shutil.copy(packaged / "tiers" / name, tmp_path / "tiers" / name)
    shutil.copytree(packaged / "schemas", tmp_path / "schemas")
    base = {"rationale": "because of y.", "since": "0.1.0", "cluster": "none"}
    (tmp_path / "tiers" / "checklist.yaml").write_text(yaml.safe_dump({"schema_version": 1, "checks": [
        {"id": "DP-001", "title": "dev", "area": "device", "level": "MUST", "requirement": "MUST do x.", **base},
        {"id": "FR-001", "title": "rec dev", "area": "recovery", "level": "MUST", "requirement": "MUST free x.", **base},
    ]}))
    (tmp_path / "tiers" / "tiers.yaml").write_text(yaml.safe_dump({"schema_version": 1, "tiers": [
        {"name": "experimental", "summary": "s", "requires": [{"select": {"areas": ["device", "recovery"]}}]}]}))
    (tmp_path / "tiers" / "waivers.yaml").write_text("schema_version: 1\nwaivers: []\n")
    (tmp_path / "tiers" / "soak.yaml").write_text("schema_version: 1\nsoak_runs: 10\nchecks: {}\n")
    monkeypatch.setenv("CONFORMANCE_DATA_DIR", str(tmp_path))
    assert set(load_checklist().by_id()) == {"DP-001", "FR-001"}
    assert set(load_suite_data().checklist.by_id()) == {"DP-001", "FR-001"}
