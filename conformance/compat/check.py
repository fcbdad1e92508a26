"""Hold the plugin's and the suite's Ray interfaces against a target Ray: the verdict and each break.

Two indexes are compared: the target Ray's and the baseline's (the Ray installed beside the suite,
which the plugin was certified with). The baseline only answers "was this the plugin's override
of a Ray method?" (a method of the plugin's class that the baseline's Ray base also has) and "what
is new in the target?"; every judgement is made against the target. A break is something that
would fail on the target: a Ray symbol imported or used that it lacks, a method the plugin
overrides that its base no longer has (renamed or removed: Ray would never call it), an override
whose signature no longer takes Ray's call, an abstract method the plugin does not implement, a
call or an option the target no longer accepts. A note is what the source cannot decide or what
the suite already answers on such a Ray (optional imports, positional names that differ).
"""
from __future__ import annotations

import ast
import re
from dataclasses import dataclass, field
from pathlib import Path

from conformance.compat import interfaces
from conformance.compat.index import Index, signature_of
from conformance.compat.model import ClassInfo, Method, Missing, Module, Signature, Symbol, Unknown
from conformance.compat.uses import CallShape, Use, scan, shape_of
from conformance.errors import UserError

REF = re.compile(r"^[A-Za-z_][\w.]*:[A-Za-z_][\w.]*$")


@dataclass(frozen=True)
class Finding:
    kind: str      # missing-symbol | removed-method | signature | abstract | call | option | dataclass | base-class
    subject: str   # the interface: ray.x.Y, Class.method, option name
    detail: str
    where: str = ""    # file:line of the use that needs it
    who: str = "plugin"   # plugin | suite


@dataclass
class Answer:
    target_version: str
    target_where: str
    baseline_version: str
    breaks: list[Finding] = field(default_factory=list)
    notes: list[Finding] = field(default_factory=list)
    held: dict[str, int] = field(default_factory=dict)
    undecided: int = 0     # uses the source cannot decide (compiled modules, run-time attributes)

    @property
    def compatible(self) -> bool:
        return not self.breaks

    def hold(self, what: str) -> None:
        self.held[what] = self.held.get(what, 0) + 1

    def add(self, finding: Finding, *, note: bool = False) -> None:
        bucket = self.notes if note else self.breaks
        if all((f.kind, f.subject, f.who) != (finding.kind, finding.subject, finding.who) for f in bucket):
            bucket.append(finding)


# ------------------------------------------------------------------------------------------ inputs
@dataclass
class Scanned:
    """One side's modules (the plugin's or the suite's): their Ray uses and their syntax trees."""
    who: str
    uses: list[Use] = field(default_factory=list)
    modules: dict[str, Module] = field(default_factory=dict)
    texts: list[str] = field(default_factory=list)   # the suite's source, for the names it mentions


def manifest_refs(data: object, path: str = "") -> dict[str, str]:
    """Every 'pkg.module:Attr' reference in a manifest, by field path (accelerator.manager, ...)."""
    out: dict[str, str] = {}
    if isinstance(data, dict):
        for key, value in data.items():
            out.update(manifest_refs(value, f"{path}.{key}" if path else str(key)))
    elif isinstance(data, list):
        for i, value in enumerate(data):
            out.update(manifest_refs(value, f"{path}[{i}]"))
    elif isinstance(data, str) and REF.match(data):
        out[path] = data
    return out


def _package_of(module: str) -> str:
    return module.rpartition(".")[0] or module


