"""The collective area's judges: each check's recorded evidence + the release's params -> its outcome.

The checklist names a check's judge (`judge: <function name>`); the live check decides with it
(CheckContext.decide) and `verify` decides again with it (conformance/report/judges.py says the
rules every judge keeps). Pure: no Ray, no clock, no I/O.
"""
from __future__ import annotations

from typing import Any, Mapping

from conformance.collective.config import ALL_OPS, DEFAULT_DTYPES, POOL_SIZE
from conformance.report.judges import FAIL, PASS, JudgeTable, MissingEvidence, Verdict, agrees, number, param_value

JUDGES = JudgeTable()

HOOK_MEMBERS = 2      # the hook job's members (conformance.areas.collective.hook_driver)
HOOK_ELEMENTS = 4     # the elements of its allreduce


def compared_at_star_size(m: Mapping[str, Any], op: str, size: int, op_bus: float) -> str:
    """Why the star comparison is not the one the release asks for ('' when it is): star_bytes
    must be the release's star_size_mib, and star_op_busbw_gbps the op's own row at that size, so
    a submitter cannot pick the size where the star's fixed costs flatter a slow backend."""
    got = m.get("star_bytes")
    if isinstance(got, bool) or not isinstance(got, (int, float)) or got != size:
        return f"star_bytes {got!r} is not star_size_mib ({size} bytes): the star comparison must be made at that size"
    rows = m.get("rows")
    if not isinstance(rows, list):
        raise MissingEvidence("metric rows is missing or not a list")
    row = next((r for r in rows if isinstance(r, Mapping) and r.get("op") == op and r.get("bytes") == size), None)
    if row is None:
        return f"rows has no {op} row at star_size_mib ({size} bytes): the compared figure has no measurement"
    if not agrees(op_bus, number(row, "busbw_gbps")):
        return (f"star_op_busbw_gbps {op_bus:.4g} is not the {op} row's busbw_gbps at {size} bytes "
                f"({number(row, 'busbw_gbps'):.4g})")
    return ""


@JUDGES.rule(needs=("busbw_gbps", "host_copy_gbps", "host_fraction"),
           params=("min_host_copy_fraction", "min_link_fraction"), decides_all=True,
           references=(("nominal_link_gbps", "collective.nominal_link_gbps"),))
