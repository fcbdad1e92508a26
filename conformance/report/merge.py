"""One report from the shards of a run (`ray-conformance merge`; verify re-runs the same rules).

Pure: shard reports in, problems or the merged report out. The rules are Khronos VK-GL-CTS
verify's for shard logs, on this suite's reports:
  - every shard is one of the same N (N at most the policy's), each i-of-N once: no hole, no
    duplicate; its recorded command line carries `--conformance-shard=I/N` equal to its record
  - the same run: release, suite data digests, manifest, plugin, Ray version, the recorded
    environment (selection.environment: the size knob, which sizes the transport checks), the
    command line (out folder and shard aside) and the plan are every shard's
  - the same machine: the mandatory core's outcomes, the preflight's facts and the hardware's
    shape and environment agree across shards
  - every check of the plan exactly once ("Multiple results for X", "Missing result for X"),
    none run outside its shard's slice
  - the first shard's start and the last shard's end within the policy's window
  - the plan's structure (plan_problems): the release's core, a partition of the release's checks
    that keeps the checks of one measurement (catalog.shards.SAME_SHARD) in one shard (held-out
    round 34, S1: PF-002 and PF-003 cut from PF-001's sweep into a shard of their own); it is not
    recomputed from the run's durations, which no release binds (catalog.shards says why)
The policy (max count, window, core) is the claimed release's (tiers/tiers.yaml `shards`,
Ladder.knobs.shards), which the caller passes.
The merged report's tier, tiers, capabilities, summary and selection are recomputed over the
union (conformance.report.build.build_report), never taken from a shard.
"""
from __future__ import annotations

import copy
import datetime as dt
import xml.etree.ElementTree as ET
from dataclasses import dataclass
from typing import AbstractSet, Any, Mapping, Sequence

from conformance.catalog import shards as sh
from conformance.catalog.data import SuiteData
from conformance.catalog.selection import selection_record

# Fields every shard states alike: (where, why it must agree).
SAME_RUN = (("suite.version", "a shard from another release"),
            ("suite.checklist_sha256", "a shard from another release"),
            ("suite.tiers_sha256", "a shard from another release"),
            ("suite.report_schema_sha256", "a shard from another release"),
            ("suite.waivers_sha256", "a shard from another release"),
            ("manifest_sha256", "a shard of another manifest"),
            ("manifest.plugin", "a shard of another plugin"),
            ("plugin_artifact", "a shard of another plugin"),
            ("environment.ray", "a shard on another Ray version"),
            ("selection.environment", "a shard run with another size knob: its checks moved other sizes"))
SAME_MACHINE = (("environment.python", "shards of two machines"), ("environment.torch", "shards of two machines"),
                ("environment.os", "shards of two machines"), ("environment.cpu", "shards of two machines"),
                ("environment.cpu_count", "shards of two machines"), ("environment.machine", "shards of two machines"),
                ("shape", "shards of two machines"), ("cluster.nodes", "shards of two machines"),
                ("preflight.ok", "shards of two machines"), ("preflight.nodes", "shards of two machines"))
# The reason of a check no shard ran (the shards' --area/--check narrowed the run: it is partial).
NOT_IN_ANY_SHARD = "not selected: no shard of this run ran it (the run was limited to other checks: partial)"
# The facts only a shard that started a cluster states.
_CLUSTER_FACTS = ("shape", "cluster.", "preflight.")
# The recorded command line's options that differ between shards by design.
_OWN_OPTIONS = (sh.SHARD_OPTION + "=", "--conformance-out=")


@dataclass(frozen=True)
class Problem:
    """Why a set of shards is not one run: the field that says so, and what it says."""

    field: str
    message: str

    def line(self) -> str:
        return f"{self.field}: {self.message}"


@dataclass(frozen=True)
class ShardReport:
    """One shard as the merge reads it: where it came from (its folder's name, for messages), its
    report.json and its junit.xml's bytes."""

    name: str
    report: Mapping[str, Any]
    junit: bytes = b""


def _get(doc: object, path: str) -> Any:  # the JSON value at `path` (None: absent), for the caller to narrow
    for part in path.split("."):
        doc = doc.get(part) if isinstance(doc, Mapping) else None
    return doc


