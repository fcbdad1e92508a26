"""What one module uses of Ray, read from its syntax tree: imports, attribute paths, calls.

A name bound to a Ray module or symbol (`import ray`, `from ray.util import collective as col`,
`from ray.experimental.rdt import register_tensor_transport`) is followed wherever the module
uses it: `col.allreduce(...)` is the use of `ray.util.collective.allreduce` with one positional
argument. A use inside `try: ... except ImportError` (or any handler that would catch it) is
optional: the module was written to live without it, so its absence is a note, not a break; one
under `if TYPE_CHECKING:` is a type hint only, never run.
"""
from __future__ import annotations

import ast
from dataclasses import dataclass, field
from pathlib import Path

# Handlers that catch a failed import or a missing attribute.
CATCHING = {"ImportError", "ModuleNotFoundError", "AttributeError", "Exception", "BaseException"}


@dataclass(frozen=True)
class CallShape:
    positional: int
    keywords: tuple[str, ...]
    star: bool      # *args in the call
    dstar: bool     # **kwargs in the call


@dataclass(frozen=True)
class Use:
    kind: str            # "import" | "attribute" | "call"
    target: str          # the dotted Ray path, e.g. ray.util.collective.allreduce
    path: str
    line: int
    optional: bool = False
    type_only: bool = False
    call: CallShape | None = field(default=None)

    @property
    def where(self) -> str:
        return f"{self.path}:{self.line}" if self.line else self.path


def shape_of(call: ast.Call) -> CallShape:
    return CallShape(positional=sum(1 for a in call.args if not isinstance(a, ast.Starred)),
                     keywords=tuple(k.arg for k in call.keywords if k.arg is not None),
                     star=any(isinstance(a, ast.Starred) for a in call.args),
                     dstar=any(k.arg is None for k in call.keywords))


def _catches(handler: ast.ExceptHandler) -> bool:
    if handler.type is None:
        return True
    names = handler.type.elts if isinstance(handler.type, ast.Tuple) else [handler.type]
    return any((n.id if isinstance(n, ast.Name) else n.attr if isinstance(n, ast.Attribute) else "") in CATCHING
               for n in names)


def _is_type_checking(test: ast.expr) -> bool:
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or \
        (isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING")


def absolute(module: str, is_package: bool, level: int, target: str | None) -> str:
    if not level:
        return target or ""
    base = module.split(".") if is_package else module.split(".")[:-1]
    base = base[:len(base) - (level - 1)]
    return ".".join(base + ([target] if target else []))


def _chain(node: ast.expr) -> list[str] | None:
    """a.b.c → ['a', 'b', 'c']; None for anything that is not a plain name path."""
    parts: list[str] = []
    while isinstance(node, ast.Attribute):
        parts.append(node.attr)
        node = node.value
    if not isinstance(node, ast.Name):
        return None
    return [node.id, *reversed(parts)]


class _Scanner:
    def __init__(self, module: str, is_package: bool, path: str) -> None:
        self.module, self.is_package, self.path = module, is_package, path
        self.bound: dict[str, str] = {}       # local name → the Ray path it stands for
        self.uses: list[Use] = []
        self.local_imports: set[str] = set()  # the non-Ray modules this module imports
        self.assigned: set[str] = set()       # Ray paths this module sets itself (its own attributes)

    def bind(self, tree: ast.Module) -> None:
        for node in ast.walk(tree):
            if isinstance(node, ast.Import):
                for alias in node.names:
                    if alias.name == "ray" or alias.name.startswith("ray."):
                        if alias.asname:
                            self.bound[alias.asname] = alias.name
                        else:
                            self.bound["ray"] = "ray"
                    else:
                        self.local_imports.add(alias.name)
            elif isinstance(node, ast.ImportFrom):
                source = absolute(self.module, self.is_package, node.level, node.module)
                if source == "ray" or source.startswith("ray."):
                    for alias in node.names:
                        if alias.name != "*":
                            self.bound[alias.asname or alias.name] = f"{source}.{alias.name}"
                else:
                    self.local_imports.add(source)
                    self.local_imports.update(f"{source}.{a.name}" for a in node.names if a.name != "*")

    def visit(self, node: ast.AST, optional: bool = False, type_only: bool = False) -> None:
        if isinstance(node, ast.Try):
            guarded = any(_catches(h) for h in node.handlers)
            for stmt in node.body:
                self.visit(stmt, optional or guarded, type_only)
            for part in (*node.handlers, *node.orelse, *node.finalbody):
                self.visit(part, optional, type_only)
            return
        if isinstance(node, ast.If) and _is_type_checking(node.test):
            for stmt in node.body:
                self.visit(stmt, optional, True)
            for stmt in node.orelse:
                self.visit(stmt, optional, type_only)
            return
        if isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name == "ray" or alias.name.startswith("ray."):
                    self.uses.append(Use("import", alias.name, self.path, node.lineno, optional, type_only))
            return
        if isinstance(node, ast.ImportFrom):
            source = absolute(self.module, self.is_package, node.level, node.module)
            if source == "ray" or source.startswith("ray."):
                for alias in node.names:
                    imported = source if alias.name == "*" else f"{source}.{alias.name}"
                    self.uses.append(Use("import", imported, self.path, node.lineno, optional, type_only))
            return
        if isinstance(node, ast.Call):
            target = self._target(node.func)
            if target is not None:
                self.uses.append(Use("call", target, self.path, node.lineno, optional, type_only, shape_of(node)))
                for child in [*node.args, *node.keywords]:
                    self.visit(child, optional, type_only)
                return
        if isinstance(node, ast.Attribute):
            if self._attribute(node, optional, type_only):
                return
        for child in ast.iter_child_nodes(node):
            self.visit(child, optional, type_only)

    def _target(self, func: ast.expr) -> str | None:
        chain = _chain(func)
        if chain is None or chain[0] not in self.bound:
            return None
        return ".".join([self.bound[chain[0]], *chain[1:]])

    def _attribute(self, node: ast.Attribute, optional: bool, type_only: bool) -> bool:
        target = self._target(node)
        if target is None:
            return False
        if isinstance(node.ctx, (ast.Store, ast.Del)):
            self.assigned.add(target)
            return True
        self.uses.append(Use("attribute", target, self.path, node.lineno, optional, type_only))
        return True


def scan(source: str | ast.Module, *, module: str, is_package: bool, path: str) -> tuple[list[Use], set[str]]:
    """The module's Ray uses (in source order) and the other modules it imports (source text, or
    its syntax tree when the caller parsed it already)."""
    tree = source if isinstance(source, ast.Module) else ast.parse(source, filename=path)
    scanner = _Scanner(module, is_package, path)
    scanner.bind(tree)
    for stmt in tree.body:
        scanner.visit(stmt)
    own = scanner.assigned
    uses = [u for u in scanner.uses if not any(u.target == a or u.target.startswith(a + ".") for a in own)]
    return uses, scanner.local_imports


def scan_file(path: Path, module: str) -> tuple[list[Use], set[str]]:
    return scan(path.read_text(encoding="utf-8"), module=module, is_package=path.name == "__init__.py", path=str(path))
