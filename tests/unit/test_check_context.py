"""One check context (conformance.run.check_context): every check function receives one typed
context from its area and nothing else, and thresholds reach code only through it.

The rules, read from the source (no Ray):
* a check function in conformance/checks/<area>/ takes exactly one argument, `<area>_ctx`;
* that fixture is the core's (conformance.run.fixtures, one per area), and the kind it gives is the
  area's rule over the check's data (Area.context: tags, cluster shape), never its annotation; the
  annotation is held equal to that kind here, with one line naming the check and both classes;
* check modules define no fixtures of their own, and neither do the areas;
* no code reads a threshold any other way: no `check_params` fixture, no `check_param()`,
  `area_param()` or `shared_param()`, no second `param()` beside Check.param and CheckContext.param.
"""
from __future__ import annotations

import ast
import importlib
import inspect
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

from conformance.areas import AREAS
from conformance.catalog.area import Area, ContextDecl, load_ref
from conformance.catalog.data import load_suite_data, load_vocabulary
from conformance.cluster.manager import SHARED
from conformance.run.check_context import CheckContext
from conformance.run.contexts import annotation_problem, context_kind

ROOT = Path(__file__).resolve().parents[2]
PACKAGE = ROOT / "conformance"
OTHER_DOORS = ("check_params", "check_param", "area_param", "shared_param")
# The one definition of a check's threshold lookup, and the context's door to it.
# (the scenario bounds' Protocol declares Check.param's signature: the same door, read without importing Check)
PARAM_DEFINITIONS = {("conformance/catalog/data.py", "Check"), ("conformance/run/check_context.py", "CheckContext"),
                     ("conformance/catalog/scenario_bounds.py", "Timed")}


def _check_functions(area: Area) -> list[tuple[Path, ast.FunctionDef]]:
    found = []
    for path in sorted((ROOT / area.checks_folder()).glob("test_*.py")):
        for node in ast.parse(path.read_text()).body:
            if isinstance(node, ast.FunctionDef) and node.name.startswith("test_"):
                found.append((path, node))
    return found


def _shape_of(check: Any) -> str:
    """The shape the check's checklist entry names, as the run reads it (the shared cluster for none)."""
    return check.shape() or SHARED.name


def _checks_with_functions(area: Area) -> list[tuple[Any, Any, str]]:
    """(checklist entry, check function, its shape) of every check function of the area."""
    by_id = load_suite_data().checklist.by_id()
    found = []
    for path, node in _check_functions(area):
        module = importlib.import_module(f"{area.checks}.{path.stem}")
        function = getattr(module, node.name)
        check_id = next(m.args[0] for m in function.pytestmark if m.name == "check")
        found.append((by_id[check_id], function, _shape_of(by_id[check_id])))
    return found


@pytest.mark.parametrize("area", AREAS, ids=lambda a: a.name)
def test_every_check_takes_its_areas_one_context(area: Area) -> None:
    wrong = [f"{p.relative_to(ROOT)}::{f.name}({', '.join(a.arg for a in f.args.args)})"
             for p, f in _check_functions(area) if [a.arg for a in f.args.args] != [f"{area.name}_ctx"]]
    assert _check_functions(area), f"no check functions found in {area.checks_folder()}"
    assert not wrong, f"checks of {area.name} must take exactly ({area.name}_ctx):\n" + "\n".join(wrong)


@pytest.mark.parametrize("area", AREAS, ids=lambda a: a.name)
def test_the_areas_context_kinds_are_check_contexts_and_it_opens_them(area: Area) -> None:
    assert area.context is not None, f"area {area.name} declares no context (Area.context)"
    for ref in area.context.kinds():
        kind = load_ref(ref)
        assert inspect.isclass(kind) and issubclass(kind, CheckContext), f"{area.name}: {ref} is not a CheckContext"
    assert inspect.isgeneratorfunction(load_ref(area.context.opens)), f"{area.context.opens} must yield the context"


@pytest.mark.parametrize("area", AREAS, ids=lambda a: a.name)
def test_every_checks_annotation_is_the_kind_its_data_picks(area: Area) -> None:
    wrong = [p for check, function, shape in _checks_with_functions(area)
             if (p := annotation_problem(area, check, shape, function)) is not None]
    assert not wrong, "\n".join(wrong)


