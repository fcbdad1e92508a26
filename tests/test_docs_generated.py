"""The docs tables are generated from the data files and must not go stale."""
from __future__ import annotations

import json
from pathlib import Path

from conformance.cli import main
from conformance.data import load_suite_data
from conformance.docs import checklist_markdown, shape_policy_markdown, tiers_markdown

DOCS = Path(__file__).resolve().parent.parent / "docs"


def test_checklist_and_tier_docs_are_current() -> None:
    data = load_suite_data()
    assert checklist_markdown(data) in (DOCS / "checklist.md").read_text(), "run `make docs`"
    assert tiers_markdown(data) in (DOCS / "tiers.md").read_text(), "run `make docs`"
    assert shape_policy_markdown(data) in (DOCS / "tiers.md").read_text(), "run `make docs`"


def test_checklist_json_lists_every_check(capsys) -> None:
    assert main(["checklist", "--format", "json"]) == 0
    items = json.loads(capsys.readouterr().out)
    assert [i["id"] for i in items] == [c.id for c in load_suite_data().checklist.checks]
    assert {"id", "title", "area", "level", "requirement", "rationale", "since"} <= set(items[0])
