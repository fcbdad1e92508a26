"""What verify may believe of the run's record: the trust table (signing/trust_table.py) applied.

The vendor owns its signing key, so a signature cannot make a field true. The fields the table
marks cross-checked are held to each other here, and the record of the run to itself:

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
from datetime import date, datetime, timedelta
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable, Collection, Mapping

from conformance.catalog import datafiles
from conformance.catalog.strict_input import utc_datetime
from conformance.jsontypes import Untrusted
from conformance.sanitize import terminal
from conformance.signing.trust_table import fact_sources

SHARED_SHAPE = "shared"   # the manifest's own cluster (cluster/manager.py SHARED): the one a remote run connects to

if TYPE_CHECKING:
    from conformance.catalog.ladder import RunContext
    from conformance.catalog.releases import Release

CLOCK_SKEW = timedelta(minutes=5)  # a signer's clock may run this far ahead of the verifier's


# ---------------------------------------------------------------------------- facts

def _get(doc: Untrusted, *keys: str) -> Untrusted:
    for k in keys:
        if not isinstance(doc, dict):
            return None
        doc = doc.get(k)
    return doc


@dataclass(frozen=True)
class Invalid:
    """A source that states its fact wrongly (a string count, a node listed twice, nodes that
    disagree): never "absent", always a contradiction naming the field."""

    why: str

    def __repr__(self) -> str:
        return self.why


def _count(value: Untrusted, zero_absent: bool = False) -> int | None | Invalid:
    """A positive whole number (int, or a float such as Ray's 4.0); None when absent (or 0 where
    the report writes 0 for "not observed"); anything else present is Invalid (a "2" must not
    drop out of the cross-check)."""
    if value is None or (zero_absent and value == 0 and not isinstance(value, bool)):
        return None
    if isinstance(value, bool) or not isinstance(value, (int, float)) \
            or (isinstance(value, float) and not value.is_integer()) or value <= 0:
        return Invalid(f"{_shown(value)} is not a positive whole number")
    return int(value)


def _device_nodes(report: Untrusted) -> list[Untrusted]:
    nodes = _get(report, "environment", "devices", "nodes")
    return list(nodes) if isinstance(nodes, list) else []


def _node_id(node: Untrusted) -> str | None:
    return node.get("node_id") if isinstance(node, dict) and isinstance(node.get("node_id"), str) \
        and node["node_id"] else None


def _distinct_nodes(report: Untrusted) -> int | None | Invalid:
    """The alive Ray nodes Ray listed, each once: a node id listed twice (or a node whose
    ray.io/node-id label names another node) is the same node counted twice."""
    nodes = _device_nodes(report)
    if not nodes:
        return None
    found = [_node_id(n) for n in nodes]
    ids = [i for i in found if i is not None]
    if len(ids) != len(found):
        return Invalid(f"an entry of {len(nodes)} has no node_id")
    dup = sorted({i for i in ids if ids.count(i) > 1})
    if dup:
        return Invalid(f"node {terminal(dup[0][:16], limit=20)} listed {ids.count(dup[0])} times")
    for n in nodes:
        if not isinstance(n, dict):  # every entry has a node_id (above): an object
            continue
        own = n.get("labels", {}).get("ray.io/node-id") if isinstance(n.get("labels"), dict) else None
        if own is not None and own != n["node_id"]:
            return Invalid(f"node {terminal(n['node_id'][:16], limit=20)} carries ray.io/node-id "
                           f"{terminal(str(own)[:16], limit=20)}")
    return len(nodes)


def _every_node(report: Untrusted, what: str, read: Callable[[dict[str, Any]], Any]) -> Any:
    """The value `read` gives on EVERY node Ray listed (a per-node fact holds on every node, never
    on the best one): None when no node is listed, Invalid when nodes disagree or one is unreadable."""
    nodes = _device_nodes(report)
    if not nodes:
        return None
    values = []
    for n in nodes:
        value = read(n) if isinstance(n, dict) else Invalid("an entry is not an object")
        if isinstance(value, Invalid):
            return Invalid(f"node {terminal(str(_node_id(n))[:16], limit=20)}: {what} {value.why}")
        values.append(value)
    if any(v != values[0] for v in values):
        shown = ", ".join(f"{terminal(str(_node_id(n))[:8], limit=10)}: {_shown(v)}" for n, v in zip(nodes, values))
        return Invalid(f"differs across nodes ({shown}); it must hold on every node")
    return values[0]


def _node_count(node: dict[str, Any]) -> int | Invalid:
    count = node.get("count")
    got = _count(count)
    return got if isinstance(got, int) else Invalid(f"count {_shown(count)} is not a positive whole number")


def _node_type(node: dict[str, Any]) -> str | Invalid:
    """The accelerator type Ray reported for the node (its ray.io/accelerator-type label must agree)."""
    value = node.get("accelerator_type")
    label = node.get("labels", {}).get("ray.io/accelerator-type") if isinstance(node.get("labels"), dict) else None
    if not isinstance(value, str) or not value:
        return Invalid(f"accelerator_type {_shown(value)} is not a name")
    if label is not None and label != value:
        return Invalid(f"accelerator_type {_shown(value)} but label ray.io/accelerator-type {_shown(label)}")
    return value


def domain_keys_of(labels_file: str | Path | None = None) -> frozenset[str]:
    """The domain label keys of a label vocabulary file (default: this installation's
    tiers/labels.yaml; verify passes the release's)."""
    from conformance.catalog.labels import labels_path

    path = Path(labels_file) if labels_file is not None else labels_path()
    return _domain_keys_at(str(path), path.stat().st_mtime_ns, path.stat().st_size)


@functools.lru_cache(maxsize=8)
def _domain_keys_at(path: str, mtime_ns: int, size: int) -> frozenset[str]:
    """Parsed and validated once per file version (verify reads it for every submission)."""
    from conformance.catalog.labels import parse_vocabulary

    vocabulary = parse_vocabulary(datafiles.read_yaml_or_json(Path(path), what="labels vocabulary"))
    return frozenset(k.key for k in vocabulary.domain_keys())


def _node_has_domains(keys: frozenset[str]) -> Callable[[dict[str, Any]], bool]:
    return lambda n: isinstance(n.get("labels"), dict) and bool(set(n["labels"]) & keys)


def _flag(value: Untrusted) -> bool | None | Invalid:
    return value if value is None or isinstance(value, bool) else Invalid(f"{_shown(value)} is not true or false")


def _name(value: Untrusted) -> str | None | Invalid:
    return value if value is None or (isinstance(value, str) and value) else Invalid(f"{_shown(value)} is not a name")


RAY_ADDRESS_OPTION = "--conformance-ray-address"


def runs_remote(report: Untrusted) -> bool:
    """The run was pointed at a cluster the suite did not start, as its recorded command line
    (selection.args) says; never as the informational cluster.mode says."""
    args = _get(report, "selection", "args")
    return isinstance(args, list) and any(isinstance(a, str) and (a == RAY_ADDRESS_OPTION or
                                                                  a.startswith(RAY_ADDRESS_OPTION + "="))
                                          for a in args)


def _domains_claimed(report: Untrusted) -> bool | None | Invalid:
    domains = _get(report, "manifest", "topology", "expected", "domains")
    if domains is None:
        return None
    if not isinstance(domains, list):
        return Invalid(f"{_shown(domains)} is not a list")
    return True if domains else None


# Facts that are no tier input: one field stating them alone is no problem, only a contradiction is.
ALONE_OK = frozenset({"resource", "accelerator_type"})

# Each fact source of the trust table, read from a report (None: this report does not state it;
# Invalid: it states it wrongly). `keys`: the domain label keys of the release's label vocabulary.
# A test holds this table and the file's `fact:` entries equal, so neither can forget the other.
FACT_SOURCES: dict[str, Callable[[Any, frozenset[str]], Any]] = {
    "shape.nodes": lambda r, k: _count(_get(r, "shape", "nodes")),
    "cluster.nodes": lambda r, k: _count(_get(r, "cluster", "nodes"), zero_absent=True),  # 0: no cluster started
    "preflight.nodes": lambda r, k: _count(_get(r, "preflight", "nodes"), zero_absent=True),  # 0: not probed
    # the nodes the suite was told to start (a cluster given with --conformance-ray-address is not)
    "manifest.cluster.nodes": lambda r, k: None if runs_remote(r) else _count(_get(r, "manifest", "cluster", "nodes")),
    "environment.devices.nodes": lambda r, k: _distinct_nodes(r),
    "shape.devices_per_node": lambda r, k: _count(_get(r, "shape", "devices_per_node")),
    "environment.devices.nodes[].count": lambda r, k: _every_node(r, "devices", _node_count),
    "manifest.accelerator.expected.devices_per_node":
        lambda r, k: _count(_get(r, "manifest", "accelerator", "expected", "devices_per_node")),
    "shape.domain_labels": lambda r, k: _flag(_get(r, "shape", "domain_labels")),
    "environment.devices.nodes[].labels": lambda r, k: _every_node(r, "domain labels", _node_has_domains(k)),
    # a manifest expecting domains says the nodes carry domain labels; one expecting none says nothing
    "manifest.topology.expected.domains": lambda r, k: _domains_claimed(r),
    "environment.devices.resource": lambda r, k: _name(_get(r, "environment", "devices", "resource")),
    "manifest.accelerator.resource_name": lambda r, k: _name(_get(r, "manifest", "accelerator", "resource_name")),
    "environment.devices.nodes[].accelerator_type": lambda r, k: _every_node(r, "accelerator type", _node_type),
    "manifest.accelerator.expected.accelerator_type":
        lambda r, k: _name(_get(r, "manifest", "accelerator", "expected", "accelerator_type")),
}


@dataclass(frozen=True)
class Fact:
    name: str
    value: Any  # the winner's value (None: no field states it)
    sources: dict[str, Any]  # every source that states it -> its value
    problem: str | None  # a contradiction (naming both fields) or a lone uncorroborated source


def _shown(value: Untrusted) -> str:
    return terminal(repr(value), limit=60)


def facts(report: Untrusted, table: Mapping[str, Any] | None = None,
          domain_keys: frozenset[str] | None = None) -> dict[str, Fact]:
    """Every fact of the table, cross-checked across the fields that state it. `domain_keys`: the
    release's domain label keys (default: this installation's)."""
    keys = domain_keys if domain_keys is not None else domain_keys_of()
    out = {}
    for name, sources in fact_sources(table).items():
        stated = {path: FACT_SOURCES[path](report, keys) for path, _ in sources}
        stated = {p: v for p, v in stated.items() if v is not None}
        invalid = [f"{p}: {v.why}" for p, v in stated.items() if isinstance(v, Invalid)]
        stated = {p: v for p, v in stated.items() if not isinstance(v, Invalid)}
        winner = next((p for p, wins in sources if wins and p in stated), next(iter(stated), None))
        problems = list(invalid)
        if winner is not None:
            problems += [f"{winner} says {_shown(stated[winner])} but {p} says {_shown(stated[p])}"
                         for p, v in stated.items() if v != stated[winner]]
            if len(stated) == 1 and not invalid and name not in ALONE_OK:
                problems.append(f"only {winner} states it ({_shown(stated[winner])}); nothing corroborates it")
        out[name] = Fact(name, stated.get(winner) if winner and not problems else None, stated,
                         "; ".join(problems) or None)
    return out


def tier_context(report: Untrusted, domain_keys: frozenset[str] | None = None) -> RunContext:
    """The tier inputs verify believes: the cross-checked facts (their winners) and the manifest's
    transport claim; never cluster.nodes or shape alone, nothing from a contradicted fact."""
    from conformance.catalog.ladder import RunContext

    f = facts(report, domain_keys=domain_keys)
    shape = {"nodes": f["nodes"].value, "devices_per_node": f["devices_per_node"].value,
             "domain_labels": f["domain_labels"].value}
    return RunContext(transport_declared=bool(_get(report, "manifest", "transport")),
                      nodes=int(f["nodes"].value or 0), shape=shape)


# ---------------------------------------------------------------------------- the run

def arg_problems(args: Untrusted, *, legacy: bool | Collection[str] = False) -> list[str]:
    """Recorded pytest arguments a certification run may not carry: the one definition of a
    certification run (conformance/run/certification.py, which also builds the run's command)."""
    from conformance.run.certification import arg_problems as definition_problems

    return [terminal(p, limit=400) for p in definition_problems(args, legacy=legacy)]


def run_problems(report: Untrusted, *, legacy: bool | Collection[str] = False) -> list[str]:
    """Why this is not a whole, uninterrupted run, beyond what conformance.selection reads.
    `legacy`: the older records the report's release may carry (certification.legacy_forms)."""
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
    problems += remote_problems(report)
    return problems


def _suites_own(entry: Mapping[str, Any]) -> bool:
    """A cluster.history entry that is not the vendor's cluster. Only `mode: remote` says a cluster
    was the vendor's; an entry naming no mode, or whose `ok` is missing, is the suite's (held-out round
    38, N38_12/13: deleting either let --conformance-ray-address stand beside the suite's own starts).
    The one exception is what a run on the vendor's cluster honestly writes when connecting failed:
    the shared shape, `ok: false`, no mode and none of a started cluster's figures
    (cluster/manager.py: every other shape is turned away before the manager there)."""
    if entry.get("mode") == "remote":
        return False
    failed_connect = (entry.get("ok") is False and entry.get("mode") is None and entry.get("shape") == SHARED_SHAPE
                      and "nodes" not in entry and "start_s" not in entry)
    return not failed_connect


def remote_problems(report: Untrusted) -> list[str]:
    """The command line and the cluster record agree on who started the clusters: a run pointed at
    the vendor's cluster (--conformance-ray-address) connects to it for every shape it runs and starts
    none of its own (conformance.cluster.manager: only the shared shape, mode "remote"), and a run
    the suite's own clusters served records no remote one. runs_remote widens some bounds (the RDT
    fetch timeout of FR-012..016: same_measurement.stretch_problems), so the argument alone, beside
    clusters the suite started, is refused (held-out round 34, X1)."""
    history = _get(report, "cluster", "history")
    entries = [e for e in history if isinstance(e, dict)] if isinstance(history, list) else []
    own = sorted({f"{terminal(str(e.get('shape')), limit=40)} ({terminal(str(e.get('mode')), limit=20)})"
                  for e in entries if _suites_own(e)})
    if runs_remote(report) and own:
        return [f"selection.args name {RAY_ADDRESS_OPTION}, but cluster.history records clusters the suite "
                f"started (or names no mode): {terminal(', '.join(own), limit=160)}"]
    if not runs_remote(report) and any(e.get("mode") == "remote" for e in entries):
        return [f"cluster.history records a remote cluster, but selection.args do not name {RAY_ADDRESS_OPTION}"]
    left = _get(report, "host", "left_behind")
    if not runs_remote(report) and isinstance(left, dict) and "cluster_kept" in left:
        # report.md would tell the reader the vendor's cluster keeps what this run left (held-out round 38, N38_16)
        return [f"host.left_behind.cluster_kept names what a vendor's cluster kept, but selection.args do not name "
                f"{RAY_ADDRESS_OPTION}: the run's clusters were the suite's"]
    return []


# A test of the suite, as pytest names it with --rootdir at the suite's checks folder:
# <area folder>/test_<module>.py::test_<name>[<params>], the area's folder holding its modules
# directly. A run from another rootdir or folder names its tests otherwise (../checks/..., an
# absolute path, a module outside the areas' folders, a vendor's folder nested in or around one).
_NODE_ID = re.compile(r"^[a-z][a-z0-9_]*/test_[A-Za-z0-9_]+\.py::([A-Z][A-Za-z0-9_]*::)?"
                      r"test_[A-Za-z0-9_]+(\[[^\n]*\])?$")


def node_id_problems(report: Untrusted) -> list[str]:
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

def parse_time(report: Untrusted, field: str) -> tuple[datetime | None, str | None]:
    value = _get(report, field)
    if not isinstance(value, str):
        return None, f"{field} is not a date-time string"
    try:
        return utc_datetime(value), None
    except ValueError as exc:
        return None, f"{field}: {terminal(str(exc), limit=160)}"


def time_problems(report: Untrusted, *, now: datetime, at: date | None = None,
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
    selection = _get(report, "selection")
    merged = isinstance(selection, dict) and "shards" in selection   # shards may run side by side: each
    if started and finished and started <= finished and not merged:  # shard's window is its own verify's
        problems += window_problems(report, (finished - started).total_seconds())
    return problems


# The recorded times have whole seconds (started_at, finished_at) and each check's duration is
# rounded to the millisecond: the window may look this much shorter than the time it held.
WINDOW_SLACK_S = 2.0


def window_problems(report: Untrusted, window_s: float) -> list[str]:
    """The run's window must hold what it says happened in it: checks run one after another (the
    suite refuses -n), so their recorded durations add up to at most started_at..finished_at, and
    duration_s (the run's own clock) is at most the window too. A negative duration is no duration."""
    checks = _get(report, "checks")
    durations = [c.get("duration_s") for c in checks if isinstance(c, dict)] if isinstance(checks, list) else []
    numbers = [d for d in durations if isinstance(d, (int, float)) and not isinstance(d, bool)]
    problems = []
    negative = [str(c.get("id")) for c in (checks if isinstance(checks, list) else []) if isinstance(c, dict)
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


def superseded_problem(version: Untrusted, started: datetime | None, listed: Mapping[str, Release]) -> str | None:
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
    """The verifier's clock ($CONFORMANCE_VERIFY_NOW pins it: signing/clock.py)."""
    from conformance.signing.clock import verifier_now

    return verifier_now()


# ---------------------------------------------------------------------------- Ray version

def ray_version_problem(value: Untrusted) -> str | None:
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