def bus_bandwidth_against_references(m: Mapping[str, Any], p: Mapping[str, Any], manifest: Mapping[str, Any]) -> Verdict:
    """The weaker op's peak bus bandwidth over the sizes against the same run's host copy; the op
    furthest below the star reference (the same op, at the same size, the same run, the same
    members, by the simplest correct implementation over Ray's object store: at the sweep's
    largest size since release 0.1.0+data.18, at the op's peak before) against it, when the release has
    min_star_fraction (releases before it held the weaker op to one object-store put/get of the
    same bytes, min_object_store_fraction, or to the host copy alone: their reports are judged as
    they were); and against the manifest's nominal link when one is declared."""
    bus, host = number(m, "busbw_gbps"), number(m, "host_copy_gbps")
    if host <= 0:
        return Verdict(FAIL, f"host copy bandwidth {host:g} GB/s is not positive")
    store_part = ""
    if "min_star_fraction" in p:
        star, op_bus, star_fraction = (number(m, "star_busbw_gbps"), number(m, "star_op_busbw_gbps"),
                                       number(m, "star_fraction"))
        if star <= 0:
            return Verdict(FAIL, f"the star reference's bus bandwidth {star:g} GB/s is not positive")
        if not agrees(star_fraction, op_bus / star):
            return Verdict(FAIL, f"star_fraction {star_fraction:.4g} is not star_op_busbw_gbps/star_busbw_gbps "
                                 f"({op_bus:.4g}/{star:.4g})")
        need_star = param_value(p, "min_star_fraction")
        op = str(m.get("star_op") or "the op")
        at = ""
        if "star_size_mib" in p:   # since 0.1.0+data.18: compared at that size, the row there is the evidence
            wrong = compared_at_star_size(m, op, int(param_value(p, "star_size_mib") * 2**20), op_bus)
            if wrong:
                return Verdict(FAIL, wrong)
            at = f" at {param_value(p, 'star_size_mib'):g} MiB"
        if star_fraction < need_star:
            return Verdict(FAIL, f"{op}'s bus bandwidth{at} is {op_bus:.3g} GB/s, {star_fraction:.1%} of the simplest "
                                 f"correct {op} over Ray's object store (a star through one actor) doing the same op "
                                 f"at that size between the same members in this run ({star:.3g} GB/s); the check needs "
                                 f">= {need_star:.0%}: the backend adds a cost per byte of its own")
        store_part = f", {star_fraction:.0%} of the star over the object store"
    elif "min_object_store_fraction" in p:   # releases before the star: one put/get of the same bytes
        store, store_fraction = number(m, "object_store_gbps"), number(m, "object_store_fraction")
        if store <= 0:
            return Verdict(FAIL, f"object store bandwidth {store:g} GB/s is not positive")
        if not agrees(store_fraction, bus / store):
            return Verdict(FAIL, f"object_store_fraction {store_fraction:.4g} is not busbw_gbps/object_store_gbps "
                                 f"({bus:.4g}/{store:.4g})")
        need_store = param_value(p, "min_object_store_fraction")
        if store_fraction < need_store:
            return Verdict(FAIL, f"peak bus bandwidth is {bus:.3g} GB/s, {store_fraction:.1%} of Ray's object store "
                                 f"moving the same bytes between the same members in this run ({store:.3g} GB/s); the "
                                 f"check needs >= {need_store:.0%}: the backend adds a cost per byte of its own")
        store_part = f", {store_fraction:.0%} of the object store"
    fraction = number(m, "host_fraction")
    if not agrees(fraction, bus / host):
        return Verdict(FAIL, f"host_fraction {fraction:.4g} is not busbw_gbps/host_copy_gbps ({bus:.4g}/{host:.4g})")
    need = param_value(p, "min_host_copy_fraction")
    if fraction < need:
        return Verdict(FAIL, f"peak bus bandwidth is {bus:.3g} GB/s, {fraction:.2%} of this host's "
                             f"memory copy ({host:.3g} GB/s); the check needs >= {need:.1%}")
    if m.get("nominal_link_gbps") is None:
        return Verdict(PASS, f"{fraction:.2%} of the host copy, >= {need:.1%}{store_part} (no nominal link declared)")
    link, link_fraction = number(m, "nominal_link_gbps"), number(m, "link_fraction")
    if link <= 0 or not agrees(link_fraction, bus / link):
        return Verdict(FAIL, f"link_fraction {link_fraction:.4g} is not busbw_gbps/nominal_link_gbps ({bus:.4g}/{link:.4g})")
    need_link = param_value(p, "min_link_fraction")
    if link_fraction < need_link:
        return Verdict(FAIL, f"peak bus bandwidth is {bus:.3g} GB/s, {link_fraction:.1%} of the "
                             f"nominal link ({link:.3g} GB/s, collective.nominal_link_gbps); the check needs >= {need_link:.0%}")
    return Verdict(PASS, f"{fraction:.2%} of the host copy{store_part} and {link_fraction:.1%} of the nominal link")



@JUDGES.rule(needs=("memory",), params=("max_growth_mib", "leak_warmup_cycles"), decides_all=False,
           counts=(("memory.cycles", "leak_cycles"), ("memory.payload_mib", "leak_payload_mib")))
def member_memory_growth(m: Mapping[str, Any], p: Mapping[str, Any], manifest: Mapping[str, Any]) -> Verdict:
    """The memory each member holds after the warm-up cycles and after the last may differ by at
    most max_growth_mib; growth_mib must be what its own rows give. The rows are `held_mib` (host
    memory the member holds: anonymous, and shared outside Ray's object store) or, in reports of
    releases before that reading, `rss_mib` (its resident total)."""
    memory = m.get("memory")
    if not isinstance(memory, Mapping):
        raise MissingEvidence("metric memory is missing")
    key = "held_mib" if "held_mib" in memory else "rss_mib"
    rows, growth = memory.get(key), memory.get("growth_mib")
    warmup, allowed = int(param_value(p, "leak_warmup_cycles")), param_value(p, "max_growth_mib")
    if not isinstance(rows, list) or not all(isinstance(r, list) for r in rows) or not isinstance(growth, list) \
            or not growth:
        raise MissingEvidence("metric memory.held_mib (or memory.rss_mib) / memory.growth_mib is missing or not lists")
    rows = [[number({"v": x}, "v") for x in row] for row in rows]  # every figure recorded is a number
    if len(rows) != number(memory, "cycles") or not 1 <= warmup <= len(rows):
        return Verdict(FAIL, f"memory.{key} has {len(rows)} row(s) for {memory.get('cycles')!r} cycles")
    first, last = rows[warmup - 1], rows[-1]
    if len(first) != len(growth) or len(last) != len(growth):
        return Verdict(FAIL, f"memory.growth_mib does not have one figure per member of memory.{key}")
    for i, g in enumerate(growth):
        g = number({"v": g}, "v")
        derived = last[i] - first[i]
        if abs(g - derived) > 0.15:  # knob: both are rounded to 0.1 MiB (a rounding bound, no threshold)
            return Verdict(FAIL, f"memory.growth_mib[{i}] is {g:g} but its {key} rows give {derived:.1f}")
        if g > allowed:
            return Verdict(FAIL, f"the memory member {i} holds grew by {g:.0f} MiB over the create/destroy "
                                 f"cycles (at most {allowed:g} MiB)")
    return Verdict(PASS, f"growth within {allowed:g} MiB per member")


