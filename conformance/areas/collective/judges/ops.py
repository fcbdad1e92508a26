"""The op checks (CC-004..CC-007): each group's program regenerated and digested, orders, creation
paths, named groups.
"""
from __future__ import annotations

from typing import Any, Mapping

from conformance.areas.collective.judges.common import (
    JUDGES,
    _claimed,
)
from conformance.collective.config import ALL_OPS, DEFAULT_DTYPES, POOL_SIZE
from conformance.report.judges import FAIL, PASS, MissingEvidence, Verdict, number, param_value

# ---------------------------------------------------------------- the op checks (CC-003..CC-007)
# Each group a check ran records programs.group_evidence: its step count, one digest per rank of
# what the rank held after every step, and the live judging's problem count. The judge regenerates
# the program from the release's params and the manifest's collective block (dtypes, ops, device
# types) and digests what every rank MUST hold: a step count, a world size or a digest that is not
# the program's is a fail, so is any problem counted, so is a group not run.


def _group_wrong(what: str, ev: Any, steps: list[dict[str, Any]], ws: int) -> str | None:
    """Why one group's record is not `steps` run right at world size `ws` (None: it is)."""
    from conformance.collective import programs

    if not isinstance(ev, Mapping):
        raise MissingEvidence(f"{what}: no record of its program")
    if number(ev, "steps") != len(steps):
        return f"{what}: records {ev['steps']:g} step(s), the release's program has {len(steps)}"
    if number(ev, "world_size") != ws:
        return f"{what}: records world size {ev['world_size']:g}, the program's is {ws}"
    found = number(ev, "problems")
    digests = ev.get("digests")
    if digests is None:
        return f"{what}: no results came back (the program raised or hung; {found:g} problem(s))"
    if found:
        return f"{what}: {found:g} problem(s) in what the ranks held"
    if not isinstance(digests, list) or len(digests) != ws:
        return f"{what}: records {digests!r} as its ranks' digests, not one per rank of {ws}"
    wrong = [r for r, (got, want) in enumerate(zip(digests, programs.wanted_digests(steps, ws))) if got != want]
    if wrong:
        return f"{what}: rank(s) {wrong} did not hold what the program's steps give (their digests differ)"
    return None


def _expected_nodes(ws: int, manifest: Mapping[str, Any]) -> int:
    nodes = (manifest.get("cluster") or {}).get("nodes") if isinstance(manifest, Mapping) else None
    return min(ws, int(nodes)) if isinstance(nodes, int) and not isinstance(nodes, bool) and nodes > 0 else 1


def _units_given(infos: Any, manifest: Mapping[str, Any]) -> str | None:
    """Where the block declares a device type, every member was given a unit of the resource."""
    from conformance.rdt.device import is_host

    if all(is_host(d) for d in _claimed(manifest, "devices", ("cpu",))):
        return None
    resource = str(((manifest.get("accelerator") or {}).get("resource_name")) or "")
    if not isinstance(infos, list) or not all(isinstance(i, Mapping) and i.get(resource) for i in infos):
        return f"members were not each given a unit of {resource} (accelerator_ids {infos!r})"
    return None


@JUDGES.rule(needs=("world_sizes",), params=("world_sizes", "libraries", "elements", "barriers"), decides_all=True)
def every_op_exact_at_each_world_size(m: Mapping[str, Any], p: Mapping[str, Any], manifest: Mapping[str, Any]) -> Verdict:
    """Every world size of the release ran the whole op matrix (every claimed op x dtype x
    library x device type, and the barriers) regenerated here from the params and the manifest,
    every rank's digest is the right one, on members spread over the nodes the cluster has (and
    holding a unit of the resource each where the block declares a device type)."""
    from conformance.collective import programs

    sizes, ran = p.get("world_sizes"), m["world_sizes"]
    if not isinstance(sizes, list) or not sizes:
        raise MissingEvidence("param world_sizes is missing")
    if not isinstance(ran, list) or [number({"v": v}, "v") for v in ran] != [float(v) for v in sizes]:
        return Verdict(FAIL, f"ran world sizes {ran!r}, the release's params say {sizes}")
    dtypes, ops = _claimed(manifest, "dtypes", DEFAULT_DTYPES), _claimed(manifest, "ops", ALL_OPS)
    devices = _claimed(manifest, "devices", ("cpu",))
    total = 0
    for ws in (int(v) for v in sizes):
        ev = m.get(f"world_size_{ws}")
        if not isinstance(ev, Mapping):
            raise MissingEvidence(f"metric world_size_{ws} is missing (the release's world sizes are {sizes})")
        steps = programs.op_matrix(ws, dtypes, p["libraries"], ops, int(param_value(p, "elements")), seed0=100 * ws,
                                   devices=devices, barriers=int(param_value(p, "barriers")))
        wrong = _group_wrong(f"world size {ws}", ev, steps, ws)
        if wrong:
            return Verdict(FAIL, wrong)
        need = _expected_nodes(ws, manifest)
        if number(ev, "nodes") < need:
            return Verdict(FAIL, f"world size {ws}: its members ran on {ev['nodes']:g} node(s), the cluster's "
                                 f"{need} were to hold them (round-robin over the nodes)")
        units = _units_given(ev.get("accelerator_ids"), manifest)
        if units:
            return Verdict(FAIL, f"world size {ws}: {units}")
        total += len(steps)
    return Verdict(PASS, f"{total} op steps exact on every rank at world sizes {sizes}")


