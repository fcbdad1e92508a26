"""The Area declaration is load-bearing: the core reads every field of it (pure; no Ray)."""
from __future__ import annotations

import dataclasses
import re
from pathlib import Path
from types import SimpleNamespace

import pytest

from conformance.areas import AREAS
from conformance.catalog.area import Area, ContextDecl, load_ref, registry_problems
from conformance.run.preflight import manifest_refs
from conformance.run.session import ConformanceRun, declared_sections

CORE = Path(__file__).resolve().parents[2] / "conformance"


def test_every_area_field_is_read_outside_the_areas() -> None:
    core = "\n".join(p.read_text() for p in CORE.rglob("*.py") if "areas" not in p.relative_to(CORE).parts)
    unread = [f.name for f in dataclasses.fields(Area) if not re.search(rf"\.{f.name}\b", core)]
    assert not unread, f"Area fields nothing outside conformance/areas reads: {unread}"


def test_the_preflight_imports_what_the_areas_declare() -> None:
    data = {"accelerator": {"manager": "v.m:Manager"}, "topology": {"provider": "v.t:describe"},
            "transport": {"manager": "v.x:Transport"}, "collective": {"group_class": "v.c:Group"}}
    assert manifest_refs(data) == {"accelerator.manager": "v.m:Manager", "topology.provider": "v.t:describe",
                                   "transport.manager": "v.x:Transport"}
    assert manifest_refs({"accelerator": {"manager": "v.m:Manager"}}) == {"accelerator.manager": "v.m:Manager"}


def test_publish_accepts_only_a_section_an_area_declares() -> None:
    assert declared_sections() == {a.section for a in AREAS if a.section}
    run = SimpleNamespace(sections={})
    section = next(iter(declared_sections()))
    ConformanceRun.publish(run, section, {"markdown": "", "data": {}})
    assert section in run.sections
    with pytest.raises(ValueError, match="no area declares that section"):
        ConformanceRun.publish(run, "Networking", {})


def test_the_registry_lint_holds_state_keys_and_manifest_refs() -> None:
    key = pytest.StashKey[int]()
    a = Area(name="a", prefix="AA", package="conformance.areas.a", checks="conformance.checks.a", doc="docs/a.md",
             state=key, context=ContextDecl(base="conformance.areas.a.context:ACtx", opens="conformance.areas.a.fixtures:open"))
    b = dataclasses.replace(a, name="b", prefix="BB", package="conformance.areas.b", checks="conformance.checks.b",
                            manifest_refs=("manager",))
    problems = registry_problems((a, b), {"a": "AA", "b": "BB"})
    assert "area 'b': manifest_refs ['manager'] name fields of no manifest_block" in problems
    assert sum("its state key is another area's too" in p for p in problems) == 2
    assert registry_problems((a,), {"a": "AA"}) == []
    bare = dataclasses.replace(a, context=None)
    assert registry_problems((bare,), {"a": "AA"}) == [
        "area 'a': declares no context (Area.context: the base class its checks receive as a_ctx and the function "
        "that opens it)"]
    typo = dataclasses.replace(a, context=ContextDecl(base="ACtx", opens="conformance.areas.a.fixtures:open"))
    assert registry_problems((typo,), {"a": "AA"}) == [
        "area 'a': context references must be \"conformance.module:Name\" (got 'ACtx')"]


def test_every_report_html_block_is_drawn_by_its_own_area() -> None:
    """report.html draws an area's blocks only through the registry, with the area's own code:
    no renderer of an area lives in the core (conformance/report/html/ draws the page around them)."""
    for area in AREAS:
        for block in area.html:
            assert block.render.split(":")[0].startswith(area.package + "."), (area.name, block.render)
            assert callable(load_ref(block.render)), (area.name, block.render)