def _shown(value: object) -> str:
    text = repr(value)
    return text if len(text) <= 80 else text[:77] + "..."


def _time(report: Mapping[str, Any], field: str) -> dt.datetime | None:
    value = report.get(field)
    try:
        parsed = dt.datetime.fromisoformat(str(value))
    except ValueError:
        return None
    return parsed if parsed.tzinfo else parsed.replace(tzinfo=dt.timezone.utc)


def _ran(check: Mapping[str, Any]) -> bool:
    return bool(check.get("tests"))


def _checks(report: Mapping[str, Any]) -> dict[str, Mapping[str, Any]]:
    return {str(c.get("id")): c for c in report.get("checks") or [] if isinstance(c, Mapping)}


def _command(report: Mapping[str, Any]) -> list[Any]:
    return [a for a in _get(report, "selection.args") or [] if not (isinstance(a, str) and a.startswith(_OWN_OPTIONS))]


def _observed(value: object) -> bool:
    """Whether a shard observed a hardware fact: a shard that started no cluster states none
    (nodes 0, a shape of None): its core and environment still say which machine it ran on."""
    if isinstance(value, Mapping):
        return any(_observed(v) for v in value.values())
    return value not in (None, 0, False, "")


def observed_cluster(report: Mapping[str, Any]) -> bool:
    """Whether this shard started (or reached) a cluster and so states the hardware's facts."""
    return bool(_get(report, "cluster.nodes"))


def observer(shards: Mapping[int, ShardReport]) -> ShardReport:
    """The shard whose cluster the merged report describes: the one with the most nodes, the
    first on a tie (a shard without a cluster observed none)."""
    return max(shards.values(), key=lambda s: (int(_get(s.report, "cluster.nodes") or 0),
                                               -list(shards.values()).index(s)))


def identify(shards: Sequence[ShardReport], policy: sh.ShardPolicy) -> tuple[dict[int, ShardReport], list[Problem]]:
    """Each shard's index, with the problems of the set: a report that is no shard, a command line
    that does not match its record, mixed counts, a duplicate, a hole."""
    problems: list[Problem] = []
    found: dict[int, ShardReport] = {}
    counts: set[int] = set()
    for s in shards:
        record = _get(s.report, "selection.shard")
        shard = sh.shard_record(record)
        if shard is None:
            problems.append(Problem("selection.shard", f"{s.name} is not a shard (a whole or --area/--check run: "
                                                       "`ray-conformance run --shard I/N` makes one)"))
            continue
        specs = sh.recorded_specs(_get(s.report, "selection.args") or [])
        if specs != [shard.spec]:
            problems.append(Problem("selection.args", f"shard {shard.label} ({s.name}): its recorded command line "
                                                      f"says {', '.join(sh.SHARD_OPTION + '=' + x for x in specs) or 'no ' + sh.SHARD_OPTION}"
                                                      f", not {sh.SHARD_OPTION}={shard.spec}"))
        label = sh.parse_label(s.name)
        if label is not None and label != shard:
            problems.append(Problem("selection.shard", f"folder {s.name} holds shard {shard.label}"))
        if shard.count > policy.max_count:
            problems.append(Problem("selection.shard", f"shard {shard.label}: at most {policy.max_count} shards"))
        counts.add(shard.count)
        if shard.index in found:
            problems.append(Problem("selection.shard", f"shard {shard.label} given twice ({found[shard.index].name}, "
                                                       f"{s.name}): a duplicate"))
        else:
            found[shard.index] = s
    if len(counts) > 1:
        problems.append(Problem("selection.shard", f"shards of different runs: counts {', '.join(map(str, sorted(counts)))}"))
    elif counts:
        count = counts.pop()
        missing = [f"{i}-of-{count}" for i in range(1, count + 1) if i not in found]
        if missing:
            problems.append(Problem("selection.shard", f"shard {', '.join(missing)} missing: a hole in the run"))
    return dict(sorted(found.items())), problems