# the survivors' error times are taken after ray.wait returns: a loaded driver may read one a little
# past the bound it waited with, which the live check counted as in time
_WAIT_SLACK_S = 2.0   # knob: the driver reads the times after ray.wait returns (see above)


@JUDGES.rule(needs=("error_s",), params=("error_bound_s",), decides_all=False)
def survivors_errored_in_time(m: Mapping[str, Any], p: Mapping[str, Any], manifest: Mapping[str, Any]) -> Verdict:
    """Every survivor got its error within error_bound_s of the member's death: one time per
    survivor, and the survivors are the check's (POOL_SIZE members, the last one killed: ranks
    0..POOL_SIZE-2, in every release), whatever count the record carries (`survivors`, recorded
    since, must say the same): a survivor dropped from the record, with its count or not, is a
    hang left out, never a survivor that was not there."""
    from conformance.collective.config import POOL_SIZE

    seconds, bound = m.get("error_s"), param_value(p, "error_bound_s")
    if not isinstance(seconds, Mapping) or not seconds:
        raise MissingEvidence("metric error_s is missing or empty (no survivor got an error)")
    late = {str(r): number({"v": s}, "v") for r, s in seconds.items()}
    ranks = [str(r) for r in range(POOL_SIZE - 1)]   # the killed member is the pool's last
    if "survivors" in m and number(m, "survivors") != len(ranks):
        return Verdict(FAIL, f"records {m['survivors']!r} survivor(s); the check kills one of its {POOL_SIZE} "
                             f"members, leaving {len(ranks)}")
    if sorted(late) != ranks:
        return Verdict(FAIL, f"error_s records survivor rank(s) {sorted(late)} of {ranks}: the others got no "
                             "error within the bound (a hang)")
    late = {r: s for r, s in late.items() if s > bound + _WAIT_SLACK_S}
    if late:
        return Verdict(FAIL, f"survivor(s) {late} waited past the {bound:g} s bound for their error (a hang)")
    return Verdict(PASS, f"{len(seconds)} survivor(s) got their error within {bound:g} s")


# What each survivor's call ended in (CC-009's metric `outcomes`, the check's own words): the
# contract's is an error; the others name what a survivor saw instead.
SURVIVOR_ERROR = "error"
SURVIVOR_RETURNED = "returned as if the op had succeeded"
SURVIVOR_HUNG = "no answer within error_bound_s (a hang)"


# needs: the one the report schema requires of CC-009's pass (schemas/report.schema.json, every
# release's); `outcomes` and `survivors` are read below (missing: no pass either)
@JUDGES.rule(needs=("error_s",), params=("error_bound_s",), decides_all=False)
def every_survivor_errored_in_time(m: Mapping[str, Any], p: Mapping[str, Any], manifest: Mapping[str, Any]) -> Verdict:
    """CC-009 from the release after 0.1.0+data.18 on: survivors_errored_in_time's rules (one time
    per survivor, each within error_bound_s, the survivors the check's), and every survivor's
    recorded outcome (`outcomes`, rank -> what its call ended in) the contract's, an error: a call
    that returned as if the op had succeeded is a fail whatever its time, and an outcome missing
    for a survivor is a survivor whose end the record does not show. (Earlier releases' reports
    recorded the times alone; their checklists name survivors_errored_in_time, kept as it was.)"""
    number(m, "survivors")   # the count the check records beside error_s, held to the check's by survivors_errored_in_time
    outcomes = m.get("outcomes")
    if not isinstance(outcomes, Mapping):
        raise MissingEvidence("metric outcomes (what each survivor's call ended in) is missing or not a record")
    ranks = [str(r) for r in range(POOL_SIZE - 1)]
    ended = {str(r): o for r, o in outcomes.items()}
    if sorted(ended) != ranks:
        return Verdict(FAIL, f"outcomes records survivor rank(s) {sorted(ended)} of {ranks}: a survivor's end is not "
                             "recorded")
    wrong = {r: o for r, o in sorted(ended.items()) if o != SURVIVOR_ERROR}
    if wrong:
        return Verdict(FAIL, "; ".join(f"survivor rank {r} {o if isinstance(o, str) else repr(o)}" for r, o in wrong.items())
                       + f" (the contract: every survivor's call ends in an error within {param_value(p, 'error_bound_s'):g} s)")
    timed = survivors_errored_in_time(m, p, manifest)
    if timed.outcome != PASS:
        return timed
    return Verdict(PASS, f"every survivor's call ended in an error within {param_value(p, 'error_bound_s'):g} s")


