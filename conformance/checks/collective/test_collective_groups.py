"""Collective area, groups: Ray's three creation paths with the ranks they were given (CC-006),
several named groups in the same actors kept apart (CC-007), destroy and re-create under the same
name with nothing left behind: no state, no detached actor (Ray's or the backend's own), no
process or /dev/shm file the backend started or kept, no memory (CC-008).

They mirror Ray's test_basic_apis.py (test_get_rank, test_destroy_group, ten groups per actor)
and test_gloo_group_isolation.py, for the manifest's backend.
"""
from __future__ import annotations

from typing import Any

import pytest

from conformance import leftovers
from conformance.areas.collective.judges import LEAK_MEMBERS
from conformance.collective import programs
from conformance.collective.context import CollectiveCtx, CollectiveError, Hang, wait_until

PATHS = ("init", "declarative", "experimental")
PATH_WAITS = 2          # knob: bounded waits of one path that can each run out (views, program)
PATH_MARGIN_S = 10.0    # knob: discarding hung members and starting new ones


@pytest.mark.check("CC-006")
def test_three_creation_paths_give_the_ranks_asked_for(collective_ctx: CollectiveCtx) -> None:
    cc = collective_ctx.backend
    bound = float(collective_ctx.param("op_bound_s"))
    problems: list[str] = []
    hung = False

    paths: dict[str, Any] = {}

    def read_views(path: str, members: list[Any], group: str, record: dict[str, Any]) -> None:
        views = cc.ask(members, "group_view", group, timeout_s=bound, param="op_bound_s", what="get_rank/get_collective_group_size")
        record["views"].append([[bool(inited), rank, size] for inited, rank, size in views])
        for i, (inited, rank, size) in enumerate(views):
            found = (f"{path}: member given rank {record['ranks'][i]} of {len(members)} reports initialized={inited}, "
                     f"rank {rank}, size {size}")
            if (inited, rank, size) != (True, record["ranks"][i], len(members)) and found not in problems:
                problems.append(found)

    for k, path in enumerate(PATHS):
        left = collective_ctx.budget.time_left()
        if hung and left is not None and left < PATH_WAITS * bound + PATH_MARGIN_S:
            # after a hang a path may use its whole bound twice: what was found is kept, not
            # lost to the check's hard timeout
            problems.append(f"{', '.join(PATHS[k:])}: not tried (the check's hard timeout leaves {left:.0f}s "
                            f"after a hang; a path may take {PATH_WAITS} x {bound:g}s)")
            break
        members = cc.pool()   # fresh members when a hang in the previous path discarded them
        ws = len(members)
        ranks = [(i + 1) % ws for i in range(ws)]     # member i gets rank i+1: not the identity
        group = cc.group_name(path)
        steps = programs.small_program(ws, 300 + 10 * k)
        record: dict[str, Any] = {"ranks": ranks, "views": []}
        try:
            handle = cc.create(members, group, path, ranks)
            if path != "declarative":   # the declarative path builds its group at the first op
                read_views(path, members, group, record)
            outputs = cc.execute(members, steps, group, bound, ranks, param="op_bound_s")
            read_views(path, members, group, record)
            found = programs.judge(steps, outputs, ws)
            problems += [f"{path}: {p}" for p in found]
            record.update(programs.group_evidence(steps, outputs, ws, len(found)))
            if path == "experimental":
                cc.destroy_handle(handle)
            else:
                cc.destroy(members, group)
        except Hang as exc:
            hung = True
            problems.append(f"{path}: {exc}")
            record["error"] = str(exc)[:300]
        except CollectiveError as exc:
            problems.append(f"{path}: {exc}")
            record["error"] = str(exc)[:300]
        paths[path] = record
    collective_ctx.decide(detail=f" ({'; '.join(problems[:6])})" if problems else "", paths=paths)


