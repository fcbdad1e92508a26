"""What a run selected, and whether it was partial (pure functions; the report and verify use them).

A certificate speaks for the whole checklist. A run that did not execute every check — pytest
`--collect-only`, a `-k`/`-m` selection, a path to one check module, `-x` stopping early, an
interrupted run — is recorded as `partial: true` with its selection (the pytest arguments, the
deselected tests, the checks no test ran for), and `verify` refuses it as "not a certification
run" whatever tier its outcomes give.
"""
from __future__ import annotations

import os
from typing import Any, Iterable, Mapping, Sequence


def not_run_checks(checks: Iterable[Mapping[str, Any]]) -> list[str]:
    """Ids of report entries that no test ran for (an empty `tests` list)."""
    return [str(c.get("id")) for c in checks if not c.get("tests")]


# the environment that changes what the checks measure (conformance.rdt.config's size knob),
# recorded beside the command line (selection.environment)
SIZE_KNOB = "RAY_CONFORMANCE_TRANSPORT_MAX_BYTES"
RECORDED_ENVIRONMENT = (SIZE_KNOB,)


def run_environment(environ: Mapping[str, str] | None = None) -> dict[str, str] | None:
    """This run's RECORDED_ENVIRONMENT variables that are set (None: none is)."""
    env = os.environ if environ is None else environ
    found = {k: env[k] for k in RECORDED_ENVIRONMENT if env.get(k)}
    return found or None


def selection_record(checks: Sequence[Mapping[str, Any]], *, args: Sequence[str] = (),
                     deselected: Iterable[str] = (), collect_only: bool = False,
                     whole_checklist_collected: bool = True, shard: Mapping[str, Any] | None = None,
                     environment: Mapping[str, str] | None = None,
                     nodes: Mapping[str, Any] | None = None) -> dict[str, Any]:
    """The report's `selection`: the pytest arguments, deselected tests and checks not run (and a
    shard's slice: conformance.catalog.shards), and the environment that changed what the checks
    measured (`environment`: run_environment, the size knob), beside the
    command line, so a capped run says so where its command line does; and which nodes the per-node
    checks covered (`nodes`: conformance.run.nodes, {"mode": "sample"|"all"}), beside the
    `--conformance-nodes=` that gave it."""
    record = {"args": [str(a) for a in args], "deselected": sorted(set(deselected)),
              "not_run": not_run_checks(checks), "collect_only": bool(collect_only),
              "whole_checklist_collected": bool(whole_checklist_collected)}
    if shard is not None:
        record["shard"] = dict(shard)
    if environment:
        record["environment"] = dict(environment)
    if nodes is not None:
        record["nodes"] = dict(nodes)
    return record


SIZED = "size_cap"   # the metric a check the size knob sized records (conformance.rdt.config.SIZE_CAP)


def environment_reasons(environment: object, checks: Sequence[Any]) -> list[str]:
    """Why a run whose record names the size knob (selection.environment) is not a certification
    run: the checks it sized (TR-004, TR-013, TR-019, PF-001..PF-004, WL-001/003/004: those that record it as
    metric size_cap) moved the knob's sizes, not the release's (256 MiB), and their judges hold
    them to the recorded knob; so their passes are evidence of the capped sizes only, and the run
    certifies nothing, the way a run of some checks does not. A run in which the knob sized no
    check (no transport declared) measured what the release asks."""
    if environment is None:
        return []
    if not isinstance(environment, Mapping):
        return ["selection.environment is not an object"]
    sized = [str(c.get("id")) for c in checks if isinstance(c, Mapping) and isinstance(c.get("metrics"), Mapping)
             and c["metrics"].get(SIZED) is not None]
    if not sized:
        return []
    return [f"run with {k}={str(v)[:40]}: {', '.join(sized[:8])} moved the knob's sizes, not the release's"
            for k, v in sorted(environment.items())]


# `run --nodes`: which nodes the per-node checks cover (conformance.run.nodes), default first
NODES_OPTION = "--conformance-nodes="
NODE_MODES = ("sample", "all")


def nodes_reasons(selection: Mapping[str, Any]) -> list[str]:
    """Why a run's node record (selection.nodes, conformance.run.nodes) contradicts itself or the
    command line it records ([] when it agrees, or a report of a release before the record): the
    mode is one of NODE_MODES and is the recorded `--conformance-nodes=` (the default, sample, when
    the command line names none), so an edited record is not a certification run."""
    if "nodes" not in selection:
        return []
    record = selection.get("nodes")
    mode = record.get("mode") if isinstance(record, Mapping) else None
    if mode not in NODE_MODES:
        return [f"selection.nodes.mode is {str(mode)[:40]!r}; expected one of {', '.join(NODE_MODES)}"]
    given = [a.partition("=")[2] for a in selection.get("args") or []
             if isinstance(a, str) and a.startswith(NODES_OPTION)]
    said = given[-1].strip().lower() if given else NODE_MODES[0]
    if said != mode:
        return [f"selection.nodes.mode is {mode!r} but the recorded command line says "
                f"{(NODES_OPTION + given[-1])[:60] if given else 'none (sample)'}"]
    return node_seed_reasons(selection, record if isinstance(record, Mapping) else {})


NODE_SEED_OPTION = "--conformance-node-seed="


