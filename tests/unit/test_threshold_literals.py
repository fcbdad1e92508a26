"""No pass/fail threshold is a literal in check code: thresholds live in the checklist's `params`.

What the scan flags, in every area's check modules and helpers (each `Area` of conformance.areas
names its `checks` and `package`; nothing here lists the areas, so a new area is scanned the day it
is declared) and in the RDT harness they share (conformance/rdt), by reading their syntax trees
(so strings, comments and docstrings never count):

1. an ordering comparison (<, <=, >, >=) with a numeric literal other than 0 and 1 anywhere in
   either operand (`slow > 2.0`, `avail < 5 * size`, `count >= 3`), except a comparison with
   `len(...)` itself (a pair needs 2 endpoints; a message lists the first 3 problems: structure,
   not a threshold) and float-equality tolerances (|literal| < 1e-6);
2. a numeric literal other than 0 and 1 in the value of a keyword argument, or the default of a
   parameter, named like a time limit (timeout, timeout_s, bound_s, grace_s, within_s);
3. an UPPER_CASE module or class constant bound to an expression with such a literal whose name
   marks a threshold: ending in `_S` (seconds), or holding FRACTION, RATIO, UNIFORMITY,
   THRESHOLD, BOUND, or starting with MAX_ / MIN_.

A line that is not a pass/fail threshold says so with a `# knob: <why>` comment (a polling
interval, a hang guard far above every bound the checklist states, a payload size, a buffer
cap); the reviewer reads the reason. Everything else must come from the check's context,
`ctx.param(name)` (tests/unit/test_check_context.py holds that door shut to any other way).
"""
from __future__ import annotations

import ast
from pathlib import Path

import pytest

from conformance.areas import AREAS

REPO = Path(__file__).resolve().parents[2]
ROOT = REPO / "conformance"
TIME_LIMIT_NAMES = {"timeout", "timeout_s", "bound_s", "grace_s", "within_s"}
THRESHOLD_WORDS = ("FRACTION", "RATIO", "UNIFORMITY", "THRESHOLD", "BOUND")
ALLOWED = {0, 1}
KNOB_MARK = "# knob:"


def _literals(node: ast.AST) -> list[ast.Constant]:
    """Numeric literals (not bools) other than 0 and 1 inside an expression (-x counts as x);
    float-equality tolerances (0 < |x| < 1e-6) are not thresholds."""
    out = []
    for sub in ast.walk(node):
        if isinstance(sub, ast.Constant) and isinstance(sub.value, (int, float)) \
                and not isinstance(sub.value, bool) and sub.value not in ALLOWED \
                and not 0 < abs(sub.value) < 1e-6:
            out.append(sub)
    return out


def _is_len(node: ast.AST) -> bool:
    return isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "len"


def _threshold_name(name: str) -> bool:
    if not name.isupper() and not name.replace("_", "").isupper():
        return False
    return (name.endswith("_S") or any(w in name for w in THRESHOLD_WORDS)
            or name.startswith(("MAX_", "MIN_")))


def threshold_literals(source: str) -> list[tuple[int, str]]:
    """(line, what) for every threshold literal in `source` not marked `# knob:` on its line."""
    tree = ast.parse(source)
    lines = source.splitlines()
    hits: list[tuple[int, str]] = []

    def flag(node: ast.AST, what: str) -> None:
        lineno = getattr(node, "lineno", 0)
        text = lines[lineno - 1] if 0 < lineno <= len(lines) else ""
        end = getattr(node, "end_lineno", lineno) or lineno
        span = lines[lineno - 1:end]
        if any(KNOB_MARK in line for line in span) or KNOB_MARK in text:
            return
        hits.append((lineno, what))

    for node in ast.walk(tree):
        if isinstance(node, ast.Compare) and any(isinstance(op, (ast.Lt, ast.LtE, ast.Gt, ast.GtE))
                                                 for op in node.ops) \
                and not any(_is_len(x) for x in [node.left, *node.comparators]):
            for lit in _literals(node):
                flag(node, f"comparison with literal {lit.value!r}: {ast.unparse(node)[:80]}")
                break
        elif isinstance(node, ast.keyword) and node.arg in TIME_LIMIT_NAMES:
            for lit in _literals(node.value):
                flag(node.value, f"{node.arg}= literal {lit.value!r}")
                break
        elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            args = node.args.args + node.args.kwonlyargs
            defaults = [None] * (len(node.args.args) - len(node.args.defaults)) + list(node.args.defaults) \
                + list(node.args.kw_defaults)
            for arg, default in zip(args, defaults):
                if default is not None and arg.arg in TIME_LIMIT_NAMES:
                    for lit in _literals(default):
                        flag(default, f"default {arg.arg}={lit.value!r}")
                        break
        elif isinstance(node, (ast.Module, ast.ClassDef)):
            for stmt in node.body:
                targets = stmt.targets if isinstance(stmt, ast.Assign) else \
                    [stmt.target] if isinstance(stmt, ast.AnnAssign) and stmt.value is not None else []
                for t in targets:
                    if isinstance(t, ast.Name) and _threshold_name(t.id):
                        for lit in _literals(stmt.value):  # type: ignore[union-attr]
                            flag(stmt, f"constant {t.id} = literal {lit.value!r}")
                            break
    return sorted(set(hits))


