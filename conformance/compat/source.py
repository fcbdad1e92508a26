"""Where a Ray's source comes from: a folder, a wheel, or a version `pip download` fetches.

Nothing here imports Ray or runs its code: a wheel is read as the zip it is, a folder file by
file, and the installed Ray (the baseline the plugin was certified with) is found with
`importlib.util.find_spec`, which locates a top-level package without executing it.
"""
from __future__ import annotations

import ast
import importlib.util
import os
import re
import subprocess
import sys
import zipfile
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

from conformance.errors import UserError

# A version pip can pin: 2.61.0, 2.61.0rc1, 2.61.0.dev0 (the sanitised release names pip accepts).
VERSION = re.compile(r"^\d+(\.\d+){0,3}((a|b|rc)\d+)?(\.post\d+)?(\.dev\d+)?$")
COMPILED_SUFFIXES = (".so", ".pyd")


class CannotInstall(Exception):
    """pip could not fetch that Ray (no such version, no wheel for this platform, no network):
    the one line pip gave as its reason."""


class DirTree:
    """A folder that holds the `ray` package (a site-packages, an unpacked wheel)."""

    def __init__(self, root: Path, label: str) -> None:
        self.root = root
        self.label = label
        self._compiled: set[str] | None = None

    def read(self, relpath: str) -> str | None:
        path = self.root / relpath
        return path.read_text(encoding="utf-8", errors="replace") if path.is_file() else None

    def exists(self, relpath: str) -> bool:
        return (self.root / relpath).exists()

    def is_folder(self, relpath: str) -> bool:
        return (self.root / relpath).is_dir()

    def compiled(self, stem: str) -> bool:
        folder = (self.root / stem).parent
        name = Path(stem).name
        return folder.is_dir() and any(p.name.startswith(name + ".") and p.suffix in COMPILED_SUFFIXES
                                       for p in folder.iterdir())


class ZipTree:
    """A wheel, read as a zip (never unpacked, never installed)."""

    def __init__(self, path: Path, label: str) -> None:
        self.path = path
        self.label = label
        try:
            self._zip = zipfile.ZipFile(path)
        except (OSError, zipfile.BadZipFile) as exc:
            raise UserError(f"--ray: {path} is not a readable wheel ({exc})") from None
        self._names = set(self._zip.namelist())

    def read(self, relpath: str) -> str | None:
        if relpath not in self._names:
            return None
        return self._zip.read(relpath).decode("utf-8", errors="replace")

    def exists(self, relpath: str) -> bool:
        return relpath in self._names

    def is_folder(self, relpath: str) -> bool:
        prefix = relpath.rstrip("/") + "/"
        return any(n.startswith(prefix) for n in self._names)

    def compiled(self, stem: str) -> bool:
        return any(n.startswith(stem + ".") and n.endswith(COMPILED_SUFFIXES) for n in self._names)


Tree = DirTree | ZipTree


@dataclass
class RaySource:
    """One Ray's source and what to call it in a report line."""

    tree: Tree
    version: str
    where: str     # the folder or wheel it was read from


def version_of(tree: Tree) -> str:
    """`ray/_version.py`'s `version = "..."` (read, not run); "unknown" when absent."""
    text = tree.read("ray/_version.py")
    if text is not None:
        for stmt in ast.parse(text).body:
            if isinstance(stmt, ast.Assign) and any(isinstance(t, ast.Name) and t.id == "version" for t in stmt.targets) \
                    and isinstance(stmt.value, ast.Constant) and isinstance(stmt.value.value, str):
                return stmt.value.value
    return "unknown"


def from_path(path: Path) -> RaySource:
    """A wheel file, a folder holding `ray/`, or the `ray` package folder itself."""
    if path.is_file():
        if path.suffix != ".whl":
            raise UserError(f"--ray: {path} is a file but not a wheel (.whl)")
        tree: Tree = ZipTree(path, str(path))
        if not tree.exists("ray/__init__.py"):
            raise UserError(f"--ray: the wheel {path.name} holds no ray package (ray/__init__.py)")
    elif (path / "ray" / "__init__.py").is_file():
        tree = DirTree(path, str(path))
    elif path.name == "ray" and (path / "__init__.py").is_file():
        tree = DirTree(path.parent, str(path))
    else:
        raise UserError(f"--ray: {path} holds no ray package; expected a folder with ray/__init__.py "
                        "(a site-packages), a wheel (.whl) or a version such as 2.61.0")
    return RaySource(tree, version_of(tree), str(path))


def pip_reason(stderr: str, stdout: str = "") -> str:
    """pip's one line of why: its last `ERROR:` line, else its last line."""
    lines = [ln.strip() for ln in (stderr + "\n" + stdout).splitlines() if ln.strip()]
    errors = [ln for ln in lines if ln.startswith("ERROR:")]
    return (errors[-1] if errors else lines[-1] if lines else "pip failed without a message")[:400]


def download(spec: str, into: Path, *, timeout_s: float,
             on_download: Callable[[str], None] | None = None) -> RaySource:
    """`pip download` one Ray wheel (no dependencies) into `into`: a version or a wheel URL.
    pip reads its own configuration (PIP_INDEX_URL, PIP_EXTRA_INDEX_URL, pip.conf) as always."""
    requirement = spec if spec.startswith(("http://", "https://")) else f"ray=={spec}"
    if on_download is not None:
        on_download(requirement)
    cmd = [sys.executable, "-m", "pip", "download", requirement, "--no-deps", "--only-binary=:all:",
           "--disable-pip-version-check", "--quiet", "-d", str(into)]
    try:
        proc = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout_s,
                              env={**os.environ, "PIP_NO_INPUT": "1"})
    except subprocess.TimeoutExpired:
        raise CannotInstall(f"pip download {requirement} did not finish within {timeout_s:g} s") from None
    if proc.returncode != 0:
        raise CannotInstall(pip_reason(proc.stderr, proc.stdout))
    # the wheel of this request, never another version's left in a kept --download-dir
    pattern = requirement.rsplit("/", 1)[-1] if requirement != f"ray=={spec}" else f"ray-{spec}-*.whl"
    wheels = sorted(into.glob(pattern))
    if not wheels:
        raise CannotInstall(f"pip download {requirement} left no wheel named {pattern} in {into}")
    source = from_path(wheels[0])
    source.where = f"{requirement}: {wheels[0].name}"
    return source


def obtain(spec: str, into: Path, *, timeout_s: float,
           on_download: Callable[[str], None] | None = None) -> RaySource:
    """`--ray` as given: a path that exists, else a version or a wheel URL for pip."""
    path = Path(spec).expanduser()
    if path.exists():
        return from_path(path.resolve())
    if VERSION.match(spec) or (spec.startswith(("http://", "https://")) and spec.endswith(".whl")):
        return download(spec, into, timeout_s=timeout_s, on_download=on_download)
    raise UserError(f"--ray: {spec!r} is not a file or folder here, nor a Ray version (2.61.0, 2.61.0rc1) "
                    "or a wheel URL; expected one of those")


def installed_ray() -> RaySource:
    """The Ray beside the suite (the baseline), located without importing it."""
    spec = importlib.util.find_spec("ray")
    if spec is None or not spec.submodule_search_locations:
        raise UserError("ray: no Ray is installed beside the suite; the baseline the plugin was certified "
                        "with is read from it (pip install the Ray of tiers/releases.yaml's window)")
    folder = Path(list(spec.submodule_search_locations)[0])
    tree = DirTree(folder.parent, str(folder))
    return RaySource(tree, version_of(tree), str(folder))