def node_seed_reasons(selection: Mapping[str, Any], record: Mapping[str, Any]) -> list[str]:
    """The run's seed (selection.nodes.seed, conformance.catalog.node_sample: a sample's nodes, and
    under either mode the recovery scenarios' nodes per failure domain) is the recorded
    `--conformance-node-seed=` when the command line gives one."""
    seeds = [a.partition("=")[2].strip() for a in selection.get("args") or []
             if isinstance(a, str) and a.startswith(NODE_SEED_OPTION)]
    seed = record.get("seed")
    if seeds and str(seed) != seeds[-1]:
        return [f"selection.nodes.seed is {str(seed)[:40]!r} but the recorded command line says "
                f"{(NODE_SEED_OPTION + seeds[-1])[:60]}"]
    return []


def partial_reasons(report: Mapping[str, Any]) -> list[str]:
    """Why a report is not of a whole-checklist run ([] when it is); reads the claim and the
    per-check evidence, so a report that says `partial: false` beside checks nobody ran is caught."""
    reasons = []
    raw_selection = report.get("selection")
    sel: Mapping[str, Any] = raw_selection if isinstance(raw_selection, Mapping) else {}
    if "shard" in sel:    # a recognised kind of partial: verified only as part of its merge
        reasons.append(f"a shard ({_shard_name(sel['shard'])}) of a sharded run: verify the report "
                       "`ray-conformance merge` makes of all its shards")
    if report.get("partial") is not False:
        reasons.append(f"partial is {report.get('partial')!r}")
    if sel.get("collect_only"):
        reasons.append("collect-only run")
    if sel.get("whole_checklist_collected") is False:
        reasons.append("the checks folder was not collected whole")
    deselected = sel.get("deselected") or []
    if deselected:
        reasons.append(f"{len(deselected)} test(s) deselected")
    raw_checks = report.get("checks")
    checks: list[Any] = raw_checks if isinstance(raw_checks, list) else []
    reasons += environment_reasons(sel.get("environment"), checks)
    reasons += nodes_reasons(sel)
    not_run = sorted(set(map(str, sel.get("not_run") or [])) | set(not_run_checks(c for c in checks
                                                                                 if isinstance(c, Mapping))))
    if not_run:
        reasons.append(f"{len(not_run)} check(s) not run: {', '.join(not_run[:8])}{' …' if len(not_run) > 8 else ''}")
    args = [a for a in sel.get("args") or [] if isinstance(a, str)]
    if reasons and args:
        reasons.append(f"pytest args: {' '.join(args)[:200]}")
    return reasons


def _shard_name(record: object) -> str:
    from conformance.catalog.shards import shard_record

    shard = shard_record(record)
    return shard.label if shard else "malformed selection.shard"


def is_partial(selection: Mapping[str, Any]) -> bool:
    return bool(selection.get("not_run") or selection.get("deselected") or selection.get("collect_only")
                or "shard" in selection
                or selection.get("whole_checklist_collected") is False)


# ------------------------------------------------------------------ choosing checks to run
# The edit–run loop (`run --area/--check/--last-failed`): the CLI turns its options into a set of
# check ids, the pytest plugin deselects every other test (the checks folder is still collected
# whole, so the registry lint still holds), and the report is partial through its deselected
# tests, like any other selection.
RERUN_OUTCOMES = ("fail", "error")


def id_ranges(ids: Iterable[str]) -> str:
    """`DP-001..DP-020, TP-001..TP-004, TP-006`: ids compressed into runs, for one-line errors."""
    by_prefix: dict[str, list[int]] = {}
    for cid in sorted(set(ids)):
        prefix, _, number = cid.partition("-")
        by_prefix.setdefault(prefix, []).append(int(number))
    parts = []
    for prefix, numbers in by_prefix.items():
        runs: list[list[int]] = []
        for n in numbers:
            if runs and n == runs[-1][-1] + 1:
                runs[-1].append(n)
            else:
                runs.append([n])
        parts += [f"{prefix}-{r[0]:03d}" + (f"..{prefix}-{r[-1]:03d}" if len(r) > 1 else "") for r in runs]
    return ", ".join(parts)


def failed_checks(report: Mapping[str, Any]) -> list[str]:
    """Ids of a report's checks whose outcome is fail or error (what `--last-failed` re-runs)."""
    return [str(c["id"]) for c in report.get("checks") or [] if c.get("outcome") in RERUN_OUTCOMES]


def chosen_checks(active: Mapping[str, str], *, areas: Sequence[str] = (), checks: Sequence[str] = (),
                  last_failed: Sequence[str] = ()) -> list[str]:
    """The check ids a run is limited to: the union of the areas' checks, the named ids and the
    previous report's failures (`active`: id -> area of the checklist in force). Unknown areas
    and ids raise ValueError naming the valid choices; an empty result is the caller's to judge."""
    known_areas = sorted(set(active.values()))
    bad_areas = [a for a in areas if a not in known_areas]
    if bad_areas:
        raise ValueError(f"--area: unknown area {bad_areas[0]!r}; expected one of {', '.join(known_areas)}")
    wanted = [c.strip().upper() for c in checks]
    bad = [c for c in wanted if c not in active]
    if bad:
        raise ValueError(f"--check: unknown check id {bad[0]!r}; expected one of {id_ranges(active)}")
    chosen = {cid for cid, area in active.items() if area in areas} | set(wanted)
    chosen |= {cid for cid in last_failed if cid in active}   # a retired check is simply not re-run
    return sorted(chosen)