def plugin_modules(refs: dict[str, str], index: Index) -> Scanned:
    """The modules the manifest names and, transitively, the modules of their own packages they
    import (a vendor's helpers), each read once. A module or attribute the manifest names that
    the source does not hold is the user's input error: nothing of it could be checked."""
    found = Scanned("plugin")
    own: dict[str, str] = {}
    for field_path, ref in refs.items():
        module, _, attr = ref.partition(":")
        if module == "ray" or module.startswith("ray."):   # Ray's own class (a built-in manager): a Ray interface
            found.uses.append(Use("import", f"{module}.{attr}", f"manifest {field_path}", 0))
            continue
        own[field_path] = ref
        mod = index.module(module)
        if not isinstance(mod, Module):
            raise UserError(f"manifest: {field_path}: module {module!r} has no Python source on plugin.python_path "
                            f"or this Python's path ({mod.reason}); ray-compat reads the plugin's source: install "
                            "the plugin here or list its folder in plugin.python_path")
        if isinstance(index.resolve(f"{module}.{attr}"), Missing):
            raise UserError(f"manifest: {field_path}: module {module!r} has no attribute {attr!r}")
    queue = [ref.partition(":")[0] for ref in own.values()]
    packages = {_package_of(m) for m in queue}
    while queue:
        name = queue.pop(0)
        if name in found.modules:
            continue
        mod = index.module(name)
        if not isinstance(mod, Module):
            continue
        found.modules[name] = mod
        uses, imported = scan(mod.tree, module=name, is_package=mod.is_package, path=mod.path)
        found.uses += uses
        queue += [m for m in sorted(imported) if any(m == p or m.startswith(p + ".") for p in packages)]
    return found


def suite_modules(root: Path, *, skip: tuple[str, ...] = ("simulated",)) -> Scanned:
    """The suite's own modules (the package at `root`, less the reference plugin): their Ray uses,
    and their text. Only a module that imports from Ray can use it (the package has no relative
    path to Ray), so only those are parsed."""
    found = Scanned("suite")
    for path in sorted(root.rglob("*.py")):
        rel = path.relative_to(root.parent).with_suffix("").parts
        if len(rel) > 1 and rel[1] in skip:
            continue
        text = path.read_text(encoding="utf-8")
        found.texts.append(text)
        if "import ray" in text or "from ray" in text:
            name = ".".join(rel[:-1] if rel[-1] == "__init__" else rel)
            uses, _ = scan(text, module=name, is_package=path.name == "__init__.py", path=str(path))
            found.uses += uses
    return found


# ------------------------------------------------------------------------------------------ rules
def override_problems(base: Method, over: Method) -> list[str]:
    """Why Ray's call of `base` (as the target defines it) would not reach `over`, or []."""
    out: list[str] = []
    if base.kind in ("static", "class") and over.kind == "instance":
        out.append(f"Ray calls it on the class ({base.kind}method); the override is an instance method")
    if (base.kind == "property") != (over.kind == "property"):
        out.append(f"Ray's is a {'property' if base.kind == 'property' else 'method'}; "
                   f"the override is a {'property' if over.kind == 'property' else 'method'}")
        return out
    b, o = base.sig, over.sig
    bpos, opos = b.positional, o.positional
    if b.vararg and not o.vararg:
        out.append(f"Ray's {b.text()} takes *args; the override {o.text()} does not")
    if len(opos) < len(bpos) and not o.vararg:
        out.append(f"Ray's {b.text()} passes up to {len(bpos)} positional argument(s); "
                   f"the override {o.text()} takes {len(opos)}")
    required_by_ray = sum(1 for p in bpos if not p.default)
    for i, p in enumerate(opos):
        if not p.default and i >= required_by_ray:
            out.append(f"the override requires {p.name}, which Ray's {b.text()} "
                       + ("never passes" if i >= len(bpos) else "may leave out"))
    for p in b.params:
        if p.kind == "kwonly" and p.name not in o.keywords and not o.kwarg:
            out.append(f"Ray's {b.text()} passes keyword {p.name}; the override {o.text()} does not accept it")
    for p in o.params:
        if p.kind == "kwonly" and not p.default and p.name not in b.keywords:
            out.append(f"the override requires keyword {p.name}, which Ray's {b.text()} never passes")
    if b.kwarg and not o.kwarg:
        out.append(f"Ray's {b.text()} takes **kwargs; the override {o.text()} does not")
    return out


