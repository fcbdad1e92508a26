"""What verify may believe: the trust status of every field (schemas/report.trust.yaml), applied.

The vendor owns its signing key, so a signature cannot make a field true. Each field of
report.json and of the Statement is recomputed, cross-checked, a signed claim, or
informational (the data file says which, and why). This module is the engine over that file:

  status / unknown_fields   the status of a field; the fields of a document that have none
                            (verify refuses them: a new field cannot slip through unjudged)
  facts / tier_context      facts several fields state (nodes, devices per node, domain
                            labels): every source present must agree, the winner feeds the tier
  run_problems              why the run is not a whole, uninterrupted certification run
                            (interrupted, recorded pytest arguments, collection)
  time_problems             timestamps ordered, not in the future, inside the release's window;
                            the window holds the checks' recorded durations (window_problems)
  superseded_problem        a run that started after a later release was published
  ray_version_problem       the Ray version is a release version (pre-releases named)

Pure functions over parsed JSON: every extractor is total (a hostile value of the wrong type is
"absent" or a contradiction, never an exception).
"""
from __future__ import annotations

import functools
import re
from collections import Counter
from dataclasses import dataclass
from datetime import date, datetime, timedelta, timezone
from typing import Any, Callable, Mapping

from conformance.catalog import data
from conformance.catalog.strict_input import utc_datetime
from conformance.report.sanitize import terminal

STATUSES = ("recomputed", "cross-checked", "signed claim", "informational")
SECTIONS = ("report", "statement")
CLOCK_SKEW = timedelta(minutes=5)  # a signer's clock may run this far ahead of the verifier's


def table_path():  # noqa: ANN201 - a Path
    return data.data_root() / "schemas" / "report.trust.yaml"


@functools.lru_cache(maxsize=4)
def _load(path: str, mtime_ns: int) -> dict[str, Any]:
    doc = data.read_yaml_or_json(table_path(), what="trust table")
    data.validate(doc, "trust", what=f"trust table {table_path()}")
    return doc


def load_table() -> dict[str, Any]:
    """schemas/report.trust.yaml, schema-validated (cached per file version)."""
    path = table_path()
    return _load(str(path), path.stat().st_mtime_ns)


# ---------------------------------------------------------------------------- statuses

def _parent(path: str) -> str | None:
    if path.endswith("[]"):
        return path[:-2]
    cut = path.rfind(".")
    return path[:cut] if cut > 0 else None


def status(section: str, path: str, table: Mapping[str, Any] | None = None) -> dict[str, Any] | None:
    """The entry that gives `path` its status: its own, else the nearest ancestor's `subtree`
    entry or `ancestor.*` entry (an open object's other keys). None: the field has no status."""
    fields = (table or load_table())[section]
    if path in fields:
        return fields[path]
    if path.endswith("[]"):  # a list's items have the list's status
        return status(section, path[:-2], table)
    child, parent = path, _parent(path)
    while parent is not None:
        wildcard = fields.get(f"{parent}.*")
        if wildcard is not None and not child.endswith("[]"):
            return wildcard
        entry = fields.get(parent)
        if entry is not None and entry.get("subtree"):
            return entry
        child, parent = parent, _parent(parent)
    return None


def _covered_below(section: str, path: str, table: Mapping[str, Any]) -> bool:
    """True when `path`'s status also covers everything below it (no need to look further)."""
    fields = table[section]
    entry = fields.get(path)
    if entry is None:  # a list's items: as the list; otherwise inherited from a subtree or wildcard entry
        return _covered_below(section, path[:-2], table) if path.endswith("[]") else True
    return bool(entry.get("subtree")) and not any(k.startswith(path + ".") or k.startswith(path + "[]")
                                                  for k in fields)


def unknown_fields(section: str, doc: Any, table: Mapping[str, Any] | None = None, limit: int = 10) -> list[str]:
    """Paths of `doc` (report.json or the Statement) that have no trust status, at most `limit`."""
    table = table or load_table()
    found: list[str] = []
    stack: list[tuple[str, Any]] = []

    def children(prefix: str, value: Any) -> None:
        if isinstance(value, dict):
            for k, v in value.items():
                stack.append((f"{prefix}.{k}" if prefix else str(k), v))
        elif isinstance(value, list) and prefix:
            for v in value:
                stack.append((f"{prefix}[]", v))

    children("", doc)
    seen: set[str] = set()
    while stack and len(found) < limit:
        path, value = stack.pop()
        if path in seen and not isinstance(value, (dict, list)):
            continue
        seen.add(path)
        if status(section, path, table) is None:
            if path not in found:
                found.append(path)
            continue
        if not _covered_below(section, path, table):
            children(path, value)
    return sorted(found)


# ---------------------------------------------------------------------------- facts

