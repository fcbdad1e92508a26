"""Which test evidences which check: read from the check modules' `@pytest.mark.check` marks.

One index, used by the docs table that answers "for check X: its requirement, its params, its
test and its broken variant" and by the teeth table's runner (tests/support/teeth.py), which selects the
tests of the checks a run names. Read statically (ast), so nothing is imported or run.
"""
from __future__ import annotations

import ast
import functools
from pathlib import Path
from typing import Any

CHECKS_DIR = Path(__file__).resolve().parent.parent / "checks"


@functools.lru_cache(maxsize=4)
def tests_of_checks(checks_dir: Path = CHECKS_DIR) -> dict[str, tuple[str, ...]]:
    """check id -> the test functions (area/file::name, relative to checks_dir) marked with it."""
    found: dict[str, list[str]] = {}
    for path in sorted(Path(checks_dir).rglob("test_*.py")):
        tree = ast.parse(path.read_text())
        for node in tree.body:
            if not isinstance(node, ast.FunctionDef):
                continue
            for dec in node.decorator_list:
                if (isinstance(dec, ast.Call) and isinstance(dec.func, ast.Attribute) and dec.func.attr == "check"
                        and dec.args and isinstance(dec.args[0], ast.Constant)
                        and isinstance(dec.args[0].value, str)):
                    found.setdefault(dec.args[0].value, []).append(
                        f"{path.relative_to(checks_dir).as_posix()}::{node.name}")
    return {k: tuple(v) for k, v in found.items()}


def variants_of_checks(teeth_table: dict[str, Any]) -> dict[str, list[str]]:
    """check id -> the broken variants (teeth table run ids, or the test elsewhere) that must fail it."""
    found: dict[str, list[str]] = {}
    for run in teeth_table.get("runs", []):
        for cid in run.get("catches") or {}:
            found.setdefault(cid, []).append(run["id"])
        for cid in run.get("waived") or []:
            found.setdefault(cid, []).append(f"{run['id']} (waived: a limit of Ray's, tiers/waivers.yaml)")
    for cid, where in (teeth_table.get("elsewhere") or {}).items():
        found.setdefault(cid, []).append(where)
    return found


def guards_of_checks(teeth_table: dict[str, Any]) -> dict[str, list[str]]:
    """check id -> the good runs that guard it against a known false alarm (a row's `guards`)."""
    found: dict[str, list[str]] = {}
    for run in teeth_table.get("runs", []):
        for cid in run.get("guards") or []:
            found.setdefault(cid, []).append(run["id"])
    return found


def check_module(name: str, checks_dir: Path = CHECKS_DIR) -> Path:
    """The check module called `name` (`test_device_live.py`), in whichever area folder it lives."""
    found = sorted(Path(checks_dir).rglob(name))
    if len(found) != 1:
        raise LookupError(f"{name}: expected one check module of that name under {checks_dir}, found {len(found)}")
    return found[0]


def _cluster_mark(node: ast.AST) -> str | None:
    """The shape of a `pytest.mark.cluster("shape")` expression, else None."""
    if (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "cluster"
            and node.args and isinstance(node.args[0], ast.Constant) and isinstance(node.args[0].value, str)):
        return node.args[0].value
    return None


@functools.lru_cache(maxsize=4)
def shapes_of_checks(checks_dir: Path = CHECKS_DIR) -> dict[str, tuple[str, ...]]:
    """check id -> the cluster shapes its tests are marked with (the module's `pytestmark` or the
    test's own mark); a check whose tests need no cluster is absent."""
    found: dict[str, list[str]] = {}
    for path in sorted(Path(checks_dir).rglob("test_*.py")):
        tree = ast.parse(path.read_text())
        module_shapes: list[str] = []
        for node in tree.body:
            if isinstance(node, ast.Assign) and any(isinstance(t, ast.Name) and t.id == "pytestmark"
                                                    for t in node.targets):
                marks = node.value.elts if isinstance(node.value, (ast.List, ast.Tuple)) else [node.value]
                module_shapes += [s for s in map(_cluster_mark, marks) if s]
        for node in tree.body:
            if not isinstance(node, ast.FunctionDef):
                continue
            own = [s for s in map(_cluster_mark, node.decorator_list) if s] or module_shapes
            for dec in node.decorator_list:
                if (isinstance(dec, ast.Call) and isinstance(dec.func, ast.Attribute) and dec.func.attr == "check"
                        and dec.args and isinstance(dec.args[0], ast.Constant)):
                    bucket = found.setdefault(str(dec.args[0].value), [])
                    bucket += [s for s in own if s not in bucket]
    return {k: tuple(v) for k, v in found.items() if v}
