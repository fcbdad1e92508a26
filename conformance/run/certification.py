"""The one definition of a certification run: the pytest command line `ray-conformance run`
builds, and the policy `verify` judges a report's recorded arguments by.

Both read `certification_args` of schemas/report.trust.yaml through this module, so the command
and the policy cannot drift apart again (issue 30: every run of the CLI was rejected because the
command gained `-p no:logging` and `-p no:<plugin>` while the policy did not). Every argument is
either part of the definition or makes the run partial:

  part of it     `-c /dev/null` (no pytest.ini of the working folder: its addopts could narrow the
                 run unrecorded; recorded as is, and `-c null`, the older record, only in reports of
                 the releases that wrote it: `legacy_values`), `-p no:<builtin>` for the builtins the data names, `-p no:<name>`
                 for a foreign plugin (blocking one only removes it), the suite's run options
                 (manifest, out, Ray address, timeouts, fault driver: `prefixes`), display flags
                 (`flags`, `--tb=`, `--durations=`, `--color=`), and the suite's own checks folder,
                 given whole, as the one positional argument and as `--rootdir`
  partial        anything else: `-k`, `-m`, `-x`, `--deselect`, a node id, another folder, another
                 rootdir, `-p <plugin>` (loading one may reorder, skip or rewrite the checks),
                 `-p no:<builtin>` for another builtin, `--conformance-select=` (NARROWING_OPTIONS)

What a report records (`selection.args`, recorded_args): the arguments pytest really acted on,
not only those on its command line: the ini file's addopts, $PYTEST_ADDOPTS, the command line,
and `-p <name>` for every plugin loaded without being asked for on it (an installed entry point
the command did not block, $PYTEST_PLUGINS). The suite's own checks folder is recorded as
SUITE_CHECKS, so a folder of the same name elsewhere (recorded as its own path) is not the suite's.
"""
from __future__ import annotations

import functools
import os
import shlex
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Collection

if TYPE_CHECKING:
    import pytest

CHECKS_DIR = Path(__file__).resolve().parent.parent / "checks"
SUITE_PLUGIN = "ray_conformance"   # this package's pytest11 entry point (pyproject.toml)
# Plugins the suite answers itself: pytest-xdist's -n/--dist is refused with the suite's own reason
# (a run is serial), which needs xdist's options to exist.
ANSWERED_PLUGINS = frozenset({"xdist", "xdist.looponfail"})
# How a report records the suite's own checks folder (wherever the vendor installed the suite).
SUITE_CHECKS = "$SUITE/checks"
# The suite's options that select checks: a run carrying one is partial (`run --area/--check`).
NARROWING_OPTIONS = ("--conformance-select", "--conformance-shard")
# pytest options that take the next argument as their value: never part of the definition, named
# with their value (`-k device`) when refused.
VALUE_OPTIONS = frozenset({"-k", "-m", "--deselect", "-W", "-o", "--override-ini", "--maxfail", "--ignore",
                           "--ignore-glob", "--confcutdir", "--basetemp", "-n", "--dist", "--import-mode",
                           "--junitxml", "--junit-xml", "--rootdir", "--log-level", "--timeout"})
# Reports of releases published up to this day recorded the checks folder as a path ending in
# `checks` (before SUITE_CHECKS); their recorded folder is judged by that older form.
LEGACY_FOLDER_UNTIL = "2026-12-02"


@dataclass(frozen=True)
class Definition:
    """certification_args of schemas/report.trust.yaml (validated by schemas/trust.schema.json)."""

    flags: tuple[str, ...]               # display-only flags
    with_value: tuple[str, ...]          # options whose value is the next argument
    allowed_values: dict[str, tuple[str, ...]]  # option -> the values the definition allows
    prefixes: tuple[str, ...]            # `--option=` forms that are part of the definition
    folder_suffix: str                   # the legacy form of the checks folder (LEGACY_FOLDER_UNTIL)
    # option -> (older records of an allowed value, the last publication day of a release whose
    # reports may carry them)
    legacy_values: dict[str, tuple[tuple[str, ...], str]] = field(default_factory=dict)

    @property
    def blocked_builtins(self) -> tuple[str, ...]:
        """The pytest builtins every certification run blocks (`-p no:NAME`)."""
        return tuple(v.removeprefix("no:") for v in self.allowed_values.get("-p", ()) if v.startswith("no:"))


def _table_path() -> Path:
    from conformance.catalog import datafiles

    return datafiles.data_root() / "schemas" / "report.trust.yaml"