def call_problems(sig: Signature, shape: CallShape) -> list[str]:
    """Why a call of this shape would not bind to `sig`, or []."""
    out: list[str] = []
    pos = sig.positional
    if shape.positional > len(pos) and not sig.vararg:
        out.append(f"passes {shape.positional} positional argument(s); {sig.text()} takes {len(pos)}")
    for k in shape.keywords:
        if k not in sig.keywords and not sig.kwarg:
            out.append(f"passes keyword {k}; {sig.text()} has no such parameter")
    if not shape.star and not shape.dstar:
        bound = {p.name for p in pos[:shape.positional]} | set(shape.keywords)
        missing = [p.name for p in sig.params if not p.default and p.name not in bound]
        if missing:
            out.append(f"leaves out required {', '.join(missing)} of {sig.text()}")
    return out


def _short(dotted: str) -> str:
    return dotted.rpartition(".")[2]


def _ray_methods(index: Index, info: ClassInfo) -> tuple[dict[str, Method], list[ClassInfo], bool]:
    """The methods the class gets from Ray (first definition in the MRO wins), the Ray classes
    it extends, and whether a base outside the source may define more."""
    methods: dict[str, Method] = {}
    ray_classes: list[ClassInfo] = []
    open_ = False
    for ci in index.mro(info):
        if not isinstance(ci, ClassInfo):
            open_ = open_ or isinstance(ci, Unknown)
            continue
        if ci.symbol.module == "ray" or ci.symbol.module.startswith("ray."):
            ray_classes.append(ci)
            for name, m in ci.methods.items():
                methods.setdefault(name, m)
    return methods, ray_classes, open_


def _local_methods(index: Index, info: ClassInfo) -> dict[str, Method]:
    out: dict[str, Method] = {}
    for ci in index.mro(info):
        if isinstance(ci, ClassInfo) and not (ci.symbol.module == "ray" or ci.symbol.module.startswith("ray.")):
            for name, m in ci.methods.items():
                out.setdefault(name, m)
    return out


def _missing_subject(target: Index, dotted: str) -> str:
    found = target.first_missing(dotted)
    return found[0] if found else dotted


def _where(mod: Module, line: int) -> str:
    return f"{mod.path}:{line}"


# ------------------------------------------------------------------------------------------ checks
def check_uses(answer: Answer, target: Index, baseline: Index, side: Scanned) -> None:
    """Every Ray import, attribute path and direct call of one side, against the target. A path
    the target lacks is one finding per missing prefix, naming its first use and how many more."""
    missing: dict[str, tuple[Use, Missing, int, bool]] = {}
    for use in side.uses:
        got = target.resolve(use.target)
        if isinstance(got, Missing) and got.runtime and not isinstance(baseline.resolve(use.target), Symbol):
            # in neither source, yet the plugin was certified using it: something sets it at run time
            answer.undecided += 1
            answer.add(Finding("run-time-attribute", use.target,
                               f"{got.reason} in the source of Ray {answer.target_version} or {answer.baseline_version}: "
                               "set at run time (as register_collective_backend sets Backend.<NAME>), not judged",
                               use.where, side.who), note=True)
            continue
        if isinstance(got, Missing):
            prefix, why = target.first_missing(use.target) or (use.target, got)
            first = missing.get(prefix)
            optional = use.optional or use.type_only
            if first is None:
                missing[prefix] = (use, why, 0, optional)
            else:
                missing[prefix] = (first[0], first[1], first[2] + 1, first[3] and optional)
            continue
        if isinstance(got, Unknown):
            answer.undecided += 1
            continue
        answer.hold(f"{use.kind}s")
        if use.kind == "call" and use.call is not None:
            sig = _callable_signature(target, got)
            if sig is None:
                continue
            for problem in call_problems(sig, use.call):
                answer.add(Finding("call", use.target, f"the {side.who}'s call {problem} in Ray {answer.target_version}",
                                   use.where, side.who), note=use.optional)
    for prefix, (use, why, more, optional) in missing.items():
        before = baseline.resolve(prefix)
        history = f"Ray {answer.baseline_version} has it" if isinstance(before, Symbol) else \
            f"Ray {answer.baseline_version} has no such symbol either" if isinstance(before, Missing) else ""
        how = {"import": "imports", "attribute": "uses", "call": "calls"}[use.kind]
        answer.add(Finding("missing-symbol", prefix,
                           f"{why.reason} in Ray {answer.target_version}" + (f" ({history})" if history else "")
                           + f"; the {side.who} {how} {use.target}" + (f" and {more} more use(s)" if more else "")
                           + ("; every use is guarded (optional or a type hint)" if optional else ""),
                           use.where, side.who), note=optional)