def _get(doc: Any, *keys: str) -> Any:
    for k in keys:
        if not isinstance(doc, dict):
            return None
        doc = doc.get(k)
    return doc


def _count(value: Any) -> int | None:
    """A positive whole number (int, or a float such as Ray's 4.0), else None."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    if isinstance(value, float) and not value.is_integer():
        return None
    return int(value) if value > 0 else None


def _device_nodes(report: Any) -> list[dict[str, Any]]:
    nodes = _get(report, "environment", "devices", "nodes")
    return [n for n in nodes if isinstance(n, dict)] if isinstance(nodes, list) else []


def _with_devices(report: Any) -> list[dict[str, Any]]:
    return [n for n in _device_nodes(report) if _count(n.get("count"))]


def _max_devices(report: Any) -> int | None:
    counts = [_count(n.get("count")) for n in _with_devices(report)]
    return max((c for c in counts if c), default=None)


def _domain_keys() -> set[str]:
    from conformance.catalog.labels import load_vocabulary

    return {k.key for k in load_vocabulary().domain_keys()}


def _labels_say_domains(report: Any) -> bool | None:
    nodes = _with_devices(report)
    if not nodes:
        return None
    keys = _domain_keys()
    return any(isinstance(n.get("labels"), dict) and set(n["labels"]) & keys for n in nodes)


def _flag(value: Any) -> bool | None:
    return value if isinstance(value, bool) else None


def _not_remote(report: Any) -> bool:
    return _get(report, "cluster", "mode") != "remote"


# Each fact source of the trust table, read from a report (None: this report does not state it).
# A test holds this table and the file's `fact:` entries equal, so neither can forget the other.
FACT_SOURCES: dict[str, Callable[[Any], Any]] = {
    "shape.nodes": lambda r: _count(_get(r, "shape", "nodes")),
    "cluster.nodes": lambda r: _count(_get(r, "cluster", "nodes")),
    "preflight.nodes": lambda r: _count(_get(r, "preflight", "nodes")),
    # the nodes the suite was told to start (a remote cluster is not started by the suite)
    "manifest.cluster.nodes": lambda r: _count(_get(r, "manifest", "cluster", "nodes")) if _not_remote(r) else None,
    "environment.devices.nodes": lambda r: len(_device_nodes(r)) or None,
    "shape.devices_per_node": lambda r: _count(_get(r, "shape", "devices_per_node")),
    "environment.devices.nodes[].count": _max_devices,
    "manifest.accelerator.expected.devices_per_node":
        lambda r: _count(_get(r, "manifest", "accelerator", "expected", "devices_per_node")),
    "shape.domain_labels": lambda r: _flag(_get(r, "shape", "domain_labels")),
    "environment.devices.nodes[].labels": _labels_say_domains,
    # a manifest expecting domains says the nodes carry domain labels; one expecting none says nothing
    "manifest.topology.expected.domains":
        lambda r: True if isinstance(_get(r, "manifest", "topology", "expected", "domains"), list)
        and _get(r, "manifest", "topology", "expected", "domains") else None,
}


@dataclass(frozen=True)
class Fact:
    name: str
    value: Any  # the winner's value (None: no field states it)
    sources: dict[str, Any]  # every source that states it -> its value
    problem: str | None  # a contradiction (naming both fields) or a lone uncorroborated source


def fact_sources(table: Mapping[str, Any] | None = None) -> dict[str, list[tuple[str, bool]]]:
    """fact name -> [(report field, wins)] in the table's order."""
    out: dict[str, list[tuple[str, bool]]] = {}
    for path, entry in (table or load_table())["report"].items():
        if entry.get("fact"):
            out.setdefault(entry["fact"], []).append((path, entry.get("wins") is True))
    return out


def _shown(value: Any) -> str:
    return terminal(repr(value), limit=60)


def facts(report: Any, table: Mapping[str, Any] | None = None) -> dict[str, Fact]:
    """Every fact of the table, cross-checked across the fields that state it."""
    out = {}
    for name, sources in fact_sources(table).items():
        stated = {path: FACT_SOURCES[path](report) for path, _ in sources}
        stated = {p: v for p, v in stated.items() if v is not None}
        winner = next((p for p, wins in sources if wins and p in stated), next(iter(stated), None))
        problem = None
        if winner is not None:
            against = [p for p, v in stated.items() if v != stated[winner]]
            if against:
                problem = "; ".join(f"{winner} says {_shown(stated[winner])} but {p} says {_shown(stated[p])}"
                                    for p in against)
            elif len(stated) == 1:
                problem = f"only {winner} states it ({_shown(stated[winner])}); nothing corroborates it"
        out[name] = Fact(name, stated.get(winner) if winner else None, stated, problem)
    return out


