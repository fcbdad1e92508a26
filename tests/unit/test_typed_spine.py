"""The typed spine holds (issue 47): types that say what a value is, modules of one job.

Read off the source with `ast` (pure, no import of the package):

* no parameter is named `report` or `manifest` and typed bare `Any`: a report is a typed view
  (conformance/report/view.py) or, where verify judges the JSON as signed, `Untrusted`
  (conformance/jsontypes.py); a manifest is `Manifest` or the recorded JSON its reader narrows;
* fewer than MAX_BARE_ANY parameters in conformance/ are typed bare `Any`. What counts: every
  positional and keyword parameter annotated exactly `Any`. What does not: `*args: Any` and
  `**kwargs: Any`, which pass a callee's arguments on unchanged (Ray's `.remote(*args)`,
  `ray.kill(actor, *args, **kwargs)`): their types are the callee's, not this code's. Where `Any`
  is right (a vendor's object the suite inspects, a Ray value Ray types loosely) the line says why,
  and it counts;
* no module of conformance/ is longer than MAX_MODULE_LINES lines.
"""
from __future__ import annotations

import ast
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[2] / "conformance"
MAX_BARE_ANY = 60          # the bound: strictly fewer than this many bare-Any parameters
MAX_MODULE_LINES = 500


def _modules() -> list[Path]:
    return sorted(PACKAGE.rglob("*.py"))


def bare_any_parameters(source: str, name: str = "<source>") -> list[str]:
    """`name:line function(parameter)` for each parameter annotated exactly `Any` (or `typing.Any`),
    leaving out *args and **kwargs (see the module's docstring)."""
    found = []
    for node in ast.walk(ast.parse(source)):
        if not isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            continue
        a = node.args
        for arg in (*a.posonlyargs, *a.args, *a.kwonlyargs):
            if arg.annotation is not None and ast.unparse(arg.annotation) in ("Any", "typing.Any"):
                found.append(f"{name}:{arg.lineno} {node.name}({arg.arg})")
    return found


def _all_bare_any() -> list[str]:
    return [hit for p in _modules() for hit in bare_any_parameters(p.read_text(), str(p.relative_to(PACKAGE.parent)))]


def test_the_counter_counts_what_the_rule_says() -> None:
    src = ("from typing import Any\nimport typing\n"
           "def f(a: Any, b: 'int', *args: Any, c: typing.Any = 1, **kw: Any) -> Any: ...\n"
           "async def g(x: dict[str, Any], /, y: Any) -> None: ...\n")
    assert bare_any_parameters(src, "m.py") == ["m.py:3 f(a)", "m.py:3 f(c)", "m.py:4 g(y)"]


def test_no_report_or_manifest_is_typed_any() -> None:
    bad = [h for h in _all_bare_any() if h.endswith(("(report)", "(manifest)"))]
    assert not bad, "report/manifest typed Any (use report.view.Report, jsontypes.Untrusted or Manifest):\n  " + \
        "\n  ".join(bad)


def test_fewer_than_the_bound_of_bare_any_parameters() -> None:
    found = _all_bare_any()
    assert len(found) < MAX_BARE_ANY, (
        f"{len(found)} parameters typed bare Any in conformance/ (the bound: fewer than {MAX_BARE_ANY}); type the "
        "new ones (jsontypes for JSON, handles.Actor for an actor, object for a value narrowed by isinstance):\n  "
        + "\n  ".join(found))


def test_no_module_is_over_the_line_bound() -> None:
    long = [f"{p.relative_to(PACKAGE.parent)}: {n} lines" for p in _modules()
            if (n := len(p.read_text().splitlines())) > MAX_MODULE_LINES]
    assert not long, f"modules over {MAX_MODULE_LINES} lines (split each by job):\n  " + "\n  ".join(long)
