"""One check context (conformance.run.check_context): every check function receives one typed
context from its area and nothing else, and thresholds reach code only through it.

The rules, read from the source (no Ray):
* a check function in conformance/checks/<area>/ takes exactly one argument, `<area>_ctx`;
* that fixture lives in the area's one fixture module (its `Area.fixtures`) and returns a
  subclass of CheckContext;
* check modules define no fixtures of their own;
* no code reads a threshold any other way: no `check_params` fixture, no `check_param()`,
  `area_param()` or `shared_param()`, no second `param()` beside Check.param and CheckContext.param.
"""
from __future__ import annotations

import ast
import inspect
import typing
from pathlib import Path

import pytest

from conformance.areas import AREAS
from conformance.catalog.area import Area, load_ref
from conformance.run.check_context import CheckContext

ROOT = Path(__file__).resolve().parents[2]
PACKAGE = ROOT / "conformance"
OTHER_DOORS = ("check_params", "check_param", "area_param", "shared_param")
# The one definition of a check's threshold lookup, and the context's door to it.
PARAM_DEFINITIONS = {("conformance/catalog/data.py", "Check"), ("conformance/run/check_context.py", "CheckContext")}


def _check_functions(area: Area) -> list[tuple[Path, ast.FunctionDef]]:
    found = []
    for path in sorted((ROOT / area.checks_folder()).glob("test_*.py")):
        for node in ast.parse(path.read_text()).body:
            if isinstance(node, ast.FunctionDef) and node.name.startswith("test_"):
                found.append((path, node))
    return found


def _fixture_type(area: Area) -> type:
    fixture = getattr(load_ref(area.fixtures), f"{area.name}_ctx")
    function = getattr(fixture, "_get_wrapped_function", lambda: getattr(fixture, "__wrapped__", fixture))()
    returned = typing.get_type_hints(function)["return"]
    if typing.get_origin(returned) is not None:  # Iterator[X] / Generator[X, ...] of a yield fixture
        returned = typing.get_args(returned)[0]
    return returned  # type: ignore[no-any-return]


@pytest.mark.parametrize("area", AREAS, ids=lambda a: a.name)
def test_every_check_takes_its_areas_one_context(area: Area) -> None:
    wrong = [f"{p.relative_to(ROOT)}::{f.name}({', '.join(a.arg for a in f.args.args)})"
             for p, f in _check_functions(area) if [a.arg for a in f.args.args] != [f"{area.name}_ctx"]]
    assert _check_functions(area), f"no check functions found in {area.checks_folder()}"
    assert not wrong, f"checks of {area.name} must take exactly ({area.name}_ctx):\n" + "\n".join(wrong)


@pytest.mark.parametrize("area", AREAS, ids=lambda a: a.name)
def test_the_areas_context_fixture_is_a_check_context(area: Area) -> None:
    assert area.fixtures, f"area {area.name} declares no fixture module"
    returned = _fixture_type(area)
    assert inspect.isclass(returned) and issubclass(returned, CheckContext), (
        f"{area.fixtures}:{area.name}_ctx returns {returned!r}, not a CheckContext subclass")


@pytest.mark.parametrize("area", AREAS, ids=lambda a: a.name)
def test_check_modules_define_no_fixtures(area: Area) -> None:
    defined = []
    for path in sorted((ROOT / area.checks_folder()).glob("*.py")):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.FunctionDef) and any("fixture" in ast.unparse(d) for d in node.decorator_list):
                defined.append(f"{path.relative_to(ROOT)}::{node.name}")
    assert not defined, f"fixtures belong in {area.fixtures}, not in check modules: {defined}"


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