def tier_context(report: Any):  # noqa: ANN201 - conformance.tiers.RunContext
    """The tier inputs verify believes: the cross-checked facts (their winners) and the manifest's
    transport claim; never cluster.nodes or shape alone."""
    from conformance.catalog.ladder import RunContext

    f = facts(report)
    shape = {"nodes": f["nodes"].value, "devices_per_node": f["devices_per_node"].value,
             "domain_labels": f["domain_labels"].value}
    return RunContext(transport_declared=bool(_get(report, "manifest", "transport")),
                      nodes=int(f["nodes"].value or 0), shape=shape)


# ---------------------------------------------------------------------------- the run

def arg_problems(args: Any, *, legacy: bool = False) -> list[str]:
    """Recorded pytest arguments a certification run may not carry: the one definition of a
    certification run (conformance/run/certification.py, which also builds the run's command)."""
    from conformance.run.certification import arg_problems as definition_problems

    return [terminal(p, limit=400) for p in definition_problems(args, legacy=legacy)]


def run_problems(report: Any, *, legacy: bool = False) -> list[str]:
    """Why this is not a whole, uninterrupted run, beyond what conformance.selection reads.
    `legacy`: the report's release predates the recorded checks-folder token (arg_problems)."""
    problems = []
    interrupted, reason = _get(report, "interrupted"), _get(report, "interrupted_reason")
    if interrupted is not False:
        problems.append(f"interrupted is {_shown(interrupted)}" + (f" ({terminal(reason, limit=120)})"
                                                                   if isinstance(reason, str) else ""))
    elif reason is not None:
        problems.append(f"interrupted is false but interrupted_reason says {terminal(repr(reason), limit=120)}")
    selection = _get(report, "selection")
    if not isinstance(selection, dict) or selection.get("whole_checklist_collected") is not True:
        problems.append("selection.whole_checklist_collected is "
                        f"{_shown(selection.get('whole_checklist_collected')) if isinstance(selection, dict) else 'absent'}"
                        " (the checks folder must be collected whole)")
    if isinstance(selection, dict):
        problems += arg_problems(selection.get("args"), legacy=legacy)
    problems += node_id_problems(report)
    return problems


# A test of the suite, as pytest names it with --rootdir at the suite's checks folder:
# <area folder>/test_<module>.py::test_<name>[<params>]. A run from another rootdir or folder names
# its tests otherwise (../checks/..., an absolute path, a module outside the areas' folders).
_NODE_ID = re.compile(r"^[a-z][a-z0-9_]*(/[a-z][a-z0-9_]*)*/test_[A-Za-z0-9_]+\.py::([A-Z][A-Za-z0-9_]*::)?"
                      r"test_[A-Za-z0-9_]+(\[[^\n]*\])?$")


def node_id_problems(report: Any) -> list[str]:
    """Each check's tests must be node ids of the suite's checks folder, each test once."""
    checks = _get(report, "checks")
    ids: list[Any] = []
    for c in checks if isinstance(checks, list) else []:
        tests = c.get("tests") if isinstance(c, dict) else None
        ids += tests if isinstance(tests, list) else [tests]
    bad = [t for t in ids if not isinstance(t, str) or not _NODE_ID.match(t)]
    problems = []
    if bad:
        problems.append(f"test(s) {terminal(', '.join(map(str, bad[:3])), limit=200)} are not node ids of the "
                        f"suite's checks folder (run from another folder or rootdir)")
    seen = Counter(t for t in ids if isinstance(t, str))
    repeated = sorted(t for t, n in seen.items() if n > 1)
    if repeated:
        problems.append(f"test(s) {terminal(', '.join(repeated[:3]), limit=200)} are counted for more than one check")
    return problems


# ---------------------------------------------------------------------------- time

def parse_time(report: Any, field: str) -> tuple[datetime | None, str | None]:
    value = _get(report, field)
    if not isinstance(value, str):
        return None, f"{field} is not a date-time string"
    try:
        return utc_datetime(value), None
    except ValueError as exc:
        return None, f"{field}: {terminal(str(exc), limit=160)}"


def time_problems(report: Any, *, now: datetime, at: date | None = None,
                  published: date | None = None) -> list[str]:
    """started_at <= finished_at <= the verifier's clock (and --at), started_at on or after the
    release's publication: a backdated run cannot keep an expired waiver alive, and a run
    cannot predate the release it claims."""
    started, why_start = parse_time(report, "started_at")
    finished, why_end = parse_time(report, "finished_at")
    problems = [w for w in (why_start, why_end) if w]
    if started and finished and started > finished:
        problems.append(f"started_at {started.isoformat()} is after finished_at {finished.isoformat()}")
    if finished and finished > now + CLOCK_SKEW:
        problems.append(f"finished_at {finished.isoformat()} is in the future of the verifier's clock "
                        f"({now.replace(microsecond=0).isoformat()})")
    if finished and at is not None and finished.date() > at:
        problems.append(f"finished_at {finished.date()} is after --at {at}")
    if started and published is not None and started.date() < published:
        problems.append(f"started_at {started.date()} is before the release was published ({published})")
    if started and finished and started <= finished:
        problems += window_problems(report, (finished - started).total_seconds())
    return problems


