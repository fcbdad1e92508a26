"""What an area is: the one declaration the rest of the suite reads about it.

An area (device, topology, transport, ...) is a unit: its helpers in one package, its checks in
one folder, its checks' context (its type, how it is opened, which kind a check gets), its
cluster shapes, its per-run state under one stash key, its report section, its manifest block
and its doc. Each area declares all of that once, as
an `Area` (in `conformance/areas/<name>/area.py`), and `conformance.areas.AREAS` lists them. The
threshold lint, the core's `<area>_ctx` fixtures, the shape registry, fault isolation, the
report's links and the HTML page iterate that list; nothing else names the areas. The registry
lint checks it against tiers/vocabulary.yaml at every run.

Heavy parts are named by dotted reference ("pkg.module" or "pkg.module:attr") and imported only
when used, so reading the registry imports no Ray, torch or area code.
"""
from __future__ import annotations

import importlib
import re
from dataclasses import dataclass, field
from typing import Any, Iterable, Mapping

import pytest


@dataclass(frozen=True)
class HtmlSection:
    """One block of report.html an area renders from report.json.

    A block with a template of its own (templates/sections/<view>.html.j2) draws it; any other
    uses the generic one (title, charts, tables of escaped cells, notes)."""

    view: str                # the block's id (an anchor; templates/sections/<view>.html.j2 if it has one)
    title: str               # its heading (the generic template's, and the jump bar's when nav is "")
    render: str              # "module:function": parsed report -> the block's data
    notice: str = ""         # shown when the block has no data
    nav: str = ""            # the jump bar's shorter name


@dataclass(frozen=True)
class ContextDecl:
    """How an area's checks get their context, declared once: the one fixture `<area>_ctx` (built
    for every area by conformance.run.contexts.open_check_context) gives a check `base`, or the
    kind its DATA picks: the first of `by_tag` whose tag its checklist entry carries, else the
    kind `by_shape` names for the cluster shape its checklist entry names. A check's annotation (`recovery_ctx:
    NodeRecoveryCtx`) is held equal to that kind by a test; it never chooses it.

    Classes are "module:Class" and `opens` "module:function", imported when used: `opens(kind,
    base, lifetimes)` yields the check's context of `kind` (a CheckContext subclass) after the
    area's setup and runs its teardown after the check (conformance.run.contexts.Lifetimes: what
    outlives the check, closed when the module or the session ends)."""

    base: str
    opens: str
    by_tag: Mapping[str, str] = field(default_factory=dict, hash=False)
    by_shape: Mapping[str, str] = field(default_factory=dict, hash=False)

    def kind_ref(self, tags: Iterable[str], shape_name: str) -> str:
        """The pure rule: the kind (a "module:Class") a check with these tags and this cluster
        mark's shape ("shared" without a mark) receives."""
        carried = set(tags)
        for tag, ref in self.by_tag.items():
            if tag in carried:
                return ref
        return self.by_shape.get(shape_name, self.base)

    def kinds(self) -> tuple[str, ...]:
        """Every kind the rule can pick, base first."""
        return tuple(dict.fromkeys((self.base, *self.by_tag.values(), *self.by_shape.values())))


@dataclass(frozen=True)
class Area:
    """One check area, declared once (see the module docstring)."""

    name: str                          # tiers/vocabulary.yaml's area name
    prefix: str                        # its check id prefix there (DP, TL, ...)
    package: str                       # its helpers, e.g. conformance.areas.transport
    checks: str                        # its check modules, e.g. conformance.checks.transport
    doc: str                           # where a vendor reads how its checks work (docs/..., with anchor)
    context: ContextDecl | None = None  # what its checks receive as `<area>_ctx` (see ContextDecl)
    shapes: str = ""                   # module whose KINDS tuple holds the cluster shapes it adds
    state: "pytest.StashKey[Any] | None" = None   # its per-run state in config.stash
    section: str = ""                  # the report.json `sections` key it publishes
    html: tuple[HtmlSection, ...] = field(default_factory=tuple)
    disrupts_cluster: bool = False     # kills/restarts what it runs on: Ray's noise is expected then
    manifest_block: str = ""           # the manifest block it certifies ("" = the accelerator itself)
    manifest_refs: tuple[str, ...] = ()   # fields of that block naming Python objects ("pkg.module:Attr"),
                                          # which the preflight imports in a worker on every node
    doc_blocks: str = ""               # "module:function": SuiteData -> {block name: markdown}, the blocks
                                       # of its pages that `ray-conformance docs` fills (conformance.docgen.blocks)
    judges: str = ""                   # module whose JUDGES (conformance.report.judges.JudgeTable) holds the
                                       # judges its checks name (`judge:` in the checklist); pure, no Ray

    def checks_folder(self) -> str:
        """The check modules' folder, relative to the repository root (conformance/checks/<name>)."""
        return self.checks.replace(".", "/")

    def package_folder(self) -> str:
        return self.package.replace(".", "/")


