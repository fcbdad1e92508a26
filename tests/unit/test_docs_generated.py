"""The docs tables are generated from the data files and must not go stale."""
from __future__ import annotations

import json
from pathlib import Path

from conformance.catalog.data import load_suite_data
from conformance.catalog.docs import (
    check_index_markdown,
    checklist_markdown,
    load_teeth_table,
    shape_policy_markdown,
    tiers_markdown,
)
from conformance.cli.main import main

DOCS = Path(__file__).resolve().parents[2] / "docs"


def test_checklist_and_tier_docs_are_current() -> None:
    data = load_suite_data()
    assert checklist_markdown(data) in (DOCS / "checklist.md").read_text(), "run `make docs`"
    assert tiers_markdown(data) in (DOCS / "tiers.md").read_text(), "run `make docs`"
    assert shape_policy_markdown(data) in (DOCS / "tiers.md").read_text(), "run `make docs`"


def test_check_index_names_test_and_variant_of_every_check() -> None:
    data = load_suite_data()
    table = check_index_markdown(data, load_teeth_table(DOCS))
    assert table in (DOCS / "check-index.md").read_text(), "run `make docs`"
    rows = [line for line in table.splitlines() if line.startswith("| ") and line[2:4].isupper()]
    assert len(rows) == len(data.checklist.active())
    for row in rows:
        test, variant = [cell.strip() for cell in row.strip("|").split("|")][-2:]
        assert test != "-" and variant != "-", row[:80]


def test_checklist_json_lists_every_check(capsys) -> None:
    assert main(["checklist", "--format", "json"]) == 0
    items = json.loads(capsys.readouterr().out)
    assert [i["id"] for i in items] == [c.id for c in load_suite_data().checklist.checks]
    assert {"id", "title", "area", "level", "requirement", "rationale", "since"} <= set(items[0])
