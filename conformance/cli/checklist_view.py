"""`ray-conformance checklist`: the checklist filtered by area and level, in a 100-column terminal.

Text wraps the requirement under its id (no 500-character table rows); md is the docs table of
the selection; json the raw entries. Pure: data in, text out.
"""
from __future__ import annotations

import dataclasses
import json
import textwrap
from typing import Iterable

from conformance.catalog.data import Check, SuiteData
from conformance.sanitize import terminal

WIDTH = 100


def select(checks: Iterable[Check], area: str | None = None, level: str | None = None) -> list[Check]:
    return [c for c in checks if not c.retired and (area is None or c.area == area)
            and (level is None or c.level == level)]


def render_text(checks: list[Check], width: int = WIDTH) -> str:
    indent = " " * 4
    out = []
    for c in checks:
        head = f"{c.id}  {c.level:<6} {c.area:<11} "
        out += textwrap.wrap(terminal(c.title), width=width, initial_indent=head,
                             subsequent_indent=" " * len(head)) or [head]
        out += textwrap.wrap(terminal(" ".join(c.requirement.split())), width=width, initial_indent=indent,
                             subsequent_indent=indent)
        out.append("")
    out.append(f"{len(checks)} check(s)")
    return "\n".join(out)


def render(data: SuiteData, fmt: str, area: str | None = None, level: str | None = None) -> str:
    checks = select(data.checklist.checks, area, level)
    if fmt == "json":
        return json.dumps([{k: v for k, v in c.__dict__.items() if k not in ("scenario", "waits")}
                           | {"tags": list(c.tags), "merit": dataclasses.asdict(c.merit) if c.merit else None}
                           | ({"scenario_bound": [s.as_data() for s in c.scenario]} if c.scenario else {})
                           | ({"waits": c.waits.as_data()} if c.waits else {})
                           for c in checks], indent=2)
    if fmt == "md":
        from dataclasses import replace

        from conformance.docgen.pages import checklist_markdown
        chosen = {c.id for c in checks}
        subset = replace(data, checklist=replace(data.checklist, checks=tuple(
            c for c in data.checklist.checks if c.id in chosen)))
        return checklist_markdown(subset)
    return render_text(checks)