# The RDT harness: core, not an area, but the transport, performance and recovery checks wait
# on its bounds, so its literals are scanned like theirs.
HARNESS = "conformance/rdt"


def scanned_files() -> list[Path]:
    folders = {f for a in AREAS for f in (a.checks_folder(), a.package_folder())} | {HARNESS}
    return sorted({p for d in folders for p in (REPO / d).rglob("*.py")})


def test_no_threshold_literal_in_check_code() -> None:
    found = [f"{p.relative_to(ROOT.parent)}:{line}: {what}"
             for p in scanned_files() for line, what in threshold_literals(p.read_text())]
    assert not found, ("pass/fail thresholds belong in the checklist's params (or mark a non-threshold "
                       "line `# knob: <why>`):\n  " + "\n  ".join(found))


def test_the_scan_covers_the_check_modules() -> None:
    names = {p.name for p in scanned_files()}
    assert {"test_performance_transport.py", "bounds.py", "memory.py"} <= names
    for area in AREAS:   # every declared area contributes its checks and its helpers
        assert any(p.is_relative_to(REPO / area.checks_folder()) for p in scanned_files()), area.name
        assert any(p.is_relative_to(REPO / area.package_folder()) for p in scanned_files()), area.name


@pytest.mark.parametrize("snippet", [
    "if slow > 2.0:\n    pass\n",
    "ok = avail < 5 * size\n",
    "ok = count >= 3\n",
    "ray.get(ref, timeout=60)\n",
    "f(x, bound_s=30.0)\n",
    "def alive(actor, timeout_s: float = 5.0):\n    pass\n",
    "UNIFORMITY = 0.25\n",
    "MAX_MATRIX_ENDPOINTS = 8\n",
    "DEVICE_RELEASE_S = 30\n",
    "class K:\n    GROUP_TIMEOUT_S = 20.0\n",
    "ok = x > -3\n",
    "ok = b.count >= 2\n",
])
def test_the_scan_flags_threshold_literals(snippet: str) -> None:
    assert threshold_literals(snippet), snippet


@pytest.mark.parametrize("snippet", [
    "if n == 2:\n    pass\n",                              # equality is an identity, not a threshold
    "ok = len(x) > 0 and y >= 1.0\n",                      # 0 and 1 are not thresholds
    "ray.get(ref, timeout=bound)\n",
    "size = 64 << 10\n",                                    # not a threshold name
    "LIMIT_S = params['bound_s']\n",
    "s = 'slow > 2.0'\n",                                    # strings never count
    "time.sleep(0.05)\n",
    "if len(eps) < 2:\n    pass\n",                     # structure: a pair needs two endpoints
    "ok = a >= b - 1e-9\n",                                # float tolerance
    "ok = slow > 2.0  # knob: a polling slice, not a requirement\n",
    "WAIT_S = 600.0  # knob: hang guard far above every bound\n",
])
def test_the_scan_leaves_non_thresholds_alone(snippet: str) -> None:
    assert threshold_literals(snippet) == [], snippet


