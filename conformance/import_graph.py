"""The suite's own import graph, read from the source (no import is executed).

Every `import conformance...` / `from conformance... import ...` counts, at module level or inside
a function (a lazy import still ties the two modules together). An `if TYPE_CHECKING:` block is
never run, so the run's graph leaves it out; `import_graph(type_checking=True)` counts it too (a
type-only import that closes a circle still ties the two modules: each must be read to understand
the other). tests/unit/test_import_graph_units.py keeps both graphs free of cycles.
"""
from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parent


def module_names(root: Path = ROOT) -> dict[str, Path]:
    """Dotted name → file, for every module of the package (packages by their __init__)."""
    out = {}
    for path in sorted(root.rglob("*.py")):
        parts = list(path.relative_to(root.parent).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts = parts[:-1]
        out[".".join(parts)] = path
    return out


def _is_type_checking(test: ast.expr) -> bool:
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or \
        (isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING")


def _imports(tree: ast.AST, here: str, is_package: bool, modules: set[str], type_checking: bool = False) -> set[str]:
    """The modules `here` imports. `from pkg import sub` imports the module pkg.sub (pkg itself
    is only initialised first, as for every submodule); `from pkg import name` imports pkg.
    `type_checking`: count the imports inside `if TYPE_CHECKING:` too."""
    found: set[str] = set()

    def visit(node: ast.AST) -> None:
        if not type_checking and isinstance(node, ast.If) and _is_type_checking(node.test):
            for stmt in node.orelse:
                visit(stmt)
            return
        if isinstance(node, ast.Import):
            found.update(a.name for a in node.names)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = here.split(".") if is_package else here.split(".")[:-1]
                base = base[:len(base) - (node.level - 1)]
                mod = ".".join(base + ([node.module] if node.module else []))
            else:
                mod = node.module or ""
            for alias in node.names:
                sub = f"{mod}.{alias.name}"
                found.add(sub if sub in modules else mod)
        for child in ast.iter_child_nodes(node):
            visit(child)

    visit(tree)
    return found


def import_graph(root: Path = ROOT, *, type_checking: bool = False) -> dict[str, set[str]]:
    """Module → the package's modules it imports (names that are not modules are dropped);
    `type_checking`: with the imports of `if TYPE_CHECKING:` blocks (the type checker's graph)."""
    modules = module_names(root)
    graph = {}
    for name, path in modules.items():
        tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
        wanted = _imports(tree, name, path.name == "__init__.py", set(modules), type_checking)
        graph[name] = {m for m in wanted if m in modules and m != name}
    return graph


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components with more than one module (Tarjan), each sorted."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    out: list[list[str]] = []
    counter = [0]

    def strong(v: str) -> None:
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on_stack.add(v)
        for w in sorted(graph.get(v, ())):
            if w not in index:
                strong(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                out.append(sorted(comp))

    for v in sorted(graph):
        if v not in index:
            strong(v)
    return sorted(out)
