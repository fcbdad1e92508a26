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