def load_ref(ref: str) -> Any:
    """Import "pkg.module" (the module) or "pkg.module:attr" (the attribute)."""
    module, _, attr = ref.partition(":")
    obj: Any = importlib.import_module(module)
    for part in filter(None, attr.split(".")):
        obj = getattr(obj, part)
    return obj


def registry_problems(areas: tuple[Area, ...], vocabulary_areas: dict[str, str]) -> list[str]:
    """The registry against the vocabulary (area name -> id prefix): one line per disagreement.

    Both ways: an area the vocabulary declares but no `Area` implements has no checks anyone can
    run; an `Area` the vocabulary does not know could never carry a checklist item."""
    problems = []
    names = [a.name for a in areas]
    for dup in sorted({n for n in names if names.count(n) > 1}):
        problems.append(f"conformance.areas.AREAS: area {dup!r} is declared more than once")
    declared = {a.name: a for a in areas}
    for name, prefix in vocabulary_areas.items():
        area = declared.get(name)
        if area is None:
            problems.append(f"tiers/vocabulary.yaml declares area {name!r}, but conformance.areas.AREAS has no "
                            "Area for it (conformance/areas/<name>/area.py)")
        elif area.prefix != prefix:
            problems.append(f"area {name!r}: prefix {area.prefix!r} in its Area, {prefix!r} in tiers/vocabulary.yaml")
    for name in declared:
        if name not in vocabulary_areas:
            problems.append(f"conformance.areas.AREAS declares area {name!r}, which tiers/vocabulary.yaml does not "
                            "know (add it under areas: with its prefix)")
    for area in areas:
        if not area.package.startswith("conformance.areas.") or not area.checks.startswith("conformance.checks."):
            problems.append(f"area {area.name!r}: its package must live under conformance.areas. and its checks "
                            "under conformance.checks.")
        if not re.fullmatch(r"docs/[a-z0-9_.-]+\.md(#[a-z0-9-]+)?", area.doc):
            problems.append(f"area {area.name!r}: doc must be a page under docs/ with an optional #anchor "
                            f"(got {area.doc!r})")
        if area.state is not None and not isinstance(area.state, pytest.StashKey):
            problems.append(f"area {area.name!r}: state must be a pytest.StashKey (got {type(area.state).__name__})")
        if area.context is None:
            problems.append(f"area {area.name!r}: declares no context (Area.context: the base class its checks "
                            f"receive as {area.name}_ctx and the function that opens it)")
        else:
            refs = (area.context.opens, *area.context.kinds())
            bad = [r for r in refs if not re.fullmatch(r"conformance\.[a-z0-9_.]+:[A-Za-z_][A-Za-z0-9_]*", r)]
            if bad:
                problems.append(f"area {area.name!r}: context references must be \"conformance.module:Name\" "
                                f"(got {', '.join(map(repr, bad))})")
        if area.manifest_refs and not area.manifest_block:
            problems.append(f"area {area.name!r}: manifest_refs {list(area.manifest_refs)} name fields of no "
                            "manifest_block")
    keys = [a.state for a in areas if a.state is not None]
    for area in areas:
        if area.state is not None and sum(k is area.state for k in keys) > 1:
            problems.append(f"area {area.name!r}: its state key is another area's too (each area keeps its own "
                            "state under its own key)")
    return problems