# ---------------------------------------------------------------- the op checks (CC-003..CC-007)
# Each group a check ran records programs.group_evidence: its step count, one digest per rank of
# what the rank held after every step, and the live judging's problem count. The judge regenerates
# the program from the release's params and the manifest's collective block (dtypes, ops, device
# types) and digests what every rank MUST hold: a step count, a world size or a digest that is not
# the program's is a fail, so is any problem counted, so is a group not run.

def _block(manifest: Mapping[str, Any]) -> Mapping[str, Any]:
    block = manifest.get("collective") if isinstance(manifest, Mapping) else None
    return block if isinstance(block, Mapping) else {}


def _claimed(manifest: Mapping[str, Any], key: str, default: tuple[str, ...]) -> list[str]:
    value = _block(manifest).get(key)
    return [str(v) for v in value] if isinstance(value, list) and value else list(default)


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


# ---------------------------------------------------------------- the class and its registration (CC-001..CC-003)

@JUDGES.rule(needs=("contract",), decides_all=True)
def group_class_meets_the_contract(m: Mapping[str, Any], p: Mapping[str, Any], manifest: Mapping[str, Any]) -> Verdict:
    """The facts read off the class (BaseGroup subclass, abstract members, the constructor's and
    every op's signature against what Ray passes, check_backend_availability a classmethod),
    decided again by the live check's own rule; a built-in class only where the manifest names
    no group_class."""
    from conformance.areas.collective.contract import OP_ARITY, facts_problems

    facts = m["contract"]
    if isinstance(facts, Mapping) and facts.get("base_group") is True and number(facts, "ops_read") != len(OP_ARITY):
        return Verdict(FAIL, f"the facts read {facts['ops_read']:g} op signature(s) of the {len(OP_ARITY)} Ray calls")
    if isinstance(facts, Mapping) and facts.get("builtin") is not (not _block(manifest).get("group_class")):
        return Verdict(FAIL, f"the facts say builtin={facts.get('builtin')!r}, but the manifest "
                             f"{'names' if _block(manifest).get('group_class') else 'names no'} collective.group_class")
    problems = facts_problems(dict(facts) if isinstance(facts, Mapping) else facts)
    if problems:
        return Verdict(FAIL, "; ".join(problems[:4]))
    return Verdict(PASS, "the class meets every call Ray makes")


@JUDGES.rule(needs=("hosts", "answers"), params=("unavailable_on",), decides_all=True)
def availability_false_where_missing(m: Mapping[str, Any], p: Mapping[str, Any], manifest: Mapping[str, Any]) -> Verdict:
    """One answer per host the manifest declares among the release's unavailable_on, and the
    manifest's own: True there; on the others False for a backend that requires its device
    (collective.requires_device, default true), True for one that does not; never raised."""
    answers = m["answers"]
    if not isinstance(answers, Mapping):
        raise MissingEvidence("metric answers is not a mapping")
    if number(m, "hosts") != len(answers):
        return Verdict(FAIL, f"records {m['hosts']:g} host(s) asked beside {len(answers)} answer(s)")
    hosts = (manifest.get("accelerator") or {}).get("hosts") or {}
    kinds = [str(k) for k in (p.get("unavailable_on") or []) if k in hosts]
    if set(answers) != {"manifest host", *kinds}:
        return Verdict(FAIL, f"answers record hosts {sorted(answers)}, the manifest and the release's params give "
                             f"{sorted({'manifest host', *kinds})}")
    here = answers["manifest host"] if isinstance(answers["manifest host"], Mapping) else {}
    if here.get("value") is not True:
        return Verdict(FAIL, f"on the manifest's own host it answered {here.get('value', here.get('raised'))!r}, "
                             "expected True")
    want = _block(manifest).get("requires_device", True) is False
    for kind in kinds:
        got = answers[kind] if isinstance(answers[kind], Mapping) else {}
        if "raised" in got or got.get("value") is not want:
            return Verdict(FAIL, f"on a {kind} host it answered {got.get('value', got.get('raised'))!r}, expected {want}")
    return Verdict(PASS, f"True on the manifest's host, {want} on {', '.join(kinds) or 'no other host declared'}")