def agreement_problems(shards: Mapping[int, ShardReport]) -> list[Problem]:
    """The same run on the same machine: every SAME_RUN and SAME_MACHINE field, the command line,
    the plan and the core's outcomes equal the first shard's."""
    problems: list[Problem] = []
    if not shards:
        return problems
    first_i, first = next(iter(shards.items()))
    name = f"{first_i}-of-{len(shards)}"
    seen = observer(shards)
    seen_name = f"{next(i for i, s in shards.items() if s is seen)}-of-{len(shards)}"
    for i, s in shards.items():   # the hardware: each shard against the one that saw the cluster
        for field, why in SAME_MACHINE:
            a, b = _get(seen.report, field), _get(s.report, field)
            if s is not seen and a != b and (_observed(b) or not field.startswith(_CLUSTER_FACTS)):
                problems.append(Problem(field, f"shard {i}-of-{len(shards)} says {_shown(b)}, shard {seen_name} "
                                               f"{_shown(a)} ({why})"))
    for i, s in list(shards.items())[1:]:
        other = f"{i}-of-{len(shards)}"
        for field, why in SAME_RUN:
            a, b = _get(first.report, field), _get(s.report, field)
            if a != b:
                problems.append(Problem(field, f"shard {other} says {_shown(b)}, shard {name} {_shown(a)} ({why})"))
        if _command(first.report) != _command(s.report):
            problems.append(Problem("selection.args", f"shard {other} ran another command line than shard {name} "
                                                      "(out folder and shard aside): a shard of another run"))
        for key, why in (("plan", "a shard of another run"), ("core", "a shard of another run")):
            if _get(first.report, f"selection.shard.{key}") != _get(s.report, f"selection.shard.{key}"):
                problems.append(Problem(f"selection.shard.{key}", f"shard {other} planned another split than shard "
                                                                  f"{name} ({why})"))
        ours, theirs = _checks(first.report), _checks(s.report)
        for cid in sh.ids(_get(first.report, "selection.shard.core")):
            a, b = _get(ours.get(cid), "outcome"), _get(theirs.get(cid), "outcome")
            if a != b:
                problems.append(Problem(f"checks[{cid}].outcome", f"the mandatory core disagrees: {_shown(b)} in shard "
                                                                  f"{other}, {_shown(a)} in shard {name} (shards of two machines)"))
    return problems


def node_selection_problems(shards: Mapping[int, ShardReport]) -> list[Problem]:
    """Every shard ran the same node mode, seed and size (selection.nodes): the merged report's
    per-node checks were run on one choice of nodes, which verify recomputes from the one seed
    (conformance.catalog.node_sample). A sample's seed is drawn per run unless `--node-seed` gives
    it, so shards of one run name the same seed. Shards do not split nodes: a per-node check runs
    in one shard, on every node its mode gives (splitting it would give one check several results)."""
    records = {i: _get(s.report, "selection.nodes") for i, s in shards.items()}
    first_i, first = next(iter(records.items()), (0, None))
    for i, record in records.items():
        if record != first:
            return [Problem("selection.nodes", f"shard {i}-of-{len(shards)} ran with nodes {_shown(record)}, shard "
                                               f"{first_i}-of-{len(shards)} with {_shown(first)}: every shard needs "
                                               "the same --nodes and --node-seed")]
    return []


def coverage_problems(shards: Mapping[int, ShardReport]) -> list[Problem]:
    """Every check of the plan exactly once; the core in every shard; nothing outside a slice."""
    problems: list[Problem] = []
    ran_in: dict[str, list[str]] = {}
    planned: dict[str, str] = {}
    core: set[str] = set()
    for i, s in shards.items():
        label = f"{i}-of-{len(shards)}"
        record = _get(s.report, "selection.shard")
        core = set(sh.ids(_get(record, "core")))
        own = sh.shard_checks(record) - core
        for cid in own:
            planned.setdefault(cid, label)
        for cid, check in _checks(s.report).items():
            if not _ran(check):
                if cid in core:
                    problems.append(Problem(f"checks[{cid}].tests", f"Missing result for {cid} of the mandatory core "
                                                                    f"in shard {label}"))
                continue
            if cid not in core:
                ran_in.setdefault(cid, []).append(label)
                if cid not in own:
                    problems.append(Problem(f"checks[{cid}].tests", f"{cid} ran in shard {label}, outside its slice"))
    for cid, labels in sorted(ran_in.items()):
        if len(labels) > 1:
            problems.append(Problem(f"checks[{cid}].tests", f"Multiple results for {cid} (shards {', '.join(labels)})"))
    for cid, label in sorted(planned.items()):
        if cid not in ran_in:
            problems.append(Problem(f"checks[{cid}].tests", f"Missing result for {cid} (shard {label}'s slice)"))
    return problems