@pytest.mark.check("CC-007")
def test_named_groups_in_the_same_actors_are_isolated(collective_ctx: CollectiveCtx) -> None:
    """Groups of different sizes and rank orders over the same actors; programs submitted to all
    of them at once, so each actor alternates between its groups."""
    cc = collective_ctx.backend
    bound = float(collective_ctx.param("op_bound_s"))
    pool = cc.pool()
    layouts: list[tuple[list[Any], list[int], str, dict[str, Any]]] = [
        ([pool[i] for i in idx], ranks, cc.group_name(f"iso{g}"), {"members": idx, "ranks": ranks, "rounds": []})
               for g, (idx, ranks) in enumerate(programs.isolation_layouts(int(collective_ctx.param("groups")), len(pool)))]
    problems: list[str] = []
    try:
        for members, ranks, group, _ in layouts:
            cc.create(members, group, "init", ranks)
        for rnd in range(int(collective_ctx.param("rounds"))):
            pending: list[tuple[list[dict[str, Any]], list[int], str, list[Any], dict[str, Any]]] = []
            for g, (members, ranks, group, record) in enumerate(layouts):
                steps = programs.small_program(len(members), 1000 * rnd + 10 * g)
                refs = [m.run.remote(steps, r, len(members), group) for m, r in zip(members, ranks)]
                pending.append((steps, ranks, group, refs, record))
            for steps, ranks, group, refs, record in pending:
                got = cc.op(pool, refs, bound, f"round {rnd} in group {group}", param="op_bound_s")
                by_rank: list[Any] = [None] * len(ranks)
                for r, out in zip(ranks, got):
                    by_rank[r] = out
                found = programs.judge(steps, by_rank, len(ranks))
                problems += [f"group {group} (size {len(ranks)}): {p}" for p in found]
                record["rounds"].append(programs.group_evidence(steps, by_rank, len(ranks), len(found)))
        for members, _, group, _ in layouts:
            cc.destroy(members, group)
    except CollectiveError as exc:
        problems.append(str(exc))
    collective_ctx.metrics["groups"] = len(layouts)
    collective_ctx.decide(detail=f" ({programs.wrong_results('CC-007', problems)})" if problems else "",
                          layouts=[record for *_, record in layouts])


@pytest.mark.check("CC-008")
def test_destroy_and_recreate_under_the_same_name_leaves_nothing_behind(collective_ctx: CollectiveCtx) -> None:
    cc = collective_ctx.backend
    bound, gone_s = float(collective_ctx.param("op_bound_s")), float(collective_ctx.param("leftover_bound_s"))
    problems = []
    audit: leftovers.Audit | None = None
    for path in ("init", "declarative", "experimental"):
        if path == "declarative":
            # read after a first group's whole lifecycle: what a backend starts once per process
            # (a library's daemon, Python's resource tracker) is there already; what it starts
            # per group shows again in every later group
            audit = leftovers_audit(collective_ctx)
        members = cc.pool()[:2]   # fresh members when a hang in the previous path discarded them
        group = cc.group_name(f"again-{path}")
        try:
            for attempt, ranks in enumerate(([0, 1], [1, 0])):
                steps = programs.small_program(2, 500 + attempt)[:1]
                which = "re-created" if attempt else "first"
                handle = cc.create(members, group, path, ranks)
                problems += [f"{path}, {which} group: {p}"
                             for p in programs.judge(steps, cc.execute(members, steps, group, bound, ranks, param="op_bound_s"), 2)]
                if audit is not None:
                    audit.sample()   # what the members hold while a group lives: still there, unheld, after destroy?
                views = cc.ask(members, "group_view", group, timeout_s=bound, param="op_bound_s", what="get_rank")
                problems += [f"{path}, {which} group: a member given rank {r} reports rank {v[1]}"
                             for r, v in zip(ranks, views) if v[1] != r]
                if path == "experimental":
                    cc.destroy_handle(handle)
                else:
                    cc.destroy(members, group)
                views = cc.ask(members, "group_view", group, timeout_s=bound, param="op_bound_s", what="is_group_initialized")
                if any(v[0] for v in views):
                    problems.append(f"{path}: a member still has group {group!r} after destroy_collective_group")
                if path == "declarative" and not wait_until(lambda g=group: not cc.info_actor_alive(g), gone_s):
                    problems.append(f"{path}: the detached actor info_{group} is still alive {gone_s:.0f}s after "
                                    "destroy_collective_group")
        except CollectiveError as exc:
            problems.append(f"{path}: {exc}")
    try:
        problems += memory_left_behind(collective_ctx)
    except CollectiveError as exc:
        problems.append(f"create/destroy cycles: {exc}")
    try:
        left = audit.left(gone_s) if audit is not None else []
    except CollectiveError as exc:
        left = []
        problems.append(f"leftovers audit: {exc}")
    if left:
        problems.append(f"the backend left behind after destroy_collective_group (still there {gone_s:.0f}s after the "
                        f"last group was destroyed; the suite started none of it): {', '.join(left[:5])}")
    assert not problems, "; ".join(problems[:6])