# The recorded times have whole seconds (started_at, finished_at) and each check's duration is
# rounded to the millisecond: the window may look this much shorter than the time it held.
WINDOW_SLACK_S = 2.0


def window_problems(report: Any, window_s: float) -> list[str]:
    """The run's window must hold what it says happened in it: checks run one after another (the
    suite refuses -n), so their recorded durations add up to at most started_at..finished_at, and
    duration_s (the run's own clock) is at most the window too. A negative duration is no duration."""
    checks = _get(report, "checks")
    durations = [c.get("duration_s") for c in checks if isinstance(c, dict)] if isinstance(checks, list) else []
    numbers = [d for d in durations if isinstance(d, (int, float)) and not isinstance(d, bool)]
    problems = []
    negative = [str(c.get("id")) for c in checks or [] if isinstance(c, dict)
                and isinstance(c.get("duration_s"), (int, float)) and c["duration_s"] < 0]
    if negative:
        problems.append(f"check(s) {terminal(', '.join(negative[:5]), limit=80)} record a negative duration_s")
    total = sum(d for d in numbers if d >= 0)
    if total > window_s + WINDOW_SLACK_S:
        problems.append(f"the checks' durations add up to {total:.1f} s, more than the run's window "
                        f"started_at..finished_at ({window_s:.0f} s) can hold")
    run = _get(report, "duration_s")
    if isinstance(run, (int, float)) and not isinstance(run, bool) and (run < 0 or run > window_s + WINDOW_SLACK_S):
        problems.append(f"duration_s {run} does not fit the run's window started_at..finished_at ({window_s:.0f} s)")
    return problems


def superseded_problem(version: Any, started: datetime | None, listed: Mapping[str, Any]) -> str | None:
    """A run that started after a later release was published claims a superseded release (the
    releases file is append-only: later entries are newer). Days compare whole: a release published
    the day the run started does not supersede it. `listed`: version -> releases.Release, in order."""
    if not isinstance(version, str) or version not in listed or started is None:
        return None
    versions = list(listed)
    for later in versions[versions.index(version) + 1:]:
        day = listed[later].published_date()
        if day is not None and day < started.date():
            return (f"release {version} was superseded by {later} (published {day}) before this run started "
                    f"({started.date()}); a run made after that certifies against the newer release")
    return None


def utc_now() -> datetime:
    return datetime.now(timezone.utc)


# ---------------------------------------------------------------------------- Ray version

def ray_version_problem(value: Any) -> str | None:
    """None when `value` is a Ray release version (N.N.N); otherwise what it is instead."""
    from packaging.version import InvalidVersion, Version

    if not isinstance(value, str):
        return f"environment.ray {_shown(value)} is not a version string"
    try:
        v = Version(value)
    except InvalidVersion:
        return f"environment.ray {_shown(value)} is not a version"
    if v.is_devrelease or v.is_prerelease:
        return f"environment.ray {_shown(value)} is a pre-release, not a Ray release"
    if v.is_postrelease or v.local or len(v.release) != 3 or str(v) != value:
        return f"environment.ray {_shown(value)} is not a Ray release version (N.N.N)"
    return None


# ---------------------------------------------------------------------------- docs

def markdown_table(table: Mapping[str, Any] | None = None) -> str:
    """docs/signing.md's trust table (generated; `ray-conformance docs`)."""
    from tabulate import tabulate

    table = table or load_table()
    rows = []
    for section in SECTIONS:
        for path, e in table[section].items():
            if e["status"] == "cross-checked":
                if e.get("fact"):
                    others = [p for p, _ in fact_sources(table)[e["fact"]] if p != path]
                    winner = next((p for p, w in fact_sources(table)[e["fact"]] if w), None)
                    detail = f"fact *{e['fact']}*: agrees with {', '.join(others)}; {winner} wins"
                else:
                    detail = f"agrees with {', '.join(e.get('with', [])) or 'the fields below'}" + \
                             (f"; {e['wins']} wins" if isinstance(e.get("wins"), str) else "")
            else:
                detail = ""
            rows.append([f"`{path}`" if section == "report" else f"Statement `{path}`",
                         e["status"] + (" (and below)" if e.get("subtree") else ""),
                         detail.replace("|", "/"), e.get("checked_by", "-"), e["why"].replace("|", "/")])
    return tabulate(rows, headers=["field", "status", "cross-checked with / wins", "verify line", "why"],
                    tablefmt="github")
