"""Which checks a manifest makes not_applicable by leaving a field out.

The map lives with the manifest's schema (`x-not-applicable-without` in
schemas/manifest.schema.json): each entry names manifest fields, the checks that end
not_applicable without them (ids and/or a checklist selector) and why; `unless` lists what
makes the missing field not matter (PF-002 needs a declared link bandwidth only for a device
transport: a field whose value is `one_of` some values, or a field `present`). `validate-manifest`,
the docs and `init`'s skeleton read it; tests/test_manifest_gates.py lints it against the
checks' code (every not_applicable that names a manifest field, and every fixture that needs
one, is in the map, and the map claims nothing the code does not do). Pure functions.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Mapping

from conformance.catalog.data import Checklist, select_checks
from conformance.catalog.datafiles import load_schema

GATES_KEY = "x-not-applicable-without"
FIELDS_DOC = "docs/writing-a-plugin.md#manifest-fields-that-decide-what-can-pass"   # explains every gate


@dataclass(frozen=True)
class Gate:
    fields: tuple[str, ...]
    when: str                   # any_missing: one missing field is enough; all_missing: every one
    checks: tuple[str, ...]     # check ids, in checklist order
    why: str
    unless: tuple[Mapping[str, Any], ...] = ()   # {field, one_of: [values]} or {field, present: true}


def load_gates(checklist: Checklist, schema: Mapping[str, Any] | None = None) -> list[Gate]:
    schema = schema if schema is not None else load_schema("manifest")
    order = [c.id for c in checklist.active()]
    out = []
    for g in schema.get(GATES_KEY, []):
        ids = set(g["checks"].get("ids", []))
        if "select" in g["checks"]:
            ids |= {c.id for c in select_checks(checklist, g["checks"]["select"], findings=True)}
        out.append(Gate(tuple(g["fields"]), g.get("when", "any_missing"), tuple(c for c in order if c in ids),
                        g.get("why", ""), tuple(g.get("unless", ()))))
    return out


def has_field(data: Mapping[str, Any], dotted: str) -> bool:
    node: Any = data
    for key in dotted.split("."):
        if not isinstance(node, Mapping) or key not in node:
            return False
        node = node[key]
    return node not in (None, [], {}, "")


def value_at(data: Mapping[str, Any], dotted: str) -> Any:
    """The value at a dotted path (None when any key on the way is missing)."""
    node: Any = data
    for key in dotted.split("."):
        if not isinstance(node, Mapping) or key not in node:
            return None
        node = node[key]
    return node


def excused(data: Mapping[str, Any], gate: Gate) -> bool:
    """One of the gate's `unless` conditions holds: its missing field does not matter here."""
    for cond in gate.unless:
        if cond.get("present") and has_field(data, cond["field"]):
            return True
        if "one_of" in cond and value_at(data, cond["field"]) in cond["one_of"]:
            return True
    return False


def unless_text(gate: Gate) -> str:
    """' (unless transport.devices is [cpu] or missing, or topology.expected.links is given)'; '' without."""
    parts = []
    for cond in gate.unless:
        if cond.get("present"):
            parts.append(f"{cond['field']} is given")
        elif "one_of" in cond:
            values = [("missing" if v is None else "[" + ", ".join(map(str, v)) + "]" if isinstance(v, list) else str(v))
                      for v in cond["one_of"]]
            parts.append(f"{cond['field']} is {' or '.join(values)}")
    return f" (unless {', or '.join(parts)})" if parts else ""


def missing(data: Mapping[str, Any], gates: list[Gate]) -> list[Gate]:
    """The gates this manifest closes (its fields are missing the way the gate says, and no
    `unless` condition excuses them)."""
    out = []
    for g in gates:
        if excused(data, g):
            continue
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


GENERATED_BEGIN = ("<!-- begin: manifest fields that decide what can pass (generated by `ray-conformance docs` "
                   "from schemas/manifest.schema.json) -->")
GENERATED_END = "<!-- end: manifest fields that decide what can pass -->"


def gates_markdown(checklist: Checklist, gates: list[Gate] | None = None) -> str:
    """The table of docs/writing-a-plugin.md: field, the checks not applicable without it, why."""
    gates = load_gates(checklist) if gates is None else gates
    level = {c.id: c.level for c in checklist.active()}
    rows = ["| manifest field | not applicable without it | why |", "|---|---|---|"]
    for g in gates:
        joiner = " and " if g.when == "all_missing" else " / "
        fields = joiner.join(f"`{f}`" for f in g.fields) + (" (both missing)" if g.when == "all_missing" else "") \
            + unless_text(g)
        musts = [c for c in g.checks if level.get(c) == "MUST"]
        others = [c for c in g.checks if level.get(c) != "MUST"]
        checks = "; ".join(x for x in (("MUST " + ", ".join(musts)) if musts else "",
                                        ", ".join(f"{c} ({level.get(c)})" for c in others)) if x)
        rows.append(f"| {fields} | {checks} | {g.why} |")
    return "\n".join(rows)


def splice(text: str, body: str) -> str:
    """`text` with the generated block between the markers replaced by `body`."""
    head, sep, rest = text.partition(GENERATED_BEGIN)
    if not sep:
        raise ValueError("the generated block's begin marker is missing")
    _, sep, tail = rest.partition(GENERATED_END)
    if not sep:
        raise ValueError("the generated block's end marker is missing")
    return f"{head}{GENERATED_BEGIN}\n{body}\n{GENERATED_END}{tail}"