def _few(ids: Sequence[str], most: int = 8) -> str:
    return ", ".join(str(i)[:20] for i in ids[:most]) + (f" and {len(ids) - most} more" if len(ids) > most else "")


def _slices_problems(plan: Sequence[Sequence[str]], checks: AbstractSet[str], core: Sequence[str]) -> list[str]:
    """Why a recorded plan is no partition of release checks outside the core that keeps each
    SAME_SHARD group in one slice ([] when it is one)."""
    flat = [c for part in plan for c in part]
    said = []
    unknown = sorted({c for c in flat if c not in checks})
    in_core = sorted({c for c in flat if c in core})
    twice = sorted({c for c in flat if flat.count(c) > 1})
    said += [f"names {_few(unknown)}, no check of the release"] if unknown else []
    said += [f"puts {_few(in_core)} of the core in a slice (the core runs in every shard)"] if in_core else []
    said += [f"names {_few(twice)} more than once (every check of the plan runs in one shard)"] if twice else []
    for group in sh.SAME_SHARD:
        where = sorted({i + 1 for i, part in enumerate(plan) for c in part if c in group})
        if len(where) > 1:
            said.append(f"splits {', '.join(group)} over shards {', '.join(map(str, where))} (they record one "
                        "measurement of the run: catalog.shards.SAME_SHARD keeps them in one shard)")
    return said


def plan_problems(shards: Mapping[int, ShardReport], checks: AbstractSet[str], core: Sequence[str]) -> list[Problem]:
    """The recorded plan's structure against the release (`checks`: its checklist's ids; `core`:
    its tiers.yaml shards.core): every shard records the same core and plan, the core is the
    release's, the plan has a slice per shard and is a partition of release checks outside the
    core that keeps each SAME_SHARD group in one slice. That each shard ran exactly its slice and
    the core is coverage_problems'. Which checks the plan splits is the selection's to judge (a
    check left out of it ran in no shard: the merged report is partial); why the plan is not
    recomputed from durations: catalog.shards' docstring."""
    if not shards:
        return []
    first_i, first = next(iter(shards.items()))
    record = _get(first.report, "selection.shard")
    label = f"{first_i}-of-{len(shards)}"
    for i, s in shards.items():
        if _get(s.report, "selection.shard.plan") != _get(record, "plan") or \
                _get(s.report, "selection.shard.core") != _get(record, "core"):
            return [Problem("selection.shard.plan", f"shard {i}-of-{len(shards)} planned another split than shard {label}")]
    recorded_core = sh.ids(_get(record, "core"))
    if sorted(recorded_core) != sorted(core):
        return [Problem("selection.shard.core", f"shard {label} records the core {_shown(sorted(recorded_core))}; "
                                                f"the release's is {_shown(sorted(core))} (tiers/tiers.yaml shards.core)")]
    raw = _get(record, "plan")
    plan = [sh.ids(x) for x in raw] if isinstance(raw, list) else []
    if len(plan) != len(shards):
        return [Problem("selection.shard.plan", f"shard {label} records a plan of {len(plan)} slice(s) for "
                                                f"{len(shards)} shards")]
    said = _slices_problems(plan, checks, core)
    return [Problem("selection.shard.plan", f"the shards' plan {'; '.join(said)}")] if said else []