@functools.lru_cache(maxsize=4)
def _load(path: str, mtime_ns: int) -> Definition:
    from conformance.catalog import datafiles

    doc = datafiles.read_yaml_or_json(Path(path), what="trust table")
    datafiles.validate(doc, "trust", what=f"trust table {path}")
    args = doc["certification_args"]
    return Definition(flags=tuple(args["flags"]), with_value=tuple(args["with_value"]),
                      allowed_values={k: tuple(v) for k, v in args["value_flags_allowed"].items()},
                      prefixes=tuple(args["prefixes"]), folder_suffix=args["positional_suffix"],
                      legacy_values={k: (tuple(v["values"]), v["until"])
                                     for k, v in (args.get("legacy_values") or {}).items()})


def definition() -> Definition:
    path = _table_path()
    return _load(str(path), path.stat().st_mtime_ns)


# ---------------------------------------------------------------------------- the command

def foreign_plugins() -> list[str]:
    """The installed pytest plugins (pytest11 entry points) a suite run blocks: all but the suite's
    and those it answers itself."""
    from importlib.metadata import entry_points

    return sorted({ep.name for ep in entry_points(group="pytest11")} - {SUITE_PLUGIN} - ANSWERED_PLUGINS)


def fixed_args(*, verbose: bool = False) -> list[str]:
    """The arguments every certification run carries before its options: the builtins it blocks,
    the ini file it reads (none), verbosity and the short summary."""
    d = definition()
    out: list[str] = []
    for name in d.blocked_builtins:
        out += ["-p", f"no:{name}"]
    out += ["-v" if verbose else "-q", "-rfE", "-c", os.devnull]
    for name in foreign_plugins():
        out += ["-p", f"no:{name}"]
    return out


# ---------------------------------------------------------------------------- what a run records

def _builtin_plugins() -> frozenset[str]:
    from _pytest.config import builtin_plugins

    return frozenset(builtin_plugins)


def _is_suite_plugin(name: str) -> bool:
    return name == SUITE_PLUGIN or name.startswith("conformance")


def implicit_plugins(config: pytest.Config) -> list[str]:
    """Plugins pytest loaded that no `-p` on the command line asked for: installed entry points the
    command did not block (the suite's own and those it answers excepted) and $PYTEST_PLUGINS."""
    pm = config.pluginmanager
    names = []
    for plugin, _dist in pm.list_plugin_distinfo():
        name = pm.get_name(plugin)
        if name and not _is_suite_plugin(name) and name not in ANSWERED_PLUGINS:
            names.append(name)
    names += [p.strip() for p in os.environ.get("PYTEST_PLUGINS", "").split(",") if p.strip()]
    return sorted(set(names))


def _folder_token(arg: str, checks_dir: Path) -> str:
    """The suite's checks folder (given as a path or as --rootdir=) recorded as SUITE_CHECKS."""
    option, eq, value = arg.partition("=") if arg.startswith("--") else ("", "", arg)
    path = value if eq or not option else ""
    if path and not path.startswith("-") and "::" not in path:
        try:
            if Path(path).resolve() == checks_dir.resolve():
                return f"{option}={SUITE_CHECKS}" if eq else SUITE_CHECKS
        except (OSError, RuntimeError):
            pass
    return arg


def recorded_args(config: pytest.Config, checks_dir: Path = CHECKS_DIR) -> list[str]:
    """The arguments a run acted on, as its report records them (selection.args)."""
    from conformance.report.local_paths import portable_arg

    try:
        addopts = [str(a) for a in config.getini("addopts")]
    except (ValueError, KeyError):
        addopts = []
    env = shlex.split(os.environ.get("PYTEST_ADDOPTS", ""))
    given = [str(a) for a in config.invocation_params.args]
    loaded = [a for name in implicit_plugins(config) for a in ("-p", name)]
    return [portable_arg(_folder_token(a, checks_dir)) for a in [*addopts, *env, *given, *loaded]]


# ---------------------------------------------------------------------------- the policy

def _is_checks_folder(value: str, legacy: bool, d: Definition) -> bool:
    if value == SUITE_CHECKS:
        return True
    if not legacy or "::" in value or value.startswith("/"):
        return False   # the older record was display_path's: relative, ~/..., or the bare name
    folder = value.rstrip("/")
    return folder == d.folder_suffix or folder.endswith(f"conformance/{d.folder_suffix}")


