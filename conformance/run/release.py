"""Every unit of a resource back in Ray's hands after the suite's actors ended: the one wait for it.

A check, its fixture's setup and teardown, and the harnesses that keep actors between checks (the
RDT pools, the collective members) end the actors that hold devices and then wait until Ray's
accounting has every unit back, so that what runs next finds every device free. Whose time that
is, the contract decides (conformance.timing.owned):

* a unit freed after its actor ended is Ray's accounting of a dead worker's resources: no code of
  the plugin runs on that path. The wait is Ray's machinery (conformance.run.machinery): its bound
  stretches by what the run measured, a fresh sample is taken before anyone is blamed, and it is
  recorded in the running check's metrics.waits;
* a unit still held by what Ray reports ALIVE (an actor of the suite's or the plugin's that did
  not end, a placement group never removed, a task still running) is a leak, however slow the host: `NotReleased`, an
  AssertionError naming the holders (`leak`), as it was before the wait was Ray's; a wait for some
  of a node's units (one holder of several ended, `units`) lets the others' holders live: a leak is
  what Ray reports alive holding more than the units the wait leaves held;
* a unit held by nothing Ray reports alive, on a host a fresh sample says got slower, is the
  host's: "not judged: host" (HostNotReady) with both measurements;
* and on a host a fresh sample says did its part, still NotReleased: something Ray does not list
  holds it, never excused as the host.

`holders`, `running_tasks` and `leak` are pure; `live_holders` reads Ray's GCS tables: the actor
table, the placement groups and the task events each worker reports (about once a second) (the
state API needs the dashboard, which the suite's clusters run without: conformance.leftovers reads
the same actor table).
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Iterable, Mapping, Sequence

from conformance.run import machinery as ray_machinery
from conformance.timing.host_load import MachineryRecord
from conformance.timing.owned import RAY_NOMINAL_S
from conformance.timing.waits import BoundRanOut, polled

# knob: the nominal bound of Ray's accounting of dead actors' units where no check's param gives one
# (device_release_s gives the recovery scenarios theirs), before the run's stretch
RELEASE_S = RAY_NOMINAL_S["RELEASE_S"]   # 20 s: one named value verify holds such waits to (timing/owned)
# the placement groups that hold their bundles' units (reserved, placed, or partly placed again;
# a PENDING one holds nothing yet)
HOLDING_GROUPS = ("PREPARED", "CREATED", "RESCHEDULING")
_EPS = 1e-9


class NotReleased(AssertionError):
    """Units of the resource were not released: a leak (Ray reports their holder alive), or held by
    something Ray does not list while the host did its part. A failure where a check's setup or
    teardown found it (an error, "teardown: ..."), as every AssertionError there."""


@dataclass(frozen=True)
class Holder:
    """What Ray reports alive holding units of the resource: an actor, a placement group or a task."""
    kind: str          # "actor" | "placement group" | "task"
    ident: str         # its id (hex)
    name: str          # the actor's class (and name), the group's name
    units: float
    node_id: str

    def describe(self) -> str:
        node = f" on node {self.node_id[:8]}" if self.node_id else ""
        name = f" {self.name}" if self.name.strip("'") else ""
        return f"{self.kind}{name} [{self.ident[:12]}]{node} holding {self.units:g}"


def units_in(demand: Mapping[str, Any], resource: str) -> float:
    """The units of `resource` in a demand (an actor's required resources, a bundle): its own name,
    else the most of its placement-group names (`<resource>_group_<pg>`, `<resource>_group_<i>_<pg>`:
    an actor in a group takes its units from the group's bundle) (pure)."""
    own = demand.get(resource)
    if own:
        return float(own)
    scoped = [float(v) for k, v in demand.items() if str(k).startswith(f"{resource}_group_")]
    return max(scoped, default=0.0)


def holders(actors: Iterable[Mapping[str, Any]], groups: Iterable[Mapping[str, Any]], resource: str,
            node_id: str | None = None, tasks: Iterable[Mapping[str, Any]] = ()) -> list[Holder]:
    """What holds units of `resource` (on `node_id` when given) by Ray's tables (pure): ALIVE actors
    requiring some (`actors`: {"ActorID", "ActorClassName", "Name", "State", "NodeID",
    "RequiredResources"}), placement groups of a holding state with bundles of it (`groups`:
    ray.util.placement_group_table()'s rows), and tasks still running that require some (`tasks`:
    `running_tasks`' rows)."""
    out = []
    for t in tasks:
        units = units_in(t.get("RequiredResources") or {}, resource)
        where = str(t.get("NodeID") or "")
        if units > _EPS and (node_id is None or where == node_id):
            out.append(Holder("task", str(t.get("TaskID") or ""), str(t.get("Name") or "?"), units, where))
    for a in actors:
        units = units_in(a.get("RequiredResources") or {}, resource)
        where = str(a.get("NodeID") or "")
        if a.get("State") == "ALIVE" and units > _EPS and (node_id is None or where == node_id):
            name = str(a.get("ActorClassName") or "?") + (f" {a['Name']!r}" if a.get("Name") else "")
            out.append(Holder("actor", str(a.get("ActorID") or ""), name, units, where))
    for g in groups:
        if g.get("state") not in HOLDING_GROUPS:
            continue
        placed = {str(k): str(v) for k, v in (g.get("bundles_to_node_id") or {}).items()}
        bundles = {str(k): units_in(v or {}, resource) for k, v in (g.get("bundles") or {}).items()}
        units = sum(u for k, u in bundles.items() if node_id is None or placed.get(k) == node_id)
        if units > _EPS:
            where = node_id or ",".join(sorted({n[:8] for n in placed.values() if n}))
            out.append(Holder("placement group", str(g.get("placement_group_id") or ""),
                              repr(str(g.get("name") or "")), units, where))
    return out


def leak(held: Sequence[Holder] | None, resource: str, what: str, may_hold: float = 0.0) -> NotReleased | None:
    """The finding when what Ray reports alive still holds units after the wait (pure): the actors
    or groups that should have ended did not (a leak, never the host's, however slow). None when
    nothing alive holds them, or when Ray's tables could not be read (`held` None: no owner to name).

    `may_hold`: the units the wait lets stay held (a wait for `units` of a node's devices while the
    scenario's other holders live on, e.g. one holder of several killed: total - units). What Ray
    reports alive is a leak only when it holds more than that: the holders that may live account
    for no missing unit."""
    if not held or sum(h.units for h in held) <= may_hold + _EPS:
        return None
    named = "; ".join(h.describe() for h in held[:4]) + (f"; and {len(held) - 4} more" if len(held) > 4 else "")
    return NotReleased(f"{what}: {resource} still held by what Ray reports alive ({named}): what holds them was "
                       "not ended or removed (a leak; Ray's accounting had nothing to release yet)")


def _actor_rows() -> list[dict[str, Any]]:
    """The GCS actor table's ALIVE rows, with what each requires (Ray's own parser drops that)."""
    from ray._common.utils import binary_to_hex
    from ray._private import state
    from ray.core.generated import gcs_pb2

    table: Any = gcs_pb2.ActorTableData  # type: ignore[attr-defined]  # generated protobuf: Ray ships no stubs
    rows = []
    for raw in state.state._connect_and_get_accessor().get_actor_table(None, "ALIVE"):
        a = table.FromString(raw)
        rows.append({"ActorID": binary_to_hex(a.actor_id), "ActorClassName": a.class_name, "Name": a.name,
                     "State": table.ActorState.Name(a.state),
                     "NodeID": binary_to_hex(a.node_id or a.address.node_id),
                     "RequiredResources": dict(a.required_resources)})
    return rows


# the states a task attempt holds its resources in (Ray's common.proto TaskStatus): on a worker,
# running or blocked in a get/wait inside the task
RUNNING_STATES = ("SUBMITTED_TO_WORKER", "RUNNING", "RUNNING_IN_RAY_GET", "RUNNING_IN_RAY_WAIT",
                  "GETTING_AND_PINNING_ARGS")
ENDED_STATES = ("FINISHED", "FAILED")


def running_tasks(events: Iterable[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """The normal tasks whose latest attempt Ray's task events say is on a worker and not ended
    (pure). `events`: {"TaskID", "Attempt", "Type", "Name", "NodeID", "RequiredResources",
    "States"}, in pieces as workers report them (a task's info and its state changes may come in
    different events): merged by task and attempt, the latest attempt of each task kept. Actor
    tasks hold nothing of their own (their actor does: the actor table), so only normal tasks."""
    merged: dict[tuple[str, int], dict[str, Any]] = {}
    for e in events:
        key = (str(e.get("TaskID") or ""), int(e.get("Attempt") or 0))
        row = merged.setdefault(key, {"TaskID": key[0], "Attempt": key[1], "States": set()})
        for field in ("Type", "Name", "NodeID", "RequiredResources"):
            if e.get(field):
                row[field] = e[field]
        row["States"] |= set(e.get("States") or ())
    latest: dict[str, dict[str, Any]] = {}
    for (task, attempt), row in merged.items():
        if task not in latest or attempt > latest[task]["Attempt"]:
            latest[task] = row
    return [row for row in latest.values() if row.get("Type") == "NORMAL_TASK"
            and row["States"] & set(RUNNING_STATES) and not row["States"] & set(ENDED_STATES)]


def _task_events() -> list[dict[str, Any]]:
    """Ray's task events as the GCS keeps them (what workers report), one row per event piece."""
    from ray._common.utils import binary_to_hex
    from ray._private import state
    from ray.core.generated import common_pb2, gcs_pb2

    events: Any = gcs_pb2.TaskEvents  # type: ignore[attr-defined]  # generated protobuf: Ray ships no stubs
    status: Any = common_pb2.TaskStatus  # type: ignore[attr-defined]  # generated protobuf enum: Ray ships no stubs
    kinds: Any = common_pb2.TaskType  # type: ignore[attr-defined]  # generated protobuf enum: Ray ships no stubs
    rows = []
    for raw in state.state._connect_and_get_accessor().get_task_events():
        e = events.FromString(raw)
        info, updates = e.task_info, e.state_updates
        rows.append({"TaskID": binary_to_hex(e.task_id), "Attempt": e.attempt_number,
                     "Type": kinds.Name(info.type) if e.HasField("task_info") else None,
                     "Name": info.func_or_class_name or info.name,
                     "NodeID": binary_to_hex(updates.node_id or info.node_id),
                     "RequiredResources": dict(info.required_resources),
                     "States": [status.Name(k) for k in updates.state_ts_ns]})
    return rows


def live_holders(resource: str, node_id: str | None = None) -> list[Holder] | None:
    """What Ray's GCS reports alive holding units of `resource` now (`holders`); None when its
    tables could not be read (a private API moved: the caller names no owner). The task events
    are read apart: without them (Ray's task events off) the actors and groups are still named."""
    try:
        from ray.util.placement_group import placement_group_table

        try:
            tasks = running_tasks(_task_events())
        except Exception:  # noqa: BLE001 - a reading for a message; the tables below still name owners
            tasks = []
        return holders(_actor_rows(), placement_group_table().values(), resource, node_id, tasks)
    except Exception:  # noqa: BLE001 - a reading for a message; without it no leak is named
        return None


def available(resource: str, node_id: str | None = None) -> float:
    """Free units of `resource` (on one node when given; Ray's per-node view where it has one)."""
    import ray

    if node_id is not None:
        try:
            from ray._private.state import available_resources_per_node
            return float(available_resources_per_node().get(node_id, {}).get(resource, 0.0))
        except Exception:  # noqa: BLE001 - private API moved: fall back to the cluster view
            pass
    return float(ray.available_resources().get(resource, 0.0))


def total(resource: str, node_id: str | None = None) -> float:
    """Units of `resource` the cluster (a live node, when given) advertises."""
    import ray

    if node_id is not None:
        for n in ray.nodes():
            if n["NodeID"] == node_id:
                return float(n.get("Resources", {}).get(resource, 0.0)) if n.get("Alive") else 0.0
        return 0.0
    return float(ray.cluster_resources().get(resource, 0.0))


def await_released(resource: str, what: str, bound_s: float = RELEASE_S, *, machinery: MachineryRecord,
                   param: str | None = None, node_id: str | None = None, units: float | None = None) -> None:
    """Wait until every unit of `resource` is free (on `node_id`; `units` of them when given, else
    all it advertises), as Ray's machinery (the module docstring: stretched by the run's `machinery`
    record, a fresh sample before blaming, recorded in the running check's metrics.waits). A
    check reaches it through its budget (conformance.run.budget.Budget.released), which records
    it there in setup and teardown too; the harnesses that outlive a check call it with the run's
    record. NotReleased on a leak, or on units held by nothing Ray lists while the host did its
    part; HostNotReady when the host ran out."""
    def free() -> bool:
        want = total(resource, node_id) if units is None else units
        return available(resource, node_id) >= want - _EPS

    def seen() -> str:
        want = total(resource, node_id) if units is None else units
        return f"{available(resource, node_id):g} of {want:g} {resource} free" + (
            f" on node {node_id[:8]}" if node_id else "")

    read: list[list[Holder] | None] = []

    def finding() -> NotReleased | None:
        read.append(live_holders(resource, node_id))
        may_hold = 0.0 if units is None else max(total(resource, node_id) - units, 0.0)
        return leak(read[-1], resource, what, may_hold)

    try:
        ray_machinery.await_machinery(polled(free, what, explain=seen), bound_s, what, machinery=machinery,
                                      runs_plugin_code=True, param=param, finding=finding)
    except BoundRanOut as exc:   # nothing alive holds them and the host did its part
        listed = ("Ray's actor and placement group tables could not be read" if read and read[-1] is None
                  else "nothing Ray reports alive holds them (no actor, no placement group, no running task)")
        raise NotReleased(f"{exc}; {listed}, and a fresh sample says the host did its part: what holds them is "
                          "not Ray's accounting") from exc
