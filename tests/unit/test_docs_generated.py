"""The docs are generated from the data they describe and must not go stale unseen.

Every generated file and every generated block or value inside a hand-written page
(conformance/docgen/blocks.py) must equal what `ray-conformance docs` makes from the data now;
what a person wrote by hand may name only checks the checklist holds and may not copy a param's
value (it writes `<!-- param: ID.name -->` instead, which `make docs` fills).
"""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from conformance.areas.device.contract import CONTRACT_METHODS
from conformance.areas.device.methods import METHODS
from conformance.catalog.data import Check, load_suite_data
from conformance.cli.main import main
from conformance.docgen.blocks import (
    CHECK_ID,
    DocError,
    check_entry,
    copied_params,
    format_value,
    hand_written,
    splice,
)
from conformance.docgen.pages import load_teeth_table, render_docs

ROOT = Path(__file__).resolve().parents[2]
DOCS = ROOT / "docs"
GENERATED_FILES = {"checklist.md", "tiers.md", "check-index.md"}


def hand_written_pages() -> list[Path]:
    return [p for p in sorted(DOCS.glob("*.md")) if p.name not in GENERATED_FILES] + [ROOT / "README.md"]


def test_every_generated_file_and_block_is_current() -> None:
    stale = [str(path.relative_to(ROOT)) for path, text in render_docs(DOCS).items()
             if not path.is_file() or path.read_text() != text]
    assert not stale, f"stale generated docs, run `make docs`: {stale}"


def test_the_area_pages_take_their_check_lists_from_the_checklist() -> None:
    data = load_suite_data()
    pages = {p.name: p.read_text() for p in hand_written_pages()}
    for area in dict.fromkeys(c.area for c in data.checklist.active()):
        holders = [name for name, text in pages.items() if f"<!-- generated: checks:{area} " in text]
        assert holders, f"no page holds the generated list of the {area} checks (<!-- generated: checks:{area} -->)"


def test_hand_written_text_names_only_checks_the_checklist_holds() -> None:
    ids = {c.id for c in load_suite_data().checklist.checks}
    unknown = [f"{page.name}: {cid}" for page in hand_written_pages()
               for cid in CHECK_ID.findall(hand_written(page.read_text())) if cid not in ids]
    assert not unknown, unknown


def test_hand_written_text_copies_no_param_value() -> None:
    names = {n for c in load_suite_data().checklist.active() for n in c.params}
    copies = [f"{page.name}:{no}: {copy}" for page in hand_written_pages()
              for no, copy in copied_params(hand_written(page.read_text()), names)]
    assert not copies, f"write <!-- param: ID.name -->value<!-- /param --> instead: {copies}"


def test_check_index_names_test_and_variant_of_every_check() -> None:
    text = (DOCS / "check-index.md").read_text()
    blocks = text.split("\n### ")[1:]
    assert len(blocks) == len(load_suite_data().checklist.active())
    for block in blocks:   # a finding (level INFO) names the good run that shows it instead
        assert "\n- test: " in block and ("\n- broken variants: " in block or "\n- a finding, never counted" in block), \
            block[:80]


def test_splice_fills_blocks_and_values_and_refuses_an_unknown_block() -> None:
    page = ("intro <!-- param: XX-001.bound_s -->old<!-- /param --> s\n"
            "<!-- generated: checks:x (by a generator) -->\nstale\n<!-- end generated: checks:x -->\nend\n")
    out = splice(page, {"checks:x": "fresh"}, lambda cid, name, fmt: f"{cid}/{name}")
    assert out == ("intro <!-- param: XX-001.bound_s -->XX-001/bound_s<!-- /param --> s\n"
                   "<!-- generated: checks:x (by a generator) -->\nfresh\n<!-- end generated: checks:x -->\nend\n")
    assert hand_written(out) == "intro  s\n\nend\n"
    with pytest.raises(DocError, match="checks:x"):
        splice(page, {}, lambda *a: "")


def test_copied_params_finds_a_value_beside_its_name() -> None:
    text = "waits `bound_s` (30 s) and `other` (4)\nor `bound_s=30` / `bound_s: 30` / `bound_s`, 30 s\n"
    assert [no for no, _ in copied_params(text, {"bound_s"})] == [1, 2, 2, 2]
    assert format_value(0.1, "%") == "10 %" and format_value(30, None) == "30"


def test_a_check_entry_shows_its_requirement_and_facts() -> None:
    c = Check(id="XX-001", title="A title", area="x", level="MUST", requirement="It MUST do it within 5 s.",
              rationale="", since="0.1.0", params={"bound_s": 5})
    assert check_entry(c, ["params: `bound_s=5`"]) == ("- **XX-001** (MUST) A title. It MUST do it within 5 s.\n"
                                                      "  - params: `bound_s=5`")


def test_the_manager_method_table_covers_the_contract() -> None:
    data = load_suite_data()
    by_id = data.checklist.by_id()
    assert set(CONTRACT_METHODS) <= {m.name for m in METHODS}, "a method the contract probe calls has no row"
    named = {cid for m in METHODS for cid in m.checks}
    assert named <= set(by_id), named - set(by_id)
    contract = {c.id for c in data.checklist.active()
                if c.area == "device" and "contract" in c.tags and "hosts" not in c.tags}
    assert contract <= named, f"device contract checks no method row names: {sorted(contract - named)}"


def test_teeth_table_is_found_beside_the_docs() -> None:
    assert load_teeth_table(DOCS) is not None


def test_checklist_json_lists_every_check(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["checklist", "--format", "json"]) == 0
    items = json.loads(capsys.readouterr().out)
    assert [i["id"] for i in items] == [c.id for c in load_suite_data().checklist.checks]
    assert {"id", "title", "area", "level", "requirement", "rationale", "since"} <= set(items[0])


def test_the_checklist_page_is_one_block_per_check() -> None:
    """docs/checklist.md: a heading per active check, and no line wider than its words need (an edit
    to one check rewrites that check's lines, never a 2,000-character table row)."""
    from conformance.catalog.data import load_suite_data
    from conformance.docgen.pages import WRAP, checklist_markdown

    data = load_suite_data()
    page = checklist_markdown(data)
    headings = [line.split(":")[0][4:] for line in page.splitlines() if line.startswith("### ")]
    assert headings == [c.id for c in data.checklist.active()]
    words = {w for line in page.splitlines() for w in line.split()}
    widest = max(len(line) for line in page.splitlines() if not line.startswith("### "))
    assert widest <= WRAP + max(len(w) for w in words)
