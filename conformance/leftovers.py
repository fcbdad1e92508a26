"""What a plugin leaves behind after its lifecycle ends: actors it started, processes it spawned,
files it keeps (the leftovers audit).

A check's other evidence looks at what Ray and the suite made (Ray's `info_<group>` actor, the
members' view, their memory); a backend's or transport's *own* helpers are seen only here: a
detached rendezvous actor a collective backend starts at group creation, a proxy process a
transport forks, a staging file it keeps open. The audit compares two readings taken around the
plugin's lifecycle (before it starts, after the lifecycle's last step — destroy_collective_group,
the last ref dropped), so what existed before is never blamed, and leaves out what the check
itself started:

* actors: every actor of the cluster Ray's GCS knows as not dead (Ray's actor table; the state
  API needs the dashboard, which the suite's clusters run without), new since the first reading,
  not started by the check;
* processes: the processes below the plugin's host processes (the members, the endpoints) that
  are new since the first reading: a worker's child outlives nothing by itself, so one alive
  after the lifecycle ended was left by the plugin;
* files: /dev/shm entries, at any depth, those host processes hold open or mapped after the
  lifecycle, that they did not hold before it (conformance.cluster.process_owners.held_by).

The readings touch Ray and /proc; `new_actors`, `new_processes`, `new_files` and `describe`
are pure.
"""
from __future__ import annotations

import os
from dataclasses import dataclass
from typing import Iterable, Mapping

NOT_DEAD = ("DEPENDENCIES_UNREADY", "PENDING_CREATION", "ALIVE", "RESTARTING")


@dataclass(frozen=True)
class ActorSeen:
    actor_id: str
    class_name: str
    name: str
    detached: bool


@dataclass(frozen=True)
class ProcessSeen:
    pid: int
    parent: int
    command: str


def live_actors() -> dict[str, ActorSeen]:
    """The cluster's actors that are not dead, by id (Ray's GCS actor table; needs ray.init)."""
    from ray._private import state

    out = {}
    for actor_id, info in (state.actors() or {}).items():
        if info.get("State") in NOT_DEAD:
            out[actor_id] = ActorSeen(actor_id, str(info.get("ActorClassName") or "?"), str(info.get("Name") or ""),
                                      bool(info.get("IsDetached")))
    return out


def children_of(pid: int) -> list[ProcessSeen]:
    """Every process below `pid` on this host (not `pid` itself), read from /proc."""
    from conformance.cluster.process_owners import descendants, parents

    parent_of = parents()
    out = []
    for child in sorted(descendants([pid], parent_of) - {pid}):
        try:
            with open(f"/proc/{child}/cmdline", "rb") as f:
                command = " ".join(a.decode("utf-8", "replace") for a in f.read().split(b"\0") if a)
        except OSError:
            continue
        out.append(ProcessSeen(child, parent_of.get(child, 0), command[:200]))
    return out


def held_files(pid: int) -> set[str]:
    """The /dev/shm entries (any depth) process `pid` holds open or mapped."""
    from conformance.cluster.process_owners import held_by

    return held_by([pid])


def new_actors(before: Mapping[str, ActorSeen], after: Mapping[str, ActorSeen],
               started_by_check: Iterable[str]) -> list[ActorSeen]:
    """Actors alive after the lifecycle that were not alive before it and the check did not start (pure)."""
    ours = set(started_by_check)
    return [a for k, a in sorted(after.items()) if k not in before and k not in ours]


def new_processes(before: Iterable[ProcessSeen], after: Iterable[ProcessSeen]) -> list[ProcessSeen]:
    """Processes alive after the lifecycle that were not before it (pure; by pid and command line,
    so a reused pid running another program is new)."""
    old = {(p.pid, p.command) for p in before}
    return [p for p in after if (p.pid, p.command) not in old]


def new_files(before: Iterable[str], after: Iterable[str]) -> list[str]:
    """Files held after the lifecycle that were not held before it (pure)."""
    return sorted(set(after) - set(before))


def describe(actors: Iterable[ActorSeen] = (), processes: Iterable[ProcessSeen] = (),
             files: Iterable[str] = ()) -> list[str]:
    """One phrase per leftover, naming what it is (pure)."""
    out = [f"actor {a.class_name}" + (f" {a.name!r}" if a.name else "") + (" (detached)" if a.detached else "")
           + f" [{a.actor_id[:12]}]" for a in actors]
    out += [f"process {p.pid} ({os.path.basename(p.command.split(' ', 1)[0]) or '?'}: {p.command[:80]})" for p in processes]
    out += [f"/dev/shm/{f}" for f in files]
    return out