def _callable_signature(index: Index, sym: Symbol) -> Signature | None:
    if sym.kind == "class":
        return index.constructor(index.class_info(sym))
    if sym.kind == "function" and "." not in sym.name and isinstance(sym.node, (ast.FunctionDef, ast.AsyncFunctionDef)):
        return signature_of(sym.node.args)
    return None


def check_plugin_classes(answer: Answer, target: Index, baseline: Index, plugin: Scanned) -> None:
    """Each class of the plugin that extends a Ray class: its overrides against the target's base."""
    for name, mod in plugin.modules.items():
        for node in mod.tree.body:
            if not isinstance(node, ast.ClassDef):
                continue
            sym = Symbol("class", name, node.name, node)
            info, before = target.class_info(sym), baseline.class_info(sym)
            ray_methods, ray_classes, open_ = _ray_methods(target, info)
            old_methods, _, _ = _ray_methods(baseline, before)
            if not ray_classes:   # its Ray base is missing in the target: the import's finding says so
                continue
            base_name = _short(ray_classes[0].symbol.dotted)
            own = _local_methods(target, info)
            new_in_target = sorted(set(ray_methods) - set(old_methods))
            for mname, over in sorted(own.items()):
                where = _where(mod, over.line)
                if mname in ray_methods:
                    base = ray_methods[mname]
                    problems = override_problems(base, over)
                    if problems:
                        answer.add(Finding("signature", f"{_short(base.owner.replace(':', '.'))}.{mname}",
                                           f"{node.name}.{mname} overrides it: {'; '.join(problems)} "
                                           f"(Ray {answer.target_version})", where))
                    if not problems:
                        answer.hold("overrides")
                        _name_notes(answer, base, over, node.name, where)
                elif mname in old_methods and not open_:
                    hint = f"; new in Ray {answer.target_version}'s {base_name}: {', '.join(new_in_target)}" \
                        if new_in_target else ""
                    answer.add(Finding("removed-method", f"{base_name}.{mname}",
                                       f"{node.name}.{mname} overrides {base_name}.{mname} (Ray {answer.baseline_version}), "
                                       f"which Ray {answer.target_version}'s {base_name} does not have: renamed or removed, "
                                       f"Ray will never call it{hint}", where))
            for mname, base in sorted(ray_methods.items()):
                if base.abstract and mname not in own:
                    # abstract in the certified Ray too: the plugin was certified relying on Ray's
                    # body (Ray's own NVIDIA manager does; Ray never instantiates a manager)
                    known = mname in old_methods and old_methods[mname].abstract
                    answer.add(Finding("abstract", f"{_short(base.owner.replace(':', '.'))}.{mname}",
                                       f"Ray {answer.target_version}'s {mname}{base.sig.text()} is abstract"
                                       + ("" if known else " (it was not in Ray " + answer.baseline_version + ")")
                                       + f"; {node.name} does not implement it", _where(mod, node.lineno)), note=known)
            for mname in new_in_target:
                if not ray_methods[mname].abstract and mname not in own:
                    answer.add(Finding("new-method", f"{base_name}.{mname}",
                                       f"Ray {answer.target_version} adds {mname}{ray_methods[mname].sig.text()} with a "
                                       f"default; {node.name} inherits it", _where(mod, node.lineno)), note=True)
            if info.dataclass:
                _dataclass_order(answer, target, info, mod, node)