@JUDGES.rule(needs=("pool_size", "driver_available", "members", "hook_job"), decides_all=True)
def registered_in_driver_and_workers(m: Mapping[str, Any], p: Mapping[str, Any], manifest: Mapping[str, Any]) -> Verdict:
    """Registered and available in the driver and in every member of the pool; in the hook job,
    both members registered by the hook, a second registration harmless and the allreduce's
    digests right."""
    from conformance.collective import programs

    if number(m, "pool_size") != POOL_SIZE:
        return Verdict(FAIL, f"records a pool of {m['pool_size']:g} member(s), the check starts {POOL_SIZE}")
    if m["driver_available"] is not True:
        return Verdict(FAIL, "in the driver is_backend_available is not True after registering")
    members = m["members"]
    if not isinstance(members, list) or len(members) != POOL_SIZE:
        return Verdict(FAIL, f"records {len(members) if isinstance(members, list) else 0} member(s) of the pool's "
                             f"{POOL_SIZE}")
    for i, info in enumerate(members):
        if not (isinstance(info, Mapping) and info.get("registered") is True and info.get("available") is True):
            return Verdict(FAIL, f"member {i} (registered in its constructor): {info!r}")
    hooked = m["hook_job"]
    if not isinstance(hooked, Mapping) or "error" in hooked:
        return Verdict(FAIL, f"a job whose worker_process_setup_hook registers the backend: "
                             f"{hooked.get('error') if isinstance(hooked, Mapping) else hooked!r}")
    infos, again = hooked.get("infos"), hooked.get("again")
    if not isinstance(infos, list) or len(infos) != HOOK_MEMBERS or not all(
            isinstance(i, Mapping) and i.get("registered") is True for i in infos):
        return Verdict(FAIL, f"the hook job's members: {infos!r} (each of {HOOK_MEMBERS} registered by the hook)")
    if not isinstance(again, list) or len(again) != HOOK_MEMBERS or any(again):
        return Verdict(FAIL, f"registering again in the hook job's members: {again!r} (an idempotent helper must allow it)")
    if hooked.get("problems"):
        return Verdict(FAIL, f"the hook job's allreduce: {hooked['problems']!r}")
    steps = programs.op_matrix(HOOK_MEMBERS, ["float32"], ["torch"], ["allreduce"], HOOK_ELEMENTS)
    if hooked.get("digests") != programs.wanted_digests(steps, HOOK_MEMBERS):
        return Verdict(FAIL, f"the hook job's allreduce digests {hooked.get('digests')!r} are not its program's")
    return Verdict(PASS, "registered in the driver, the pool's members and the hook job's")


# ---------------------------------------------------------------- RDT over the backend (CC-011, CC-012)

def _per_device(m: Mapping[str, Any], manifest: Mapping[str, Any]) -> list[tuple[str, Mapping[str, Any]]]:
    """Each exercised device type's record (conformance.rdt.each_device: nested under the type
    when the block declares more than one); every declared type exercised or not applicable."""
    declared = _claimed(manifest, "rdt_devices", ("cpu",))
    exercised = m.get("devices")
    skipped = m.get("not_applicable_on") or {}
    if not isinstance(exercised, list) or not exercised:
        raise MissingEvidence("metric devices (the device types exercised) is missing or empty")
    if not isinstance(skipped, Mapping) or sorted(map(str, exercised)) != sorted(d for d in declared if d not in skipped):
        raise _Wrong(f"exercised {exercised}, but the manifest's collective.rdt_devices are {declared} "
                     f"(not applicable on {sorted(skipped) if isinstance(skipped, Mapping) else skipped!r})")
    if len(declared) == 1:
        return [(declared[0], m)]
    out = []
    for d in exercised:
        ev = m.get(d)
        if not isinstance(ev, Mapping):
            raise MissingEvidence(f"metric {d} (the record on that device type) is missing")
        out.append((str(d), ev))
    return out


