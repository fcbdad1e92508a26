"""Generated text inside hand-written pages: blocks and single values, filled by `ray-conformance docs`.

A page keeps its prose by hand and takes what restates data from the data, between markers:

    <!-- generated: checks:transport (by `ray-conformance docs` from tiers/checklist.yaml) -->
    ...the area's checks, one entry per check...
    <!-- end generated: checks:transport -->

and, inline, one param of one check as this checklist holds it (`%`: a fraction shown as percent):

    at least <!-- param: PF-002.min_link_bandwidth_fraction % -->10 %<!-- /param --> of the reference

So a changed threshold or a new check is one edit in tiers/checklist.yaml and `make docs`, and the
docs test (tests/unit/test_docs_generated.py) fails when a page was not regenerated. `hand_written`
gives the text outside the markers, which that test holds to naming only checks the data holds.
Pure functions.
"""
from __future__ import annotations

import re
from typing import Callable, Mapping

from conformance.catalog.data import Check, SuiteData

BLOCK = re.compile(r"(?P<begin><!-- generated: (?P<name>[\w:.-]+)[^\n]*?-->)\n(?P<body>.*?)\n?"
                   r"(?P<end><!-- end generated: (?P=name) -->)", re.S)
VALUE = re.compile(r"(?P<begin><!-- param: (?P<check>[A-Z]+-\d+)\.(?P<param>\w+)(?: (?P<fmt>%))? -->)"
                   r"(?P<text>.*?)(?P<end><!-- /param -->)")
CHECK_ID = re.compile(r"\b[A-Z]{2}-\d{3}\b")


class DocError(ValueError):
    """A page's marker names a block or a value the generators do not know."""


def format_value(value: float | str, fmt: str | None) -> str:
    """A param as a page shows it: the number as the checklist writes it, or a fraction as percent."""
    if fmt == "%":
        return f"{float(value) * 100:g} %"
    return str(value)


def param_text(data: SuiteData, check_id: str, name: str, fmt: str | None) -> str:
    by_id = data.checklist.by_id()
    if check_id not in by_id or name not in by_id[check_id].params:
        raise DocError(f"<!-- param: {check_id}.{name} -->: the checklist has no such check param")
    return format_value(by_id[check_id].params[name], fmt)


def splice(text: str, blocks: Mapping[str, str], value: Callable[[str, str, str | None], str],
           where: str = "page") -> str:
    """`text` with every generated block's body replaced by `blocks[name]` and every inline param by
    `value(check, param, fmt)`. A block name not in `blocks` is a DocError naming the page."""
    def block(m: re.Match[str]) -> str:
        name = m.group("name")
        if name not in blocks:
            raise DocError(f"{where}: <!-- generated: {name} -->: no generator of that name "
                           f"(known: {', '.join(sorted(blocks))})")
        return f"{m.group('begin')}\n{blocks[name]}\n{m.group('end')}"

    def inline(m: re.Match[str]) -> str:
        return m.group("begin") + value(m.group("check"), m.group("param"), m.group("fmt")) + m.group("end")

    return VALUE.sub(inline, BLOCK.sub(block, text))


def block_names(text: str) -> list[str]:
    return [m.group("name") for m in BLOCK.finditer(text)]


def hand_written(text: str) -> str:
    """`text` without its generated blocks and inline values: what a person wrote and keeps."""
    return VALUE.sub("", BLOCK.sub("", text))


# ---------------------------------------------------------------------------- one check, as the docs show it

def check_facts(c: Check, *, tests: tuple[str, ...] = (), variants: list[str] | None = None,
                not_applicable: list[str] | None = None,
                waiver: str | None = None, guards: list[str] | None = None,
                shown: list[str] | None = None) -> list[str]:
    """What the docs say of one check beyond its id, level, title and requirement: each a short line."""
    facts = []
    if c.params:
        facts.append("params: " + ", ".join(f"`{k}={v}`" for k, v in c.params.items()))
    if c.shape() is not None:
        facts.append(f"cluster: `{c.shape()}`")
    if not_applicable:
        facts.append("not applicable " + "; ".join(not_applicable))
    if waiver:
        facts.append(f"**waived**: {waiver}")
    if tests:
        facts.append("test: " + ", ".join(f"`{t}`" for t in tests))
    if variants:
        facts.append("broken variants: " + ", ".join(f"`{v}`" for v in variants))
    if shown:
        facts.append("a finding, never counted (no broken variant can fail it): shown recording its findings in "
                     + ", ".join(f"`{r}`" for r in shown))
    if guards:
        facts.append("false alarm guarded by: " + ", ".join(f"`{g}`" for g in guards)
                     + f" (`make test-check ID={c.id}` runs them)")
    return facts


def check_entry(c: Check, facts: list[str]) -> str:
    """One check as a list item: `- **ID** (LEVEL) title. requirement`, then its facts, one per line."""
    lines = [f"- **{c.id}** ({c.level}) {c.title}. {c.requirement}"]
    lines += [f"  - {f}" for f in facts]
    return "\n".join(lines)


def copied_params(text: str, names: set[str]) -> list[tuple[int, str]]:
    """Where hand-written `text` copies a param's value next to its name (`` `name` (30 ``, `` `name`, 30 ``,
    `` `name` = 30 ``, `` `name: 30` ``, `` `name=30` ``): such a copy goes stale when the checklist
    changes, so a page writes `<!-- param: ID.name -->` instead. (line number, the copy) each."""
    pattern = re.compile(r"`(?P<name>\w+)(?:`\s*(?:\(|=|:|,)\s*|\s*[=:]\s*)(?P<value>[\d.]+)")
    found = []
    for no, line in enumerate(text.splitlines(), 1):
        for m in pattern.finditer(line):
            if m.group("name") in names:
                found.append((no, m.group(0)))
    return found
