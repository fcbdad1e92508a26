"""The typed report (conformance/report/view.py) and schemas/report.schema.json cannot drift: each
view class's fields are properties the schema declares for that object, each typed as the schema
types it (a field the schema does not require, or allows null, is `| None`)."""
from __future__ import annotations

import dataclasses
import json
import typing
from pathlib import Path
from typing import Any, Mapping

import pytest

from conformance.catalog import datafiles
from conformance.report import view
from schema_view_support import annotation_types, same_types, schema_node, schema_types
from signing_support import build_report

SCHEMA = json.loads(datafiles.schema_path("report").read_text())

# view class -> where the schema declares the object it types
OBJECTS: dict[type, tuple[str, ...]] = {
    view.Report: (),
    view.Suite: ("suite",),
    view.Environment: ("environment",),
    view.Selection: ("selection",),
    view.CheckResult: ("checks", "[]"),
    view.TierDetail: ("tiers", "[]"),
    view.Blocking: ("tiers", "[]", "blocking", "[]"),
    view.Condition: ("tiers", "[]", "conditions", "[]"),
    view.Capability: ("capabilities", "[]"),
}
# document: the JSON itself, kept for the helpers that judge the report as it was signed;
# merged: Selection.merged, whether selection.shards lists any (test_selection_records_read_as_json)
NOT_SCHEMA_FIELDS = {"document", "merged"}


def _node(path: tuple[str, ...]) -> Mapping[str, Any]:
    return schema_node(SCHEMA, path)


def test_every_view_class_is_held_to_the_schema() -> None:
    classes = {c for c in vars(view).values() if isinstance(c, type) and dataclasses.is_dataclass(c)
               and c.__module__ == view.__name__}
    assert classes == set(OBJECTS), "a view class the test does not hold to the schema (add it to OBJECTS)"


@pytest.mark.parametrize("cls", list(OBJECTS), ids=lambda c: c.__name__)
def test_view_fields_are_the_schemas_properties_with_its_types(cls: type) -> None:
    node = _node(OBJECTS[cls])
    declared, required = node["properties"], set(node.get("required", []))
    hints = typing.get_type_hints(cls)
    for f in dataclasses.fields(cls):
        if f.name in NOT_SCHEMA_FIELDS:
            continue
        assert f.name in declared, f"{cls.__name__}.{f.name}: no such property in the report schema"
        want = schema_types(SCHEMA, declared[f.name]) | ({"null"} if f.name not in required else set())
        got = annotation_types(hints[f.name])
        assert same_types(want, got), f"{cls.__name__}.{f.name}: typed {got}, the schema says {want}"


def test_a_field_the_schema_requires_is_in_the_view_where_verify_reads_its_object() -> None:
    """Report, Suite and the tier detail carry every property verify compares (the rest stays JSON)."""
    for cls in (view.Suite, view.TierDetail, view.Blocking, view.Condition, view.Capability):
        node = _node(OBJECTS[cls])
        names = {f.name for f in dataclasses.fields(cls)}
        missing = set(node.get("required", [])) - names
        assert not missing, (cls.__name__, missing)


def test_a_built_report_reads_into_the_view() -> None:
    doc = build_report()
    report = view.Report.from_json(doc)
    assert report.suite.version == doc["suite"]["version"] and report.tier == doc["tier"]
    assert [c.id for c in report.checks] == [c["id"] for c in doc["checks"]]
    assert [t.name for t in report.tiers] == [t["name"] for t in doc["tiers"]]
    assert report.suite.digest("tiers_sha256") == doc["suite"]["tiers_sha256"]
    assert report.environment.ray == doc["environment"]["ray"] and report.document is doc
    with pytest.raises(KeyError):
        report.suite.digest("name")


def test_a_real_report_reads_into_the_view_with_its_capabilities() -> None:
    """The signed example (reports/example): every field the view types, the capabilities included."""
    path = Path(__file__).resolve().parents[2] / "reports" / "example" / "report.json"
    doc = json.loads(path.read_text())
    report = view.Report.from_json(doc)
    assert report.capabilities is not None
    assert [(c.name, c.state) for c in report.capabilities] == [(c["name"], c["state"]) for c in doc["capabilities"]]
    assert [c.id for c in report.checks] == [c["id"] for c in doc["checks"]]


def test_capabilities_the_view_cannot_read_stay_json() -> None:
    """A release whose schema predates declaring capabilities let any value through: the view reads
    none, never a traceback (verify's capabilities line judges the JSON)."""
    doc = build_report()
    doc["capabilities"] = [{"name": "device"}]
    assert view.Report.from_json(doc).capabilities is None


def test_the_runs_records_read_as_json() -> None:
    """cluster, sections, preflight and the selection's environment and nodes stay JSON for the
    rules that judge them; duration_s and partial are typed."""
    doc = build_report()
    doc["duration_s"], doc["preflight"] = 12.5, {"ok": True, "duration_s": 1.0, "findings": []}
    doc["selection"]["environment"] = {"RAY_CONFORMANCE_TRANSPORT_MAX_BYTES": "1MiB"}
    report = view.Report.from_json(doc)
    assert report.partial is doc["partial"] and report.duration_s == 12.5
    assert report.cluster is doc["cluster"] and report.preflight is doc["preflight"]
    assert report.environment.document is doc["environment"]
    assert report.selection.environment == {"RAY_CONFORMANCE_TRANSPORT_MAX_BYTES": "1MiB"}
    assert report.sections is doc.get("sections") and report.selection.nodes is None


def test_an_optional_record_that_is_not_an_object_reads_as_absent() -> None:
    """A release whose schema does not declare the record let any value through: its readers took
    one that is not an object for an empty record (as_map), and read None the same way."""
    doc = build_report()
    doc["sections"], doc["preflight"], doc["selection"]["environment"] = [1], "x", 3
    doc.pop("duration_s", None)
    report = view.Report.from_json(doc)
    assert (report.sections, report.preflight, report.selection.environment, report.duration_s) == (None,) * 4


def test_selection_merged_is_whether_it_lists_shards() -> None:
    doc = build_report()
    assert view.Report.from_json(doc).selection.merged is False
    doc["selection"]["shards"] = [{"shard": "1-of-2"}, {"shard": "2-of-2"}]
    assert view.Report.from_json(doc).selection.merged is True
    doc["selection"]["shards"] = []
    assert view.Report.from_json(doc).selection.merged is False