class _Wrong(Exception):
    """A record that contradicts the manifest or the params (a fail, not missing evidence)."""


@JUDGES.rule(needs=("transfers", "devices"), decides_all=True)
def rdt_objects_arrive_two_sided(m: Mapping[str, Any], p: Mapping[str, Any], manifest: Mapping[str, Any]) -> Verdict:
    """On every device type the transport moves: both objects (one tensor; one per claimed dtype)
    arrived with no field wrong, the transport said it is two-sided, the driver's ray.get was
    refused (not returned, not hung) and the copy through the object store arrived right."""
    try:
        records = _per_device(m, manifest)
    except _Wrong as exc:
        return Verdict(FAIL, str(exc))
    sizes = {"one tensor": 1, "a tensor per dtype": len(_claimed(manifest, "dtypes", DEFAULT_DTYPES)),
             "through the object store": 1}
    if number(m, "transfers") != len(sizes) * len(records):
        return Verdict(FAIL, f"records {m['transfers']:g} transfer(s), the check makes {len(sizes)} on each of "
                             f"{len(records)} device type(s)")
    for device, ev in records:
        if ev.get("error"):
            return Verdict(FAIL, f"on {device}: {ev['error']}")
        objects = ev.get("objects")
        if not isinstance(objects, Mapping) or set(objects) != set(sizes):
            return Verdict(FAIL, f"on {device}: objects recorded {sorted(objects) if isinstance(objects, Mapping) else objects!r}, "
                                 f"the check moves {sorted(sizes)}")
        for what, n in sizes.items():
            got = objects[what] if isinstance(objects[what], Mapping) else {}
            if got.get("tensors") != n or got.get("arrived") != n:
                return Verdict(FAIL, f"on {device}: {what}: {got.get('arrived')!r} of {got.get('tensors')!r} tensor(s) "
                                     f"arrived, {n} sent")
            if number(got, "wrong"):
                return Verdict(FAIL, f"on {device}: {what}: {got['wrong']:g} tensor(s) arrived wrong")
        if ev.get("one_sided") is not False:
            return Verdict(FAIL, f"on {device}: is_one_sided() is {ev.get('one_sided')!r}, a transport over send/recv "
                                 "is two-sided")
        if ev.get("driver_get") != "refused":
            return Verdict(FAIL, f"on {device}: ray.get in the driver {ev.get('driver_get')!r}, Ray refuses it")
    return Verdict(PASS, f"every object right on {', '.join(d for d, _ in records)}")


@JUDGES.rule(needs=("devices", "error_bound_s"), params=("error_bound_s",), decides_all=True)
def rdt_without_a_group_errs_in_time(m: Mapping[str, Any], p: Mapping[str, Any], manifest: Mapping[str, Any]) -> Verdict:
    """On every device type the transport moves: the transfer between actors in no group ended
    in an error (refused or raised), within error_bound_s of its submission (the bound recorded is
    the release's)."""
    bound = param_value(p, "error_bound_s")
    if number(m, "error_bound_s") != bound:
        return Verdict(FAIL, f"records error_bound_s {m['error_bound_s']!r}, the release's is {bound:g}")
    try:
        records = _per_device(m, manifest)
    except _Wrong as exc:
        return Verdict(FAIL, str(exc))
    for device, ev in records:
        outcome = ev.get("outcome")
        if outcome == "hang":
            return Verdict(FAIL, f"on {device}: an RDT transfer between two actors in no group got no error within "
                                 f"{bound:g} s (the transport found no communicator and said nothing)")
        if outcome == "delivered":
            return Verdict(FAIL, f"on {device}: an RDT transfer between two actors in no group delivered "
                                 f"{ev.get('tensors')!r} tensor(s): the transport moved it without the group")
        if outcome != "error" or not ev.get("error"):
            return Verdict(FAIL, f"on {device}: the transfer between actors in no group ended {outcome!r}, no error")
        took = number(ev, "error_s")
        if took > bound + _WAIT_SLACK_S:
            return Verdict(FAIL, f"on {device}: the error came after {took:g} s, past the {bound:g} s bound")
    return Verdict(PASS, f"an error within {bound:g} s on {', '.join(d for d, _ in records)}")
