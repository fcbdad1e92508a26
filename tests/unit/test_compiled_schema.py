"""Schemas compiled once per content, and a parsed document judged once per schema
(conformance/catalog/datafiles.py: CompiledSchema), and a releases file read once per content
(conformance/catalog/releases.py): what verify and review ask many times must still answer for
what the files say now."""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from conformance.catalog import datafiles, releases
from conformance.errors import UserError

SCHEMA = {"type": "object", "properties": {"n": {"type": "integer"}, "xs": {"type": "array"}},
          "additionalProperties": False}


def _schema_file(tmp_path: Path, schema: dict[str, object], name: str = "s.schema.json") -> Path:
    path = tmp_path / name
    path.write_text(json.dumps(schema))
    return path


def test_the_same_document_gets_the_same_answer_and_an_edit_gets_its_own(tmp_path: Path) -> None:
    compiled = datafiles.compiled_schema(_schema_file(tmp_path, SCHEMA))
    assert compiled.first_error({"n": 1}) is None
    assert compiled.first_error({"n": 1}) is None
    assert compiled.first_error({"n": "one"}) == "n: 'one' is not of type 'integer'"
    assert compiled.first_error({"n": 1, "m": 2}) is not None


def test_a_schema_rewritten_under_the_same_name_is_judged_by_what_it_says_now(tmp_path: Path) -> None:
    path = _schema_file(tmp_path, SCHEMA)
    assert datafiles.compiled_schema(path).first_error({"n": "one"}) is not None
    path.write_text(json.dumps({**SCHEMA, "properties": {"n": {"type": "string"}}}))
    assert datafiles.compiled_schema(path).first_error({"n": "one"}) is None


def test_a_tuple_is_never_taken_for_the_list_it_prints_as(tmp_path: Path) -> None:
    compiled = datafiles.compiled_schema(_schema_file(tmp_path, SCHEMA))
    assert compiled.first_error({"xs": [1, 2]}) is None
    # jsonschema's array is a list: a tuple with the same canonical JSON is judged on its own
    assert compiled.first_error({"xs": (1, 2)}) is not None


def test_true_and_one_are_different_documents(tmp_path: Path) -> None:
    compiled = datafiles.compiled_schema(_schema_file(tmp_path, SCHEMA))
    assert compiled.first_error({"n": 1}) is None
    assert compiled.first_error({"n": True}) is not None    # a boolean is not an integer in JSON Schema


def test_the_unknown_field_first_order_is_its_own_answer(tmp_path: Path) -> None:
    schema = {"type": "object", "required": ["name"], "properties": {"name": {"type": "string"}},
              "additionalProperties": False}
    compiled = datafiles.compiled_schema(_schema_file(tmp_path, schema))
    doc = {"nmae": "x"}
    assert "nmae" in str(compiled.first_error(doc, unknown_first=True))
    assert "'name' is a required property" in str(compiled.first_error(doc))


def test_a_releases_file_rewritten_in_place_gives_its_new_releases(tmp_path: Path) -> None:
    shipped = releases.default_path()
    path = tmp_path / "releases.yaml"
    path.write_bytes(shipped.read_bytes())
    first = releases.load_releases(path)
    assert first == releases.load_releases(path)
    first.clear()                                  # a caller's copy: the next one is whole
    assert releases.load_releases(path)
    path.write_text("schema_version: 1\nreleases: {}\n")
    assert releases.load_releases(path) == {}
    path.write_text("schema_version: 2\n")
    with pytest.raises(UserError, match="schema_version: 1"):
        releases.load_releases(path)
    path.unlink()
    with pytest.raises(UserError, match="file not found"):
        releases.load_releases(path)