def window_problems(shards: Mapping[int, ShardReport], policy: sh.ShardPolicy) -> list[Problem]:
    """The first shard's start and the last one's end within the policy's window; each readable."""
    starts = [_time(s.report, "started_at") for s in shards.values()]
    ends = [_time(s.report, "finished_at") for s in shards.values()]
    if None in starts or None in ends:
        return [Problem("started_at", "a shard's started_at or finished_at is not a date-time")]
    span_h = (max(e for e in ends if e) - min(s for s in starts if s)).total_seconds() / 3600
    if span_h > policy.window_h:
        return [Problem("finished_at", f"the shards span {span_h:.1f} h, more than the window of {policy.window_h:g} h "
                                       "(the release's tiers/tiers.yaml shards.window_h)")]
    return []


def shard_set_problems(shards: Sequence[ShardReport], policy: sh.ShardPolicy) -> tuple[dict[int, ShardReport], list[Problem]]:
    """Every rule above but the plan's, in order (the first is what `merge` refuses with);
    plan_problems needs the release's checklist (conformance.signing.shards calls it next)."""
    found, problems = identify(shards, policy)
    if problems:
        return found, problems
    problems += node_selection_problems(found)
    problems += agreement_problems(found)
    problems += coverage_problems(found)
    problems += window_problems(found, policy)
    for i, s in found.items():
        if s.report.get("interrupted") is not False:
            problems.append(Problem("interrupted", f"shard {i}-of-{len(found)} was interrupted"))
        if _get(s.report, "selection.collect_only"):
            problems.append(Problem("selection.collect_only", f"shard {i}-of-{len(found)} collected only"))
    return found, problems


def merged_checks(shards: Mapping[int, ShardReport]) -> list[dict[str, Any]]:
    """The union: each check from the shard that ran it (the core from the first shard), in the
    first shard's order."""
    first = next(iter(shards.values())).report
    core = set(sh.ids(_get(first, "selection.shard.core")))
    by_shard = [_checks(s.report) for s in shards.values()]
    out = []
    for check in first.get("checks") or []:
        cid = str(check.get("id"))
        source = check if cid in core else next((c[cid] for c in by_shard if cid in c and _ran(c[cid])), None)
        if source is None:   # outside every shard's slice: the run's --area/--check left it out
            out.append({**copy.deepcopy(dict(check)), "reason": NOT_IN_ANY_SHARD})
        else:
            out.append(copy.deepcopy(dict(source)))
    return out


def merged_selection(shards: Mapping[int, ShardReport], checks: Sequence[Mapping[str, Any]],
                     digests: Mapping[int, str]) -> dict[str, Any]:
    """The merged run's selection: the command line without the shard, what every shard left out,
    the checks no shard ran, and the shards it was made of (their report.json digests)."""
    reports = [s.report for s in shards.values()]
    first = reports[0]
    deselected = set.intersection(*(set(_get(r, "selection.deselected") or []) for r in reports))
    ran_tests = {t for c in checks for t in c.get("tests") or [] if isinstance(t, str)}
    record = selection_record(checks, args=sh.without_shard(_get(first, "selection.args") or []),
                              deselected=deselected - ran_tests,
                              collect_only=any(_get(r, "selection.collect_only") for r in reports),
                              whole_checklist_collected=all(_get(r, "selection.whole_checklist_collected") is True
                                                            for r in reports),
                              environment=_get(first, "selection.environment"),   # every shard's (SAME_RUN)
                              nodes=_get(first, "selection.nodes"))   # every shard's (node_selection_problems)
    record["shards"] = [{"shard": f"{i}-of-{len(shards)}", "report_sha256": digests[i],
                         "started_at": s.report.get("started_at"), "finished_at": s.report.get("finished_at")}
                        for i, s in shards.items()]
    return record


def first_last(shards: Mapping[int, ShardReport]) -> tuple[str, str, float]:
    """The earliest started_at and the latest finished_at as the shards wrote them, and the span
    (of a shard set `window_problems` passed: every time readable)."""
    def when(report: Mapping[str, Any], field: str) -> tuple[dt.datetime, str]:
        parsed = _time(report, field)
        if parsed is None:
            raise ValueError(f"{field} {report.get(field)!r} is not a date-time (window_problems refuses it first)")
        return parsed, str(report[field])

    starts = sorted(when(s.report, "started_at") for s in shards.values())
    ends = sorted(when(s.report, "finished_at") for s in shards.values())
    return starts[0][1], ends[-1][1], (ends[-1][0] - starts[0][0]).total_seconds()


