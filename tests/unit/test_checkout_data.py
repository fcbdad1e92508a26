"""A session run on another checkout's data says which file differs (tests/support/checkout_data.py:
the recipes' clones run on one environment read its checkout's tiers/ and schemas/). No Ray."""
from __future__ import annotations

from pathlib import Path

from checkout_data import data_mismatch


def _data(root: Path, soak: str = "checks: {}\n") -> Path:
    for sub in ("tiers", "schemas"):
        (root / sub).mkdir(parents=True)
    (root / "tiers" / "soak.yaml").write_text(soak)
    (root / "schemas" / "soak.schema.json").write_text("{}")
    return root


def test_the_same_bytes_or_the_same_folder_agree(tmp_path: Path) -> None:
    mine = _data(tmp_path / "clone")
    assert data_mismatch(mine, _data(tmp_path / "main")) is None
    assert data_mismatch(mine, mine) is None


def test_the_first_file_that_differs_or_is_missing_is_named(tmp_path: Path) -> None:
    mine, read = _data(tmp_path / "clone", "checks: {XX-001: []}\n"), _data(tmp_path / "main")
    assert data_mismatch(mine, read) == "tiers/soak.yaml"
    (mine / "tiers" / "soak.yaml").write_text("checks: {}\n")
    (mine / "schemas" / "new.schema.json").write_text("{}")
    assert data_mismatch(mine, read) == "schemas/new.schema.json"
