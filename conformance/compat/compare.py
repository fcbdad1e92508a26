"""One `ray-compat` question end to end: a target Ray, the installed baseline, a manifest → Answer;
and the Answer as the terminal and a script read it (text, json)."""
from __future__ import annotations

import importlib.util
import json
import sys
from pathlib import Path
from typing import Callable

from conformance.catalog.manifest import Manifest
from conformance.compat.check import Answer, Finding, check, manifest_refs, plugin_modules, suite_modules
from conformance.compat.index import Index
from conformance.compat.source import RaySource
from conformance.sanitize import terminal

SUITE_ROOT = Path(__file__).resolve().parents[1]


def plugin_finder(python_path: list[str]) -> Callable[[str], Path | None]:
    """name → the file of a plugin module, found the way Python would (the manifest's folders
    first, then sys.path), locating only the top-level package: nothing is executed."""
    def find(name: str) -> Path | None:
        top, *rest = name.split(".")
        saved = list(sys.path)
        try:
            sys.path[:0] = [p for p in python_path if p not in sys.path]
            spec = importlib.util.find_spec(top)
        except (ImportError, ValueError):
            return None
        finally:
            sys.path[:] = saved
        if spec is None:
            return None
        if spec.submodule_search_locations:
            for loc in spec.submodule_search_locations:
                base = Path(loc).joinpath(*rest)
                if (base / "__init__.py").is_file():
                    return base / "__init__.py"
                if base.with_suffix(".py").is_file() and rest:
                    return base.with_suffix(".py")
            return None
        return Path(spec.origin) if spec.origin and not rest and spec.origin.endswith(".py") else None
    return find


def compare(target: RaySource, baseline: RaySource, manifest: Manifest) -> Answer:
    roots = [Path(p) for p in manifest.python_path]
    find = plugin_finder(manifest.python_path)
    target_index = Index(target.tree, roots, find)
    baseline_index = Index(baseline.tree, roots, find)
    refs = manifest_refs(manifest.data)
    plugin = plugin_modules(refs, target_index)
    suite = suite_modules(SUITE_ROOT)
    return check(target_index, baseline_index, plugin=plugin, suite=suite, refs=refs,
                 target_version=target.version, target_where=target.where, baseline_version=baseline.version)


def _shown(where: str) -> str:
    """A file:line under the current folder, relative to it (what a terminal user clicks)."""
    here = str(Path.cwd()) + "/"
    return where[len(here):] if where.startswith(here) else where


def render_text(answer: Answer, manifest: Manifest, *, notes: bool) -> str:
    product = manifest.view.product
    lines = [f"ray-compat: {product} against Ray {answer.target_version} ({answer.target_where}); "
             f"baseline Ray {answer.baseline_version} (installed)"]
    for f in answer.breaks:
        lines.append(f"INCOMPATIBLE {f.who} {f.kind} {f.subject}: {f.detail}" + (f"  [{_shown(f.where)}]" if f.where else ""))
    if notes:
        for f in answer.notes:
            lines.append(f"note {f.who} {f.kind} {f.subject}: {f.detail}" + (f"  [{_shown(f.where)}]" if f.where else ""))
    held = ", ".join(f"{n} {k}" for k, n in sorted(answer.held.items()))
    undecided = f"; {answer.undecided} use(s) the source cannot decide" if answer.undecided else ""
    if answer.compatible:
        lines.append(f"compatible: every interface the plugin and the suite use holds in Ray {answer.target_version} "
                     f"({held}{undecided}; {len(answer.notes)} note(s)). Not a certification: tiers/releases.yaml's Ray "
                     "window grows only by a certification on that Ray")
    else:
        lines.append(f"incompatible: {len(answer.breaks)} break(s) in Ray {answer.target_version} "
                     f"({held} held{undecided})")
    return "\n".join(terminal(line, limit=4000) for line in lines)


def render_json(answer: Answer, manifest: Manifest) -> str:
    def one(f: Finding) -> dict[str, str]:
        return {"who": f.who, "kind": f.kind, "subject": f.subject, "detail": f.detail, "where": f.where}
    return json.dumps({"verdict": "compatible" if answer.compatible else "incompatible",
                       "product": manifest.view.product, "ray": answer.target_version,
                       "ray_source": answer.target_where, "baseline_ray": answer.baseline_version,
                       "breaks": [one(f) for f in answer.breaks], "notes": [one(f) for f in answer.notes],
                       "held": answer.held, "undecided": answer.undecided}, indent=2)
