"""What verify checks of the run's own description in report.json: the embedded manifest and
the environment (pure but for reading the release's schema and this suite's declared support).

  manifest     the manifest report.json embeds is one a run of the report's release could have
               accepted: valid against that RELEASE's schemas/manifest.schema.json (an unknown
               field, a wrong type, a string node count is refused here, before any cross-check
               reads it), and passing the loader's own cross-checks (catalog.manifest.cross_problems:
               at most one node_env entry per node)
  environment  the run's Python and torch are inside what the suite declares it supports (its
               package metadata: Requires-Python and the torch requirement of pyproject.toml);
               Ray's window is the release's (the `validity` line)
"""
from __future__ import annotations

import functools
from pathlib import Path
from typing import Mapping

from conformance import SUITE_NAME
from conformance.catalog import datafiles
from conformance.report.view import Report
from conformance.sanitize import terminal


def manifest_problem(report: Report, schema_file: Path) -> str | None:
    """The most specific error of report.json's `manifest` against `schema_file`, or None (the
    manifest is the JSON as embedded: its own schema, not the report's, says what it holds)."""
    manifest = report.manifest
    problem = datafiles.compiled_schema(Path(schema_file)).first_error(manifest)
    if problem:
        return terminal(problem, limit=300)
    from conformance.catalog.manifest import cross_problems

    crossed = cross_problems(manifest)   # what the loader refuses after the schema: no run accepted it
    return terminal(crossed[0], limit=300) if crossed else None


@functools.lru_cache(maxsize=1)
def declared_support() -> dict[str, str]:
    """{'python': specifier, 'torch': specifier} the installed suite declares (its metadata is
    pyproject.toml's requires-python and dependencies)."""
    from importlib.metadata import PackageNotFoundError, metadata, requires

    from packaging.requirements import Requirement

    try:
        meta, reqs = metadata(SUITE_NAME), requires(SUITE_NAME) or []
    except PackageNotFoundError:
        return {}
    out = {"python": str(meta["Requires-Python"]) if "Requires-Python" in meta else ""}
    for text in reqs:
        req = Requirement(text)
        if req.name.lower() == "torch" and req.marker is None:
            out["torch"] = str(req.specifier)
    return out


def environment_problems(report: Report, support: Mapping[str, str] | None = None) -> list[str]:
    """Why the run's Python or torch is outside the suite's declared support (empty: inside)."""
    from packaging.specifiers import InvalidSpecifier, SpecifierSet
    from packaging.version import InvalidVersion, Version

    support = declared_support() if support is None else support
    stated = {"python": report.environment.python, "torch": report.environment.torch}
    problems = []
    for name, value in stated.items():
        spec = support.get(name)
        if not spec:
            problems.append(f"the suite declares no supported {name} range to judge environment.{name} by")
            continue
        if not isinstance(value, str):
            problems.append(f"environment.{name} {terminal(repr(value), limit=60)} is not a version")
            continue
        try:
            inside = SpecifierSet(spec).contains(Version(value), prereleases=True)
        except (InvalidVersion, InvalidSpecifier):
            problems.append(f"environment.{name} {terminal(repr(value), limit=60)} is not a version")
            continue
        if not inside:
            problems.append(f"environment.{name} {terminal(value, limit=60)} is outside the suite's supported {name} {spec}")
    return problems