def _name_notes(answer: Answer, base: Method, over: Method, cls: str, where: str) -> None:
    renamed = [f"{b.name}->{o.name}" for b, o in zip(base.sig.positional, over.sig.positional) if b.name != o.name]
    if renamed:
        answer.add(Finding("parameter-names", f"{cls}.{base.name}",
                           f"positional names differ from Ray's ({', '.join(renamed)}): fine while Ray passes them "
                           "by position", where), note=True)


def _dataclass_order(answer: Answer, target: Index, info: ClassInfo, mod: Module, node: ast.ClassDef) -> None:
    seen_default = None
    for owner, f in target.dataclass_fields(info):
        if f.kind == "kwonly":
            continue
        if f.default:
            seen_default = (owner, f.name)
        elif seen_default is not None:
            answer.add(Finding("dataclass", f"{node.name}.{f.name}",
                               f"field {owner}.{f.name} has no default but follows {seen_default[0]}.{seen_default[1]}, "
                               f"which has one in Ray {answer.target_version}: the dataclass fails at import",
                               _where(mod, node.lineno)))
            return


def check_local_constructions(answer: Answer, target: Index, plugin: Scanned) -> None:
    """The plugin's calls of its own classes that extend a Ray dataclass (RDT metadata): the
    fields they pass against the fields the target gives the class."""
    for name, mod in plugin.modules.items():
        local = {n.name: n for n in mod.tree.body if isinstance(n, ast.ClassDef)}
        for call in ast.walk(mod.tree):
            if not (isinstance(call, ast.Call) and isinstance(call.func, ast.Name) and call.func.id in local):
                continue
            info = target.class_info(Symbol("class", name, call.func.id, local[call.func.id]))
            _, ray_classes, open_ = _ray_methods(target, info)
            if not ray_classes or open_ or not info.dataclass:
                continue
            sig = target.constructor(info)
            if sig is None:
                continue
            problems = call_problems(sig, shape_of(call))
            for problem in problems:
                answer.add(Finding("call", f"{call.func.id}(...)",
                                   f"the plugin's construction {problem} in Ray {answer.target_version}",
                                   _where(mod, call.lineno)))
            if not problems:
                answer.hold("constructions")


def check_manifest_classes(answer: Answer, target: Index, refs: dict[str, str]) -> None:
    """Each manifest class still extends the Ray class the suite needs it to extend."""
    for contract in interfaces.BASE_CLASSES:
        ref = refs.get(contract.field)
        if ref is None:
            continue
        want = target.resolve(contract.symbol)
        if not isinstance(want, Symbol):
            if isinstance(want, Missing):
                answer.add(Finding("missing-symbol", _missing_subject(target, contract.symbol),
                                   f"Ray {answer.target_version}: {want.reason}; the suite needs it for {contract.field}: "
                                   f"{contract.why}", "", "suite"))
            continue
        module, _, attr = ref.partition(":")
        got = target.resolve(f"{module}.{attr}")
        if not (isinstance(got, Symbol) and got.kind == "class"):
            continue
        chain = [c.symbol.dotted for c in target.mro(target.class_info(got)) if isinstance(c, ClassInfo)]
        if want.dotted in chain:
            answer.hold("base classes")
        elif not any(isinstance(c, Unknown) for c in target.mro(target.class_info(got))):
            answer.add(Finding("base-class", contract.field,
                               f"{ref} does not extend {contract.symbol} in Ray {answer.target_version} ({contract.why})"))


