"""Modules, symbols, classes and signatures of Python source, read with `ast` (nothing is imported).

One `Index` answers for one Ray (its `ray.*` modules come from a source tree: a folder or a wheel)
together with the plugin's own modules (found on the plugin's folders), so that a plugin class
whose base is a Ray class is followed into that Ray's source. A name is resolved the way the
interpreter would bind it at a module's top level: definitions, assignments, imports (relative,
`as`, `*`), then submodules. What the source cannot tell (a compiled module with no stub, a
module-level `__getattr__`, a base class from outside the tree) is `Unknown`, never a break.
"""
from __future__ import annotations

import ast
from pathlib import Path
from typing import Callable, Iterator

from conformance.compat.model import (
    PLAIN_BASES,
    ClassInfo,
    Method,
    Missing,
    Module,
    Param,
    Resolved,
    Signature,
    Symbol,
    Tree,
    Unknown,
)


def _is_type_checking(test: ast.expr) -> bool:
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or \
        (isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING")


def top_statements(body: list[ast.stmt]) -> Iterator[ast.stmt]:
    """The statements that run at a module's (or class body's) top level: into if/try/with
    blocks, never into `if TYPE_CHECKING:` (those names do not exist at run time)."""
    for stmt in body:
        if isinstance(stmt, ast.If):
            if not _is_type_checking(stmt.test):
                yield from top_statements(stmt.body)
            yield from top_statements(stmt.orelse)
        elif isinstance(stmt, ast.Try):
            for part in (stmt.body, *(h.body for h in stmt.handlers), stmt.orelse, stmt.finalbody):
                yield from top_statements(part)
        elif isinstance(stmt, ast.With):
            yield from top_statements(stmt.body)
        else:
            yield stmt


def decorator_names(node: ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef) -> list[str]:
    out = []
    for d in node.decorator_list:
        d = d.func if isinstance(d, ast.Call) else d
        if isinstance(d, ast.Name):
            out.append(d.id)
        elif isinstance(d, ast.Attribute):
            out.append(d.attr if not isinstance(d.value, ast.Name) else f"{d.value.id}.{d.attr}")
    return out


def signature_of(args: ast.arguments, *, drop_first: bool = False) -> Signature:
    """The parameters a call can bind (`self`/`cls` dropped when asked)."""
    positional = [(a.arg, "posonly") for a in args.posonlyargs] + [(a.arg, "pos") for a in args.args]
    n_defaults = len(args.defaults)
    params = [Param(name, kind, i >= len(positional) - n_defaults) for i, (name, kind) in enumerate(positional)]
    if drop_first and params:
        params = params[1:]
    params += [Param(a.arg, "kwonly", d is not None) for a, d in zip(args.kwonlyargs, args.kw_defaults)]
    return Signature(tuple(params), vararg=args.vararg is not None, kwarg=args.kwarg is not None)


def method_of(node: ast.FunctionDef | ast.AsyncFunctionDef, owner: str) -> Method | None:
    names = decorator_names(node)
    if any(n.endswith(".setter") or n.endswith(".deleter") or n in ("overload", "typing.overload") for n in names):
        return None
    if "staticmethod" in names:
        kind = "static"
    elif "classmethod" in names:
        kind = "class"
    elif any(n in ("property", "cached_property", "functools.cached_property") for n in names):
        kind = "property"
    else:
        kind = "instance"
    abstract = any(n in ("abstractmethod", "abc.abstractmethod") for n in names)
    return Method(node.name, kind, signature_of(node.args, drop_first=kind != "static"), abstract, owner, node.lineno)


def _dataclass_decorator(node: ast.ClassDef) -> tuple[bool, bool]:
    for d in node.decorator_list:
        call = d if isinstance(d, ast.Call) else None
        target = call.func if call else d
        name = target.id if isinstance(target, ast.Name) else target.attr if isinstance(target, ast.Attribute) else ""
        if name == "dataclass":
            kw_only = any(k.arg == "kw_only" and isinstance(k.value, ast.Constant) and k.value.value is True
                          for k in (call.keywords if call else []))
            return True, kw_only
    return False, False


def _field_of(stmt: ast.AnnAssign, kw_only: bool) -> Param | None:
    if not isinstance(stmt.target, ast.Name):
        return None
    ann = ast.unparse(stmt.annotation)
    if "ClassVar" in ann or ann.startswith("InitVar"):
        return None
    default = stmt.value is not None
    if isinstance(stmt.value, ast.Call) and isinstance(stmt.value.func, (ast.Name, ast.Attribute)) and \
            (getattr(stmt.value.func, "id", None) == "field" or getattr(stmt.value.func, "attr", None) == "field"):
        kws = {k.arg: k.value for k in stmt.value.keywords}
        init, only = kws.get("init"), kws.get("kw_only")
        if isinstance(init, ast.Constant) and init.value is False:
            return None
        default = "default" in kws or "default_factory" in kws
        if isinstance(only, ast.Constant):
            kw_only = bool(only.value)
    return Param(stmt.target.id, "kwonly" if kw_only else "pos", default)


def _parsed(name: str, path: str, text: str, is_package: bool) -> Module | Unknown:
    """The module's syntax tree; Unknown when this Python cannot parse it (a newer syntax)."""
    try:
        return Module(name, path, ast.parse(text, filename=path), is_package)
    except (SyntaxError, ValueError) as exc:
        return Unknown(f"{name} does not parse with this Python ({exc.__class__.__name__}: {exc})")


def _fills_globals(stmt: ast.stmt) -> bool:
    """Whether a top-level statement hands the module's `globals()` to a call (protobuf's
    `_builder.BuildTopDescriptorsAndMessages(DESCRIPTOR, name, globals())`): the names it binds
    exist only at run time, so their absence from the source decides nothing."""
    call = stmt.value if isinstance(stmt, ast.Expr) else None
    return isinstance(call, ast.Call) and any(
        isinstance(a, ast.Call) and isinstance(a.func, ast.Name) and a.func.id == "globals" for a in call.args)


# ------------------------------------------------------------------------------------------ index
class Index:
    """The modules of one Ray tree and of the plugin's folders, resolved on demand and cached."""

    def __init__(self, ray: Tree, plugin_roots: list[Path] | None = None,
                 find_plugin: Callable[[str], Path | None] | None = None) -> None:
        self.ray = ray
        self.plugin_roots = list(plugin_roots or [])
        self._find_plugin = find_plugin
        self._modules: dict[str, Module | Missing | Unknown] = {}
        self._classes: dict[str, ClassInfo] = {}

    # ---- modules
    def _locate_plugin(self, name: str) -> tuple[Path, bool] | None:
        rel = Path(*name.split("."))
        for root in self.plugin_roots:
            if (root / rel / "__init__.py").is_file():
                return root / rel / "__init__.py", True
            if (root / rel).with_suffix(".py").is_file():
                return (root / rel).with_suffix(".py"), False
        if self._find_plugin is not None:
            found = self._find_plugin(name)
            if found is not None:
                return found, found.name == "__init__.py"
        return None

    def module(self, name: str) -> Module | Missing | Unknown:
        if name in self._modules:
            return self._modules[name]
        result: Module | Missing | Unknown
        if name == "ray" or name.startswith("ray."):
            rel = name.replace(".", "/")
            text, is_pkg, path = self.ray.read(rel + "/__init__.py"), True, rel + "/__init__.py"
            if text is None:
                text, is_pkg, path = self.ray.read(rel + ".py"), False, rel + ".py"
            if text is None:
                stub = self.ray.read(rel + ".pyi")
                text, is_pkg, path = stub, False, rel + ".pyi"
            if text is None and self.ray.is_folder(rel):
                # a folder without __init__.py is a namespace package (PEP 420): it binds nothing
                # itself, its modules are found as submodules (ray.core.generated in Ray 2.60)
                text, is_pkg, path = "", True, rel
            if text is None:
                result = Unknown(f"{name} is compiled (no Python source)") if self.ray.compiled(rel) \
                    else Missing(f"no module {name}")
            else:
                result = _parsed(name, path, text, is_pkg)
        else:
            found = self._locate_plugin(name)
            if found is None:
                result = Unknown(f"{name} is not Ray's and not found in the plugin's folders")
            else:
                result = _parsed(name, str(found[0]), found[0].read_text(encoding="utf-8", errors="replace"), found[1])
        self._modules[name] = result
        return result

    def has_module(self, name: str) -> bool:
        return isinstance(self.module(name), Module)

    @staticmethod
    def absolute(module: Module, level: int, target: str | None) -> str:
        """The absolute module name of a (relative) `from ... import` in `module`."""
        if not level:
            return target or ""
        base = module.name.split(".") if module.is_package else module.name.split(".")[:-1]
        base = base[:len(base) - (level - 1)]
        return ".".join(base + ([target] if target else []))

    # ---- names
    def resolve(self, dotted: str) -> Resolved:
        """'ray.util.collective.allreduce' → the symbol (the longest module prefix, then members)."""
        parts = dotted.split(".")
        for cut in range(len(parts), 0, -1):
            head = ".".join(parts[:cut])
            mod = self.module(head)
            if isinstance(mod, Module):
                sym: Resolved = Symbol("module", head)
                for part in parts[cut:]:
                    if not isinstance(sym, Symbol):
                        return sym
                    sym = self.member(sym, part)
                return sym
            if isinstance(mod, Unknown) and (head == "ray" or head.startswith("ray.")):
                return mod    # compiled: nothing under it can be told
        if parts[0] == "ray":
            return Missing(f"no module {parts[0]}")
        return Unknown(f"{dotted} is neither Ray's nor found in the plugin's folders")

    def first_missing(self, dotted: str) -> tuple[str, Missing] | None:
        """The shortest prefix of a dotted path the source says does not exist, or None: the
        one break behind every longer path (ray.experimental.rdt, not each name under it)."""
        parts = dotted.split(".")
        for cut in range(2, len(parts) + 1):
            got = self.resolve(".".join(parts[:cut]))
            if isinstance(got, Missing):
                return ".".join(parts[:cut]), got
            if isinstance(got, Unknown):
                return None
        return None

    def member(self, sym: Symbol, name: str) -> Resolved:
        if sym.kind == "module":
            return self.lookup(sym.module, name)
        if sym.kind == "class":
            if name.startswith("__") and name.endswith("__"):
                return Unknown(f"{name} belongs to Python's object model, not to the source")
            info = self.class_info(sym)
            for cls in self.mro(info):
                if not isinstance(cls, ClassInfo):
                    return Unknown(f"{sym.dotted} has a base outside the source: {cls.reason}")
                if name in cls.methods:
                    return Symbol("function", cls.symbol.module, f"{cls.symbol.name}.{name}")
                if name in cls.attrs:
                    return Symbol("value", cls.symbol.module, f"{cls.symbol.name}.{name}")
            return Missing(f"{sym.dotted} has no attribute {name}", runtime=True)
        if sym.kind == "value":
            klass = self._instance_of(sym)
            if klass is not None:
                got = self.member(klass, name)
                if isinstance(got, Missing):
                    return Missing(f"{sym.dotted} (a {klass.name}) has no method or attribute {name}", runtime=True)
                return got
        return Unknown(f"attribute of a {sym.kind}")

    def _instance_of(self, sym: Symbol) -> Symbol | None:
        """The Ray class a module-level `name = Class(...)` makes an instance of, or None."""
        node = sym.node
        value = node.value if isinstance(node, (ast.Assign, ast.AnnAssign)) else None
        if not isinstance(value, ast.Call):
            return None
        parts = ast.unparse(value.func).split(".")
        if not all(p.isidentifier() for p in parts):
            return None
        got = self.lookup(sym.module, parts[0])
        for part in parts[1:]:
            if not isinstance(got, Symbol):
                return None
            got = self.member(got, part)
        return got if isinstance(got, Symbol) and got.kind == "class" else None

    def lookup(self, module_name: str, name: str, _seen: frozenset[tuple[str, str]] = frozenset()) -> Resolved:
        if (module_name, name) in _seen:
            return Unknown(f"import cycle at {module_name}.{name}")
        seen = _seen | {(module_name, name)}
        mod = self.module(module_name)
        if not isinstance(mod, Module):
            return mod if isinstance(mod, Unknown) else Missing(mod.reason)
        found: Resolved | None = None
        stars: list[str] = []
        for stmt in top_statements(mod.tree.body):
            got = self._binding(mod, stmt, name, seen, stars)
            if isinstance(got, Symbol):
                return got
            if got is not None and found is None:
                found = got
        if found is not None and not isinstance(found, Missing):
            return found
        if self.has_module(f"{module_name}.{name}"):
            return Symbol("module", f"{module_name}.{name}")
        for star in stars:
            if not self._exported(star, name):
                continue
            got = self.lookup(star, name, seen)
            if isinstance(got, (Symbol, Unknown)):
                return got
        if any(isinstance(s, (ast.FunctionDef, ast.AsyncFunctionDef)) and s.name == "__getattr__"
               for s in top_statements(mod.tree.body)):
            return Unknown(f"{module_name} resolves names at run time (module __getattr__)")
        if any(_fills_globals(s) for s in top_statements(mod.tree.body)):
            return Unknown(f"{module_name} binds names at run time (it hands its globals() to a builder, "
                           "as protobuf's generated modules do)")
        return found if found is not None else Missing(f"{module_name} has no {name}")

    def _exported(self, module_name: str, name: str) -> bool:
        """Whether `from module import *` binds `name`: its literal __all__, else public names."""
        mod = self.module(module_name)
        if isinstance(mod, Module):
            for stmt in top_statements(mod.tree.body):
                if isinstance(stmt, ast.Assign) and any(isinstance(t, ast.Name) and t.id == "__all__" for t in stmt.targets) \
                        and isinstance(stmt.value, (ast.List, ast.Tuple)):
                    return any(isinstance(e, ast.Constant) and e.value == name for e in stmt.value.elts)
        return not name.startswith("_")

    def _binding(self, mod: Module, stmt: ast.stmt, name: str, seen: frozenset[tuple[str, str]],
                 stars: list[str]) -> Resolved | None:
        if isinstance(stmt, ast.ClassDef) and stmt.name == name:
            return Symbol("class", mod.name, name, stmt)
        if isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef)) and stmt.name == name \
                and not any(d in ("overload", "typing.overload") for d in decorator_names(stmt)):
            return Symbol("function", mod.name, name, stmt)
        if isinstance(stmt, ast.Assign):
            for assigned in stmt.targets:
                names = [t for t in (assigned.elts if isinstance(assigned, ast.Tuple) else [assigned])
                         if isinstance(t, ast.Name)]
                if any(t.id == name for t in names):
                    if isinstance(stmt.value, ast.Name) and stmt.value.id != name:
                        aliased = self.lookup(mod.name, stmt.value.id, seen)
                        if isinstance(aliased, Symbol):
                            return aliased
                    return Symbol("value", mod.name, name, stmt)
        if isinstance(stmt, ast.AnnAssign) and isinstance(stmt.target, ast.Name) and stmt.target.id == name \
                and stmt.value is not None:
            return Symbol("value", mod.name, name, stmt)
        if isinstance(stmt, ast.Import):
            for alias in stmt.names:
                bound = alias.asname or alias.name.split(".")[0]
                if bound == name:
                    return self.resolve(alias.name if alias.asname else alias.name.split(".")[0])
        if isinstance(stmt, ast.ImportFrom):
            source = self.absolute(mod, stmt.level, stmt.module)
            for alias in stmt.names:
                if alias.name == "*":
                    stars.append(source)
                elif (alias.asname or alias.name) == name:
                    return self.lookup(source, alias.name, seen)
        return None

    # ---- classes
    def class_info(self, sym: Symbol) -> ClassInfo:
        key = sym.dotted
        if key in self._classes:
            return self._classes[key]
        node = sym.node
        if not isinstance(node, ast.ClassDef):
            got = self.resolve(sym.dotted)
            node = got.node if isinstance(got, Symbol) else None
        assert isinstance(node, ast.ClassDef), sym
        mod = self.module(sym.module)
        assert isinstance(mod, Module)
        owner = f"{sym.module}:{sym.name}"
        is_dc, kw_only = _dataclass_decorator(node)
        methods: dict[str, Method] = {}
        attrs: set[str] = set()
        fields: list[Param] = []
        for stmt in top_statements(node.body):
            if isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef)):
                m = method_of(stmt, owner)
                if m is not None:
                    methods.setdefault(stmt.name, m)
                attrs.update(t.attr for t in ast.walk(stmt) if isinstance(t, ast.Attribute)
                             and isinstance(t.ctx, ast.Store) and isinstance(t.value, ast.Name) and t.value.id == "self")
            elif isinstance(stmt, ast.ClassDef):
                attrs.add(stmt.name)
            elif isinstance(stmt, ast.Assign):
                for t in stmt.targets:
                    attrs.update(x.id for x in (t.elts if isinstance(t, ast.Tuple) else [t]) if isinstance(x, ast.Name))
            elif isinstance(stmt, ast.AnnAssign) and isinstance(stmt.target, ast.Name):
                attrs.add(stmt.target.id)
                if is_dc:
                    f = _field_of(stmt, kw_only)
                    if f is not None:
                        fields.append(f)
        info = ClassInfo(sym, [self._base(mod, b) for b in node.bases], methods, attrs, is_dc, kw_only, fields)
        self._classes[key] = info
        return info

    def _base(self, mod: Module, expr: ast.expr) -> Resolved:
        if isinstance(expr, ast.Subscript):
            expr = expr.value
        text = ast.unparse(expr)
        if text in PLAIN_BASES:
            return Symbol("value", "builtins", "object")
        parts = text.split(".")
        if not all(p.isidentifier() for p in parts):
            return Unknown(f"base {text} is an expression")
        got = self.lookup(mod.name, parts[0])
        for part in parts[1:]:
            if not isinstance(got, Symbol):
                break
            got = self.member(got, part)
        if isinstance(got, Symbol) and got.kind == "class":
            return got
        if isinstance(got, Symbol):
            return Unknown(f"base {text} is not a class in the source")
        return got

    def mro(self, info: ClassInfo) -> list[ClassInfo | Unknown | Missing]:
        """The class and its bases, depth first and left to right, each once; a base the source
        cannot follow stays in the list (as Unknown or Missing) where it stands."""
        out: list[ClassInfo | Unknown | Missing] = []
        seen: set[str] = set()

        def walk(ci: ClassInfo) -> None:
            if ci.symbol.dotted in seen:
                return
            seen.add(ci.symbol.dotted)
            out.append(ci)
            for b in ci.bases:
                if isinstance(b, Symbol) and b.kind == "class":
                    walk(self.class_info(b))
                elif isinstance(b, (Unknown, Missing)):
                    out.append(b)

        walk(info)
        return out

    def constructor(self, info: ClassInfo) -> Signature | None:
        """How a call of the class binds its arguments: a dataclass's fields, else the first
        __init__ in the MRO; None when a base the source cannot follow may define it."""
        chain = self.mro(info)
        if info.dataclass:
            fields: dict[str, Param] = {}
            for ci in reversed(chain):
                if isinstance(ci, ClassInfo) and ci.dataclass:
                    for f in ci.fields:
                        fields.pop(f.name, None)
                        fields[f.name] = f
            ordered = [f for f in fields.values() if f.kind != "kwonly"] + [f for f in fields.values() if f.kind == "kwonly"]
            return Signature(tuple(ordered))
        for ci in chain:
            if not isinstance(ci, ClassInfo):
                return None
            if "__init__" in ci.methods:
                return ci.methods["__init__"].sig
        return Signature(())

    def dataclass_fields(self, info: ClassInfo) -> list[tuple[str, Param]]:
        """(owner, field) in the order dataclass puts them into __init__ (bases first)."""
        fields: dict[str, tuple[str, Param]] = {}
        for ci in reversed(self.mro(info)):
            if isinstance(ci, ClassInfo) and ci.dataclass:
                for f in ci.fields:
                    fields.pop(f.name, None)
                    fields[f.name] = (ci.symbol.name, f)
        return list(fields.values())