def test_the_rules_read_only_declared_tags_and_shapes() -> None:
    from conformance.cluster.shapes import registry

    tags, shapes = load_vocabulary().tags, registry()
    for area in AREAS:
        assert area.context is not None
        assert set(area.context.by_tag) <= set(tags), (area.name, sorted(set(area.context.by_tag) - set(tags)))
        assert set(area.context.by_shape) <= set(shapes), (area.name, sorted(set(area.context.by_shape) - set(shapes)))


def test_the_rule_is_a_tag_then_the_shape_then_the_base() -> None:
    rule = ContextDecl(base="m:Base", opens="m:opens", by_tag={"t1": "m:T1", "t2": "m:T2"}, by_shape={"s": "m:S"})
    assert rule.kind_ref((), "shared") == "m:Base"
    assert rule.kind_ref(("x",), "s") == "m:S"
    assert rule.kind_ref(("t2", "t1"), "s") == "m:T1"      # the declaration's order decides, then the tag beats the shape
    assert rule.kinds() == ("m:Base", "m:T1", "m:T2", "m:S")


def test_an_annotation_that_disagrees_is_named_in_one_line() -> None:
    from conformance.areas.transport.context import TransportCtx

    def test_x(transport_ctx: TransportCtx) -> None: ...
    test_x.__annotations__["transport_ctx"] = TransportCtx   # a local name, which get_type_hints cannot resolve

    transport = next(a for a in AREAS if a.name == "transport")
    check = SimpleNamespace(id="TR-099", tags=("transport", "fault-twin"))
    assert context_kind(transport, check, "shared").__name__ == "UsageCtx"   # type: ignore[arg-type]
    problem = annotation_problem(transport, check, "shared", test_x)          # type: ignore[arg-type]
    assert problem is not None and "\n" not in problem
    assert problem.startswith("TR-099 (") and "annotated TransportCtx" in problem and "gives this check UsageCtx" in problem
    assert annotation_problem(transport, SimpleNamespace(id="TR-098", tags=("transport",)), "shared", test_x) is None  # type: ignore[arg-type]


@pytest.mark.parametrize("area", AREAS, ids=lambda a: a.name)
def test_check_modules_define_no_fixtures(area: Area) -> None:
    defined = []
    for path in sorted((ROOT / area.checks_folder()).glob("*.py")):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.FunctionDef) and any("fixture" in ast.unparse(d) for d in node.decorator_list):
                defined.append(f"{path.relative_to(ROOT)}::{node.name}")
    assert not defined, f"a check gets its context from the core's `{area.name}_ctx`; no fixtures in check modules: {defined}"


def test_no_area_defines_a_fixture() -> None:
    """The only fixtures are the core's (conformance.run.fixtures): an area declares its context."""
    defined = []
    for path in sorted((PACKAGE / "areas").rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.FunctionDef) and any("fixture" in ast.unparse(d) for d in node.decorator_list):
                defined.append(f"{path.relative_to(ROOT)}::{node.name}")
    assert not defined, f"areas declare their context (Area.context) and define no fixtures: {defined}"


def test_thresholds_have_one_door() -> None:
    found = []
    for path in sorted(PACKAGE.rglob("*.py")):
        rel = str(path.relative_to(ROOT))
        tree = ast.parse(path.read_text())
        for node in ast.walk(tree):
            if isinstance(node, ast.Name) and node.id in OTHER_DOORS:
                found.append(f"{rel}:{node.lineno}: {node.id}")
            elif isinstance(node, ast.arg) and node.arg in OTHER_DOORS:
                found.append(f"{rel}:{node.lineno}: argument {node.arg}")
            elif isinstance(node, ast.FunctionDef) and node.name in OTHER_DOORS:
                found.append(f"{rel}:{node.lineno}: def {node.name}")
        owners = {id(item): node.name for node in ast.walk(tree) if isinstance(node, ast.ClassDef) for item in node.body}
        for node in ast.walk(tree):
            if isinstance(node, ast.FunctionDef) and node.name == "param" and (rel, owners.get(id(node))) not in PARAM_DEFINITIONS:
                found.append(f"{rel}:{node.lineno}: {owners.get(id(node), 'a function')}.param")
    assert not found, "thresholds reach code only through ctx.param(name):\n" + "\n".join(found)
