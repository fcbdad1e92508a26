"""The trust table (schemas/report.trust.yaml): the status of every field of report.json and of
the Statement, looked up, and the table as docs/signing.md shows it.

The vendor owns its signing key, so a signature cannot make a field true. Each field is
recomputed, cross-checked, a signed claim, or informational (the data file says which, and why):

  status / unknown_fields   the status of a field; the fields of a document that have none
                            (verify refuses them: a new field cannot slip through unjudged)
  fact_sources              the fields that state each cross-checked fact, and which one wins
                            (signing/trust.py cross-checks them)
  markdown_table            docs/signing.md's trust table (generated)
"""
from __future__ import annotations

import functools
from pathlib import Path
from typing import Any, Mapping

from conformance.catalog import datafiles

STATUSES = ("recomputed", "cross-checked", "signed claim", "informational")
SECTIONS = ("report", "statement")


def table_path() -> Path:
    return datafiles.data_root() / "schemas" / "report.trust.yaml"


@functools.lru_cache(maxsize=4)
def _load(path: str, mtime_ns: int) -> dict[str, Any]:
    doc: dict[str, Any] = datafiles.read_yaml_or_json(table_path(), what="trust table")   # an object (validated)
    datafiles.validate(doc, "trust", what=f"trust table {table_path()}")
    return doc


def load_table() -> dict[str, Any]:
    """schemas/report.trust.yaml, schema-validated (cached per file version)."""
    path = table_path()
    return _load(str(path), path.stat().st_mtime_ns)


# ---------------------------------------------------------------------------- statuses

def _parent(path: str) -> str | None:
    if path.endswith("[]"):
        return path[:-2]
    cut = path.rfind(".")
    return path[:cut] if cut > 0 else None


def status(section: str, path: str, table: Mapping[str, Any] | None = None) -> dict[str, Any] | None:
    """The entry that gives `path` its status: its own, else the nearest ancestor's `subtree`
    entry or `ancestor.*` entry (an open object's other keys). None: the field has no status."""
    fields: Mapping[str, dict[str, Any]] = (table or load_table())[section]   # path -> entry (the trust schema)
    if path in fields:
        return fields[path]
    if path.endswith("[]"):  # a list's items have the list's status
        return status(section, path[:-2], table)
    child, parent = path, _parent(path)
    while parent is not None:
        wildcard = fields.get(f"{parent}.*")
        if wildcard is not None and not child.endswith("[]"):
            return wildcard
        entry = fields.get(parent)
        if entry is not None and entry.get("subtree"):
            return entry
        child, parent = parent, _parent(parent)
    return None


def _covered_below(section: str, path: str, table: Mapping[str, Any]) -> bool:
    """True when `path`'s status also covers everything below it (no need to look further)."""
    fields = table[section]
    entry = fields.get(path)
    if entry is None:  # a list's items: as the list; otherwise inherited from a subtree or wildcard entry
        return _covered_below(section, path[:-2], table) if path.endswith("[]") else True
    return bool(entry.get("subtree")) and not any(k.startswith(path + ".") or k.startswith(path + "[]")
                                                  for k in fields)


def unknown_fields(section: str, doc: object, table: Mapping[str, Any] | None = None, limit: int = 10) -> list[str]:
    """Paths of `doc` (report.json or the Statement) that have no trust status, at most `limit`."""
    table = table or load_table()
    found: list[str] = []
    stack: list[tuple[str, Any]] = []

    def children(prefix: str, value: object) -> None:
        if isinstance(value, dict):
            for k, v in value.items():
                stack.append((f"{prefix}.{k}" if prefix else str(k), v))
        elif isinstance(value, list) and prefix:
            for v in value:
                stack.append((f"{prefix}[]", v))

    children("", doc)
    seen: set[str] = set()
    while stack and len(found) < limit:
        path, value = stack.pop()
        if path in seen and not isinstance(value, (dict, list)):
            continue
        seen.add(path)
        if status(section, path, table) is None:
            if path not in found:
                found.append(path)
            continue
        if not _covered_below(section, path, table):
            children(path, value)
    return sorted(found)


def fact_sources(table: Mapping[str, Any] | None = None) -> dict[str, list[tuple[str, bool]]]:
    """fact name -> [(report field, wins)] in the table's order."""
    out: dict[str, list[tuple[str, bool]]] = {}
    for path, entry in (table or load_table())["report"].items():
        if entry.get("fact"):
            out.setdefault(entry["fact"], []).append((path, entry.get("wins") is True))
    return out


def markdown_table(table: Mapping[str, Any] | None = None) -> str:
    """docs/signing.md's trust table (generated; `ray-conformance docs`)."""
    from tabulate import tabulate

    table = table or load_table()
    rows = []
    for section in SECTIONS:
        for path, e in table[section].items():
            if e["status"] == "cross-checked":
                if e.get("fact"):
                    others = [p for p, _ in fact_sources(table)[e["fact"]] if p != path]
                    winner = next((p for p, w in fact_sources(table)[e["fact"]] if w), None)
                    detail = f"fact *{e['fact']}*: agrees with {', '.join(others)}; {winner} wins"
                else:
                    detail = f"agrees with {', '.join(e.get('with', [])) or 'the fields below'}" + \
                             (f"; {e['wins']} wins" if isinstance(e.get("wins"), str) else "")
            else:
                detail = ""
            rows.append([f"`{path}`" if section == "report" else f"Statement `{path}`",
                         e["status"] + (" (and below)" if e.get("subtree") else ""),
                         detail.replace("|", "/"), e.get("checked_by", "-"), e["why"].replace("|", "/")])
    return tabulate(rows, headers=["field", "status", "cross-checked with / wins", "verify line", "why"],
                    tablefmt="github")
