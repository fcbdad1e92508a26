"""schemas/report.schema.json declares everything a real report carries. The schema stays open (a
report of an older or newer writer still validates, and verify judges every field by its trust
status); this test closes a copy of it, every object that declares properties refusing any other,
and validates the reports real runs wrote: the signed example (reports/example, `make example`) and
a kept real run's (tests/support/real_run_data6). A field the writers add and the schema does not
declare is named here, with its path."""
from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import jsonschema
import pytest

from conformance.catalog import datafiles

ROOT = Path(__file__).resolve().parents[2]
REAL_REPORTS = [ROOT / "reports" / "example" / "report.json", ROOT / "tests" / "support" / "real_run_data6" / "report.json"]
SCHEMA = json.loads(datafiles.schema_path("report").read_text())


def closed(node: Any) -> Any:
    """`node` with additionalProperties false on every object schema that lists its properties
    (an open object such as metrics, which lists none, stays open)."""
    if isinstance(node, dict):
        out = {k: closed(v) for k, v in node.items()}
        if "properties" in out and not isinstance(out.get("additionalProperties"), dict):
            out["additionalProperties"] = False
        return out
    if isinstance(node, list):
        return [closed(v) for v in node]
    return node


def undeclared(doc: Any) -> list[str]:
    validator = jsonschema.Draft202012Validator(closed(copy.deepcopy(SCHEMA)))
    return sorted({f"{'.'.join(str(p) for p in e.absolute_path) or '(top)'}: {e.message}"
                   for e in validator.iter_errors(doc)})


def test_the_closed_copy_refuses_a_field_the_schema_does_not_declare() -> None:
    doc = json.loads(REAL_REPORTS[0].read_text())
    doc["cluster"]["invented"] = 1
    assert any("invented" in line for line in undeclared(doc))


@pytest.mark.parametrize("path", REAL_REPORTS, ids=lambda p: p.parent.name)
def test_a_real_report_carries_only_what_the_schema_declares(path: Path) -> None:
    doc = json.loads(path.read_text())
    jsonschema.Draft202012Validator(SCHEMA).validate(doc)
    assert undeclared(doc) == []


def test_the_capabilities_a_report_carries_are_declared_with_their_states() -> None:
    from conformance.catalog import capabilities

    states = SCHEMA["properties"]["capabilities"]["items"]["properties"]["state"]["enum"]
    assert set(states) == {capabilities.CERTIFIED, capabilities.NOT_CERTIFIED, capabilities.NOT_DECLARED}