def merge_reports(shards: Mapping[int, ShardReport], digests: Mapping[int, str], data: SuiteData,
                  area_docs: Mapping[str, str] | None = None) -> dict[str, Any]:
    """The merged report of shards that passed shard_set_problems: recomputed over the union with
    `data` (the suite data of the shards' release); `area_docs` (each area's doc link): the
    vendor's next steps, recomputed too (left out without it)."""
    from conformance.report.build import build_report
    from conformance.report.next_steps import next_steps

    first = observer(shards).report   # the manifest, environment, cluster and shape its cluster showed
    checks = merged_checks(shards)
    started_at, finished_at, span_s = first_last(shards)
    cluster = copy.deepcopy(dict(first["cluster"]))
    cluster["notes"] = list(dict.fromkeys(n for s in shards.values() for n in _get(s.report, "cluster.notes") or []))
    sections: dict[str, Any] = {}
    for s in shards.values():   # an area's view from the first shard that published it
        for key, value in (s.report.get("sections") or {}).items():
            sections.setdefault(key, copy.deepcopy(value))
    report = build_report(
        data=data, manifest=copy.deepcopy(dict(first["manifest"])), manifest_sha256=first["manifest_sha256"],
        manifest_path=first.get("manifest_path", ""), environment=copy.deepcopy(dict(first["environment"])),
        cluster=cluster, started_at=started_at, finished_at=finished_at, duration_s=span_s, checks=checks,
        interrupted=False, sections=sections, plugin_artifact=first.get("plugin_artifact"),
        selection=merged_selection(shards, checks, digests), shape=copy.deepcopy(first.get("shape")))
    report["suite"] = copy.deepcopy(dict(first["suite"]))   # the release the shards ran (merge held them alike)
    for key in ("preflight", "host"):
        if key in first:
            report[key] = copy.deepcopy(first[key])
    if area_docs is not None:
        report["next_steps"] = next_steps(report, data.checklist, data.ladder, area_docs)
    return report


def merged_junit(report: Mapping[str, Any], shards: Mapping[int, ShardReport]) -> bytes:
    """junit.xml of the merged report: each check's test cases from the shard its entry came from
    (as conformance.report.build.write_junit wrote them there), the counts and times recomputed;
    a check no shard ran gets write_junit's one skipped case."""
    import io

    first = next(iter(shards.values()))
    core = set(sh.ids(_get(first.report, "selection.shard.core")))
    cases: dict[str, list[ET.Element]] = {}
    for s in shards.values():
        ran = {cid for cid, c in _checks(s.report).items() if _ran(c)}
        taken = {cid for cid in ran if cid not in cases and (cid not in core or s is first)}
        for case in ET.fromstring(s.junit).iter("testcase"):
            cid = case.get("classname") or ""
            if cid in taken:
                cases.setdefault(cid, []).append(case)
    suite = ET.Element("testsuite", name=str(_get(first.report, "suite.name") or ""), timestamp=str(report["started_at"]))
    counts = {"tests": 0, "failures": 0, "errors": 0, "skipped": 0}
    for check in report["checks"]:
        own = cases.get(check["id"])
        if not own:
            case = ET.Element("testcase", classname=check["id"], name="not_run", time="0.000")
            ET.SubElement(case, "skipped", message=f"skip: {check.get('reason') or ''}"[:1000])
            own = [case]
        for case in own:
            counts["tests"] += 1
            counts["failures"] += case.find("failure") is not None
            counts["errors"] += case.find("error") is not None
            counts["skipped"] += case.find("skipped") is not None
            suite.append(copy.deepcopy(case))
    for k, v in counts.items():
        suite.set(k, str(v))
    suite.set("time", f"{report['duration_s']:.3f}")
    root = ET.Element("testsuites")
    root.append(suite)
    tree = ET.ElementTree(root)
    ET.indent(tree)
    out = io.BytesIO()
    tree.write(out, encoding="utf-8", xml_declaration=True)
    return out.getvalue()