# ------------------------------------------------------------------------------ params vs texts
def stated_forms(name: str, value: object) -> list[str]:
    """How a requirement text states a numeric param: '30 s' for a bound, '10%' or '0.1' else."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return []
    forms = [f"{value:g} s"] if name.endswith("_s") else [f"{value:g}"]
    if isinstance(value, int):
        forms.append(str(value))
    if name.endswith("_bytes") and value > 0:  # sizes read better in binary units
        for unit, size in (("GiB", 1 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10)):
            if value % size == 0:
                forms.append(f"{value // size} {unit}")
                break
    if 0 < value < 1:
        forms.append(f"{value:.0%}")
    return forms


def test_every_numeric_param_is_stated_in_its_requirement() -> None:
    import re

    from conformance.catalog.data import load_checklist

    unstated = []
    for c in load_checklist().active():
        for name, value in c.params.items():
            forms = stated_forms(name, value)
            if forms and not any(re.search(rf"(?<![\d.]){re.escape(f)}(?!\d)", c.requirement) for f in forms):
                unstated.append(f"{c.id}.params.{name}={value} (as {' or '.join(forms)})")
    assert not unstated, "requirement texts must state their params: " + "; ".join(unstated)


@pytest.mark.parametrize("name, value, fragment", [
    ("actor_ready_s", -1, "params.actor_ready_s"),
    ("actor_ready_s", float("nan"), "params.actor_ready_s"),
    ("min_link_bandwidth_fraction", 1.5, "params.min_link_bandwidth_fraction"),
    ("stress_rounds", 2.5, "params.stress_rounds"),
    ("min_ratio_to_object_store", 0, "params.min_ratio_to_object_store"),
])
def test_the_checklist_schema_types_params(name: str, value: object, fragment: str) -> None:
    from conformance.catalog.data import parse_checklist
    from conformance.errors import UserError

    doc = {"schema_version": 1, "checks": [
        {"id": "FR-001", "title": "abc", "area": "recovery", "level": "MUST", "requirement": "MUST do x.",
         "rationale": "because of y.", "since": "0.1.0", "params": {name: value}}]}
    with pytest.raises(UserError, match=fragment.replace(".", r"\.")):
        parse_checklist(doc)


def test_every_declared_param_is_read_by_some_code() -> None:
    """A param the checklist declares that no module of the suite names (as a string, a keyword or
    an attribute) is read by nothing: it would pass every test while the check ignored it."""
    from pathlib import Path

    from conformance.catalog.data import load_suite_data

    names = _names_in(set((Path(__file__).resolve().parents[2] / "conformance").rglob("*.py")))
    unread = [f"{c.id}.{k}" for c in load_suite_data().checklist.active() for k in c.params if k not in names]
    assert not unread, f"declared params no code reads: {unread}"


def _names_in(paths: "set[Path]") -> set[str]:
    """Every string constant, keyword and attribute name in these modules."""
    import ast

    names: set[str] = set()
    for path in paths:
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            if isinstance(node, ast.Constant) and isinstance(node.value, str):
                names.add(node.value)
            elif isinstance(node, ast.keyword) and node.arg:
                names.add(node.arg)
            elif isinstance(node, ast.Attribute):
                names.add(node.attr)
    return names


def _suite_modules_imported_by(path: "Path", root: "Path") -> set["Path"]:
    """The suite's modules `path` imports from directly (`from conformance.x import y`: x, and y
    where y is a module)."""
    import ast

    out: set[Path] = set()
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.ImportFrom) and node.module and node.module.startswith("conformance."):
            base = root.joinpath(*node.module.split("."))
            for candidate in [base.with_suffix(".py"), base / "__init__.py", *(base / f"{a.name}.py" for a in node.names)]:
                if candidate.exists():
                    out.add(candidate)
    return out


def test_each_checks_params_are_read_by_its_own_code() -> None:
    """Issue 47 (D3d): each param a check declares is read by that check's own code: the module
    that marks it, the suite modules that module imports from, or its judge's module. A param
    read only by another check's code (the global test above would pass it) is one this check
    ignores."""
    import re
    import sys
    from pathlib import Path

    from conformance.catalog.data import load_suite_data
    from conformance.report.judges import judge_for

    root = Path(__file__).resolve().parents[2]
    marks: dict[str, set[Path]] = {}
    for path in (root / "conformance" / "checks").rglob("*.py"):
        for m in re.finditer(r'check\("([A-Z]{2}-\d{3})"\)', path.read_text()):
            marks.setdefault(m.group(1), set()).add(path)
    unread = []
    for c in load_suite_data().checklist.active():
        own = set(marks.get(c.id, set()))
        for path in list(own):
            own |= _suite_modules_imported_by(path, root)
        judge = judge_for(c)
        if judge is not None:
            own.add(Path(sys.modules[judge.decide.__module__].__file__ or ""))
        names = _names_in(own) | set(judge.params if judge is not None else ())
        unread += [f"{c.id}.{k}" for k in c.params if k not in names]
    assert not unread, f"declared params their own check's code does not read: {unread}"
