"""Which checks a manifest makes not_applicable by leaving a field out.

The map lives with the manifest's schema (`x-not-applicable-without` in
schemas/manifest.schema.json): each entry names manifest fields, the checks that end
not_applicable without them (ids and/or a checklist selector) and why. `validate-manifest`,
the docs and `init`'s skeleton read it; tests/test_manifest_gates.py lints it against the
checks' code (every not_applicable that names a manifest field, and every fixture that needs
one, is in the map, and the map claims nothing the code does not do). Pure functions.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Mapping

from conformance.data import Checklist, load_schema, select_checks

GATES_KEY = "x-not-applicable-without"


@dataclass(frozen=True)
class Gate:
    fields: tuple[str, ...]
    when: str                   # any_missing: one missing field is enough; all_missing: every one
    checks: tuple[str, ...]     # check ids, in checklist order
    why: str


def load_gates(checklist: Checklist, schema: Mapping[str, Any] | None = None) -> list[Gate]:
    schema = schema if schema is not None else load_schema("manifest")
    order = [c.id for c in checklist.active()]
    out = []
    for g in schema.get(GATES_KEY, []):
        ids = set(g["checks"].get("ids", []))
        if "select" in g["checks"]:
            ids |= {c.id for c in select_checks(checklist, g["checks"]["select"])}
        out.append(Gate(tuple(g["fields"]), g.get("when", "any_missing"), tuple(c for c in order if c in ids),
                        g.get("why", "")))
    return out


def has_field(data: Mapping[str, Any], dotted: str) -> bool:
    node: Any = data
    for key in dotted.split("."):
        if not isinstance(node, Mapping) or key not in node:
            return False
        node = node[key]
    return node not in (None, [], {}, "")


def missing(data: Mapping[str, Any], gates: list[Gate]) -> list[Gate]:
    """The gates this manifest closes (its fields are missing the way the gate says)."""
    out = []
    for g in gates:
        absent = [f for f in g.fields if not has_field(data, f)]
        if (g.when == "all_missing" and len(absent) == len(g.fields)) or (g.when != "all_missing" and absent):
            out.append(g)
    return out


def missing_lines(data: Mapping[str, Any], checklist: Checklist, gates: list[Gate] | None = None) -> list[str]:
    """One line per closed gate, MUST checks first: what validate-manifest prints after "OK"."""
    gates = load_gates(checklist) if gates is None else gates
    level = {c.id: c.level for c in checklist.active()}
    lines = []
    for g in missing(data, gates):
        musts = [c for c in g.checks if level.get(c) == "MUST"]
        others = [c for c in g.checks if level.get(c) != "MUST"]
        fields = " and ".join(g.fields) if g.when == "all_missing" else " / ".join(g.fields)
        parts = []
        if musts:
            parts.append(f"MUST {', '.join(musts)}")
        if others:
            parts.append(", ".join(f"{c} ({level.get(c, '?')})" for c in others))
        lines.append(f"without {fields}: not applicable: {'; '.join(parts)} ({g.why})")
    return lines