def check_ray_classes(answer: Answer, target: Index, baseline: Index, suite_text: str) -> None:
    """The Ray classes the suite relies on: still there, and their public methods still there."""
    for dotted in interfaces.RAY_CLASSES:
        got = target.resolve(dotted)
        if isinstance(got, Missing):
            answer.add(Finding("missing-symbol", _missing_subject(target, dotted), f"Ray {answer.target_version}: {got.reason}", "", "suite"))
            continue
        before = baseline.resolve(dotted)
        if not (isinstance(got, Symbol) and got.kind == "class" and isinstance(before, Symbol) and before.kind == "class"):
            continue
        answer.hold("Ray classes")
        now, _, _ = _ray_methods(target, target.class_info(got))
        old, _, _ = _ray_methods(baseline, baseline.class_info(before))
        for mname in sorted(set(old) - set(now)):
            if mname.startswith("_"):
                continue
            used = re.search(rf"\b{re.escape(mname)}\b", suite_text) is not None
            answer.add(Finding("removed-method", f"{_short(dotted)}.{mname}",
                               f"Ray {answer.target_version}'s {_short(dotted)} does not have {mname} (Ray {answer.baseline_version}'s has)"
                               + ("; the suite names it" if used else "; neither the suite nor this plugin uses it"),
                               "", "suite"), note=not used)


def check_contracts(answer: Answer, target: Index) -> None:
    """The suite's calls and options its code builds at run time (interfaces.py)."""
    for c in interfaces.CALLS:
        got = target.resolve(c.symbol)
        if isinstance(got, Missing):
            answer.add(Finding("missing-symbol", _missing_subject(target, c.symbol), f"Ray {answer.target_version}: {got.reason} ({c.why})",
                               "", "suite"), note=c.optional)
            continue
        sig = _callable_signature(target, got) if isinstance(got, Symbol) else None
        if sig is None:
            continue
        problems = call_problems(sig, CallShape(c.positional, c.keywords, False, False))
        for problem in problems:
            answer.add(Finding("call", c.symbol, f"the suite's call {problem} in Ray {answer.target_version} "
                                                 f"({c.why})", "", "suite"), note=c.optional)
        if not problems:
            answer.hold("calls")
    keys = option_keys(target)
    if keys is None:
        answer.add(Finding("option", "ray_option_utils", f"Ray {answer.target_version}'s option tables were not found "
                                                         f"({', '.join(interfaces.OPTION_MODULES)}): options not checked",
                           "", "suite"), note=True)
        return
    for o in interfaces.OPTIONS:
        if o.name in keys:
            answer.hold("options")
        else:
            answer.add(Finding("option", o.name, f"Ray {answer.target_version}'s .options() does not accept "
                                                 f"{o.name} ({o.why})", "", "suite"))


def option_keys(index: Index) -> set[str] | None:
    """The string keys of the option tables (top-level dict literals) of Ray's ray_option_utils."""
    for name in interfaces.OPTION_MODULES:
        mod = index.module(name)
        if not isinstance(mod, Module):
            continue
        keys: set[str] = set()
        for stmt in mod.tree.body:
            value = stmt.value if isinstance(stmt, (ast.Assign, ast.AnnAssign)) else None
            if isinstance(value, ast.Dict):
                keys.update(k.value for k in value.keys if isinstance(k, ast.Constant) and isinstance(k.value, str))
        return keys
    return None


def check(target: Index, baseline: Index, *, plugin: Scanned, suite: Scanned, refs: dict[str, str],
          target_version: str, target_where: str, baseline_version: str) -> Answer:
    """The whole comparison: every rule above, one Answer."""
    answer = Answer(target_version, target_where, baseline_version)
    check_uses(answer, target, baseline, plugin)
    check_plugin_classes(answer, target, baseline, plugin)
    check_local_constructions(answer, target, plugin)
    check_manifest_classes(answer, target, refs)
    check_uses(answer, target, baseline, suite)
    suite_text = "\n".join(suite.texts)
    check_ray_classes(answer, target, baseline, suite_text)
    check_contracts(answer, target)
    return answer