def _plugin_problem(value: str | None, d: Definition) -> bool:
    """True when `-p VALUE` is not part of the definition."""
    if value is None:
        return True
    if value in d.allowed_values.get("-p", ()):
        return False
    if not value.startswith("no:"):
        return True   # loading a plugin: it may reorder, skip or rewrite the checks
    name = value.removeprefix("no:")
    # blocking a foreign plugin only removes it; blocking a builtin or the suite itself alters the run
    return not name or name in _builtin_plugins() or _is_suite_plugin(name)


# The legacy form of the checks folder, among legacy_forms()'s names (the others are options).
LEGACY_FOLDER = "folder"


def legacy_forms(published: str | None) -> frozenset[str]:
    """The older records a report of a release published on `published` (YYYY-MM-DD) may carry:
    LEGACY_FOLDER up to LEGACY_FOLDER_UNTIL, and each option of the definition's `legacy_values` up
    to its `until`. None (a release with no publication date): none."""
    if published is None:
        return frozenset()
    forms = {option for option, (_values, until) in definition().legacy_values.items() if published <= until}
    return frozenset(forms | ({LEGACY_FOLDER} if published <= LEGACY_FOLDER_UNTIL else set()))


def _allowed(option: str, d: Definition, forms: Collection[str]) -> tuple[str, ...]:
    legacy = d.legacy_values.get(option, ((), ""))[0] if option in forms else ()
    return (*d.allowed_values.get(option, ()), *legacy)


def arg_problems(args: object, *, legacy: bool | Collection[str] = False) -> list[str]:
    """Why recorded pytest arguments are not a certification run's ([] when they are one).

    `legacy`: the older records the report's release may carry (legacy_forms; True: every one):
    the checks folder as a path ending in the definition's folder name (before SUITE_CHECKS), an
    option's older value (`-c null`)."""
    if not isinstance(args, list) or not all(isinstance(a, str) for a in args):
        return ["selection.args is not a list of strings"]
    d = definition()
    forms: Collection[str] = ({LEGACY_FOLDER, *d.legacy_values} if legacy is True
                              else () if legacy is False else legacy)
    problems: list[str] = []
    folders: list[str] = []
    rootdirs: list[str] = []
    has_ini = has_manifest = False
    i = 0
    while i < len(args):
        arg = args[i]
        if arg in d.with_value:
            value = args[i + 1] if i + 1 < len(args) else None
            bad = _plugin_problem(value, d) if arg == "-p" else value not in _allowed(arg, d, forms)
            if bad:
                problems.append(f"{arg} {value}" if value is not None else arg)
            has_ini = has_ini or (arg == "-c" and not bad)
            i += 2
            continue
        if arg in VALUE_OPTIONS:
            problems.append(f"{arg} {args[i + 1]}" if i + 1 < len(args) else arg)
            i += 2
            continue
        option = arg.partition("=")[0]
        if arg.startswith("--rootdir="):
            rootdirs.append(arg.partition("=")[2])
        elif option in NARROWING_OPTIONS:
            problems.append(arg)
        elif arg in d.flags or any(arg.startswith(p) for p in d.prefixes):
            has_manifest = has_manifest or arg.startswith("--conformance-manifest=")
        elif not arg.startswith("-"):
            folders.append(arg)
        else:
            problems.append(arg)
        i += 1
    old_folder = LEGACY_FOLDER in forms
    problems += [f for f in folders if not _is_checks_folder(f, old_folder, d)]
    problems += [f"--rootdir={r}" for r in rootdirs if not _is_checks_folder(r, old_folder, d)]
    out = []
    if problems:
        out.append(f"pytest argument(s) {' '.join(problems)} narrow or alter the run (a certification run "
                   f"carries only the suite's checks folder, -c /dev/null, -p no:<plugin>, the suite's run "
                   f"options and display flags)")
    if len(folders) != 1 or len(rootdirs) > 1:
        out.append(f"the suite's checks folder must be the one positional argument, given once "
                   f"({len(folders)} given{', with ' + str(len(rootdirs)) + ' --rootdir' if len(rootdirs) > 1 else ''})")
    if not has_ini:
        out.append("no -c /dev/null: a pytest.ini in the run's folder could add arguments (addopts) unrecorded")
    if not has_manifest:
        out.append("no --conformance-manifest=: the suite's plugin did not run")
    return out


def classify_option(option: str) -> str:
    """'definition', 'narrows' or 'unknown' for a suite option name such as --conformance-out."""
    if option in NARROWING_OPTIONS:
        return "narrows"
    return "definition" if any(p.rstrip("=") == option for p in definition().prefixes) else "unknown"