def leftovers_audit(ctx: CollectiveCtx) -> leftovers.Audit:
    """The backend's own leftovers (conformance.leftovers): actors of the cluster, processes below
    the pool's members and files they hold (in /dev/shm or open anywhere else, as a transport's
    endpoints are read), or held while a group lived and left there unheld, read after the check's first group was
    destroyed and after its last destroy_collective_group; the members the suite started are left out."""
    cc = ctx.backend
    members = cc.pool()
    return leftovers.Audit(lambda: cc.ask(members, "leftovers_here", what="the members' processes and files"),
                           lambda: cc.started_ids,
                           lambda i, names, since: cc.ask([members[i]], "leftovers_orphans", names, since,
                                                          what="the files the members held")[0])


def memory_left_behind(ctx: CollectiveCtx) -> list[str]:
    """leak_cycles cycles of create, one allreduce of leak_payload_mib, destroy, each under a new
    name, in the same two members; the host memory they hold (conformance.host_memory: anonymous
    memory and shared memory outside Ray's object store) after cycle leak_warmup_cycles and after
    the last may differ by at most max_growth_mib. Pages of Ray's store that a zero-copy ray.get
    touched are not held by the member (their resident total counts them; 2 of 11 runs of a
    correct backend returning payloads through the store failed on exactly one payload of them). The warm-up cycles pay for imports and the
    allocators' pools; the payload is above glibc's largest mmap threshold (32 MiB), so a buffer freed goes back
    to the system at once and what stays resident is what someone still holds. A backend that
    keeps per-group buffers (a communicator cache, staging copies) after destroy grows by about
    one payload per cycle."""
    cc = ctx.backend
    bound = float(ctx.param("op_bound_s"))
    cycles, payload = int(ctx.param("leak_cycles")), float(ctx.param("leak_payload_mib"))
    warmup = int(ctx.param("leak_warmup_cycles"))
    allowed = float(ctx.param("max_growth_mib"))
    members = cc.pool()[:LEAK_MEMBERS]   # the judge's count of members (member_memory_growth)
    held: list[list[float]] = []
    for cycle in range(cycles):
        group = cc.group_name(f"cycle{cycle}")
        cc.create(members, group)
        right = cc.ask(members, "payload_allreduce", int(payload * 2**20), group, timeout_s=bound, param="op_bound_s",
                         what=f"allreduce of {payload:g} MiB")
        cc.destroy(members, group)
        if not all(right):
            return [f"create/destroy cycle {cycle + 1}: the {payload:g} MiB allreduce computed a wrong sum"]
        held.append(cc.ask(members, "held_mib", what="the host memory the members hold"))
    growth = [round(last - first, 1) for first, last in zip(held[warmup - 1], held[-1])]
    ctx.metrics["memory"] = {"held_mib": [[round(x, 1) for x in r] for r in held], "growth_mib": growth,
                               "payload_mib": payload, "cycles": cycles}
    return [f"the host memory member {i} holds (anonymous, and shared outside Ray's object store) grew by "
            f"{g:.0f} MiB over {cycles - warmup} more create/allreduce({payload:g} MiB)/destroy cycles (at most "
            f"{allowed:g} MiB): the backend still holds what destroyed groups used; {WHERE_RETENTION_HIDES}"
            for i, g in enumerate(growth) if g > allowed]


# Where a backend's retained memory usually is (found in backends written outside the project):
# the failure names it so the vendor knows where to look first.
WHERE_RETENTION_HIDES = (
    "look first at per-group state kept after destroy (communicator caches, staging copies) and at the allocator "
    "arenas of the backend's reader threads: glibc keeps each thread's freed multi-MiB receive buffers in that "
    "thread's arena for reuse, so a reader thread per peer that allocates a fresh buffer per message holds them "
    "(receive into one reused buffer per peer, or call malloc_trim after freeing)")