@JUDGES.rule(needs=("order",), params=("rounds",), decides_all=True)
def interleaved_messages_in_order(m: Mapping[str, Any], p: Mapping[str, Any], manifest: Mapping[str, Any]) -> Verdict:
    """The release's rounds of messages interleaved with collectives, on every device type the
    block declares, in a group of the pool's size: every rank's digest is the program's."""
    from conformance.collective import programs

    ops = _claimed(manifest, "ops", ALL_OPS)
    if not all(op in ops for op in ("sendrecv", "allreduce", "broadcast")):
        return Verdict(FAIL, "the manifest's collective block does not claim send/recv, allreduce and broadcast: "
                             "the check has nothing to pass")
    steps = [s for device in _claimed(manifest, "devices", ("cpu",))
             for s in programs.interleaved(POOL_SIZE, int(param_value(p, "rounds")), device=device)]
    wrong = _group_wrong("the interleaved program", m["order"], steps, POOL_SIZE)
    if wrong:
        return Verdict(FAIL, wrong)
    return Verdict(PASS, f"{len(steps)} interleaved steps right on every rank")


CREATION_PATHS = ("init", "declarative", "experimental")


@JUDGES.rule(needs=("paths",), decides_all=True)
def creation_paths_give_the_ranks_asked_for(m: Mapping[str, Any], p: Mapping[str, Any],
                                            manifest: Mapping[str, Any]) -> Verdict:
    """Each of Ray's three creation paths, with member i given rank i+1 (not the identity): every
    view a member gave (is_group_initialized, get_rank, get_collective_group_size) is the one it was
    given, and every rank's digest of the short program is right."""
    from conformance.collective import programs

    paths = m["paths"]
    if not isinstance(paths, Mapping):
        raise MissingEvidence("metric paths is not a mapping")
    ws = POOL_SIZE
    ranks = [(i + 1) % ws for i in range(ws)]
    for k, path in enumerate(CREATION_PATHS):
        ev = paths.get(path)
        if not isinstance(ev, Mapping):
            return Verdict(FAIL, f"{path}: no record (the path was not tried or did not finish)")
        if ev.get("ranks") != ranks:
            return Verdict(FAIL, f"{path}: records ranks {ev.get('ranks')!r}, the check gives {ranks}")
        views = ev.get("views")
        if not isinstance(views, list):
            return Verdict(FAIL, f"{path}: no reading of the members' views recorded")
        for read in views:   # what the members said before anything else went wrong
            if not isinstance(read, list) or len(read) != ws:
                return Verdict(FAIL, f"{path}: a reading of the views has {read!r}, not one per member")
            for i, view in enumerate(read):
                if view != [True, ranks[i], ws]:
                    return Verdict(FAIL, f"{path}: member given rank {ranks[i]} of {ws} reports " + (
                        f"initialized={view[0]}, rank {view[1]}, size {view[2]}" if isinstance(view, list)
                        and len(view) == 3 else f"{view!r}"))
        if ev.get("error"):
            return Verdict(FAIL, f"{path}: {ev['error']}")
        readings = 1 if path == "declarative" else 2   # the declarative path builds its group at the first op
        if len(views) != readings:
            return Verdict(FAIL, f"{path}: {len(views)} reading(s) of the members' views recorded, the check reads "
                                 f"{readings}")
        wrong = _group_wrong(path, ev, programs.small_program(ws, 300 + 10 * k), ws)
        if wrong:
            return Verdict(FAIL, wrong)
    return Verdict(PASS, f"{len(CREATION_PATHS)} creation paths: every member's rank as given and the program right")


@JUDGES.rule(needs=("layouts",), params=("groups", "rounds"), decides_all=True)
def named_groups_isolated(m: Mapping[str, Any], p: Mapping[str, Any], manifest: Mapping[str, Any]) -> Verdict:
    """The release's groups (sizes and rank orders over the pool's members, regenerated here),
    each with one record per round: every rank's digest of that group's round is right."""
    from conformance.collective import programs

    layouts, rounds = m["layouts"], int(param_value(p, "rounds"))
    want = programs.isolation_layouts(int(param_value(p, "groups")), POOL_SIZE)
    if not isinstance(layouts, list) or len(layouts) != len(want):
        return Verdict(FAIL, f"records {len(layouts) if isinstance(layouts, list) else layouts!r} group(s), the "
                             f"release's params give {len(want)}")
    for g, (ev, (members, ranks)) in enumerate(zip(layouts, want)):
        if not isinstance(ev, Mapping) or ev.get("members") != members or ev.get("ranks") != ranks:
            return Verdict(FAIL, f"group {g}: records {ev!r}, the check builds members {members} with ranks {ranks}")
        done = ev.get("rounds")
        if not isinstance(done, list) or len(done) != rounds:
            return Verdict(FAIL, f"group {g}: {len(done) if isinstance(done, list) else 0} round(s) recorded of {rounds}")
        for rnd, got in enumerate(done):
            wrong = _group_wrong(f"group {g}, round {rnd}", got, programs.small_program(len(ranks), 1000 * rnd + 10 * g),
                                 len(ranks))
            if wrong:
                return Verdict(FAIL, wrong)
    return Verdict(PASS, f"{len(want)} groups x {rounds} rounds each right from their own members")
