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
  lifecycle, that they did not hold before it (conformance.cluster.process_owners.held_by), and
  regular files anywhere else they hold open (a staging file under /tmp or the vendor's own
  folder: process_owners.open_files), Ray's own temp folder left out; the same reading (`here`) for a
  transport's endpoints and a collective backend's members;
* orphans: a file a host process was seen holding while it lived (`Witness`: sampled during the
  lifecycle, before a kill), that is still there after the lifecycle and held by no process on
  the host (`orphans`): a source killed before garbage_collect, a staging file closed but never
  removed. Files a process held from its start (the first reading) and files older than the
  audit are never blamed.

The readings touch Ray and /proc; `new_actors`, `new_processes`, `new_files`, `describe` and
`Witness` are pure.
"""
from __future__ import annotations

import ctypes
import os
import stat
import time
from dataclasses import asdict, dataclass, field
from typing import Any, Callable, Iterable, Mapping

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


# the states of an actor Ray is still creating or restarting: not yet answering its calls
STARTING = ("DEPENDENCIES_UNREADY", "PENDING_CREATION", "RESTARTING")


def starting_actors(owners: Iterable[str]) -> list[ActorSeen]:
    """The actors Ray is still creating or restarting (Ray's GCS actor table; needs ray.init) that
    the actors with ids `owners` asked for (their owner's address is one of theirs): what a call
    into those actors that started an actor of the backend's own (a rendezvous or store actor)
    waits on Ray's machinery for. Actors anyone else started are not theirs to wait on."""
    from ray._private import state

    table = state.actors() or {}

    def address(info: Mapping[str, Any]) -> tuple[str, int]:
        return str(info.get("IPAddress") or ""), int(info.get("Port") or 0)

    theirs = {address(table[i].get("Address") or {}) for i in owners if i in table}
    return [ActorSeen(actor_id, str(info.get("ActorClassName") or "?"), str(info.get("Name") or ""),
                      bool(info.get("IsDetached")))
            for actor_id, info in table.items()
            if info.get("State") in STARTING and address(info.get("OwnerAddress") or {}) in theirs]


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


def ray_temp_root() -> str | None:
    """The folder Ray keeps this session's logs, sockets and spill files in (the parent of the
    session folder, e.g. /tmp/ray); None outside a Ray worker."""
    try:
        import ray

        node = ray._private.worker.global_worker.node
        session = node.get_session_dir_path() if node is not None else None
    except Exception:  # noqa: BLE001 - not in a Ray worker
        return None
    return os.path.dirname(os.path.realpath(session)) if session else None


def here() -> dict[str, Any]:
    """This process's reading (run inside a member or endpoint): the processes below it, the
    /dev/shm files it holds (Ray's object store left out: Ray maps it, not the plugin) and the
    regular files it holds open anywhere else (open_files, absolute paths; Ray's own temp folder
    left out)."""
    from conformance import host_memory
    from conformance.cluster.process_owners import open_files

    files = {f for f in held_files(os.getpid()) if not host_memory.is_object_store_mapping(f)}
    root = ray_temp_root()
    files |= open_files(os.getpid(), [root] if root else [])
    return {"processes": [asdict(p) for p in children_of(os.getpid())], "files": sorted(files)}


def absolute(name: str) -> str:
    """A reading's file as a path: /dev/shm entries are named below /dev/shm, the rest absolute."""
    from conformance.cluster.process_owners import SHM_DIR

    return name if name.startswith("/") else os.path.join(SHM_DIR, name)


STATX_BTIME = 0x800
AT_FDCWD = -100
AT_SYMLINK_NOFOLLOW = 0x100


def born_at(path: str) -> float | None:
    """When the file came to be: its birth time (statx) where the filesystem records one, else its
    last status change (never earlier than its birth: a file made during a check is never taken for
    an older one); None when it is gone."""
    try:
        ctime = os.lstat(path).st_ctime
    except OSError:
        return None
    statx = getattr(_libc(), "statx", None)
    if statx is None:
        return ctime
    buf = ctypes.create_string_buffer(256)    # struct statx; stx_btime at byte 80 (Linux uapi, stable)
    if statx(AT_FDCWD, os.fsencode(path), AT_SYMLINK_NOFOLLOW, STATX_BTIME, buf) != 0:
        return ctime
    raw = buf.raw
    if not int.from_bytes(raw[0:4], "little") & STATX_BTIME:
        return ctime
    return int.from_bytes(raw[80:88], "little", signed=True) + int.from_bytes(raw[88:92], "little") / 1e9


_LIBC: list[Any] = []


def _libc() -> Any:
    if not _LIBC:
        _LIBC.append(ctypes.CDLL(None, use_errno=True))
    return _LIBC[0]


def held_anywhere(paths: Iterable[str]) -> set[str]:
    """Which of these absolute paths some process on this host holds open or mapped (every
    process this user may read; /proc/<pid>/fd and maps)."""
    wanted = set(paths)
    found: set[str] = set()
    if not wanted:
        return found
    for pid in (int(p) for p in os.listdir("/proc") if p.isdigit()):
        try:
            for fd in os.listdir(f"/proc/{pid}/fd"):
                try:
                    target = os.readlink(f"/proc/{pid}/fd/{fd}")
                except OSError:
                    continue
                if target in wanted:
                    found.add(target)
            with open(f"/proc/{pid}/maps") as f:
                found |= {parts[5].strip() for parts in (line.split(None, 5) for line in f)
                          if len(parts) == 6 and parts[5].strip() in wanted}
        except OSError:
            continue
    return found


BIRTH_SLACK_S = 0.1   # knob: a filesystem's coarse clock may stamp a file this much before the audit began


def orphans(names: Iterable[str], since: float) -> list[str]:
    """Of these files (a reading's names), those still there as regular files, made no earlier
    than `since` (the audit's start: an older file is not the plugin's leftover) and held by no
    process on this host: left behind by a process that is gone or let go of them. Run on the
    host the files are on (inside a live endpoint or member)."""
    there = {}
    for name in set(names):
        path = absolute(name)
        try:
            if not stat.S_ISREG(os.lstat(path).st_mode):
                continue
        except OSError:
            continue
        born = born_at(path)
        if born is not None and born >= since - BIRTH_SLACK_S:
            there[path] = name
    held = held_anywhere(there)
    return sorted(name for path, name in there.items() if path not in held)


@dataclass
class Witness:
    """The files a plugin's host processes were seen holding while they lived (pure bookkeeping).
    A process killed before its plugin freed anything leaves no holder behind, and its files carry
    no trace of their creator: only a reading taken while it lived names them. `baseline` takes the
    readings at the audit's start (what a process holds from its start is not judged), `note` the
    ones taken during the lifecycle; `suspects` are what was held since and not at the start."""

    since: float = field(default_factory=time.time)
    before: set[str] = field(default_factory=set)
    seen: set[str] = field(default_factory=set)

    def baseline(self, readings: Iterable[Mapping[str, Any]]) -> None:
        for r in readings:
            self.before |= set(r.get("files") or ())

    def note(self, readings: Iterable[Mapping[str, Any]]) -> None:
        for r in readings:
            self.seen |= set(r.get("files") or ())

    def suspects(self) -> list[str]:
        return sorted(self.seen - self.before)


Judge = Callable[[list[str], float], list[str]]   # orphans(names, since), run on the files' host


def orphaned(witness: Witness, judge: Judge, timeout_s: float, interval_s: float = 0.5) -> list[str]:
    """The witness's suspects that are still orphans after up to timeout_s (a plugin's cleanup,
    e.g. a transport reaping a dead source's segment at its next use, takes a moment); [] when
    none. `judge` runs `orphans` on the files' host."""
    suspects = witness.suspects()
    deadline = time.monotonic() + timeout_s
    while suspects:
        left = judge(suspects, witness.since)
        if not left or time.monotonic() >= deadline:
            return left
        time.sleep(interval_s)
    return []


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
    out += [f if f.startswith("/") else f"/dev/shm/{f}" for f in files]
    return out


class Audit:
    """Two readings around a plugin's lifecycle: `Audit(read_here, started, judge)` before it
    begins, `sample()` while it runs (the files held then: a Witness per host process),
    `left(timeout_s)` after its last step. read_here() returns each host process's here(), in the
    same order every time; started() the ids of the actors the check itself started;
    judge(i, names, since) runs `orphans` in the i-th host process (on its host: the files it held
    are there). Without a judge, files seen only while the lifecycle ran are not judged."""

    def __init__(self, read_here: Callable[[], list[dict[str, Any]]], started: Callable[[], Iterable[str]],
                 judge: Callable[[int, list[str], float], list[str]] | None = None) -> None:
        self.read_here, self.started, self.judge = read_here, started, judge
        self.actors = live_actors()
        self.here = read_here()
        self.witnesses = [Witness() for _ in self.here]
        for w, r in zip(self.witnesses, self.here):
            w.baseline([r])

    def sample(self) -> None:
        """A reading while the lifecycle runs: the files held now are judged afterwards too."""
        for w, r in zip(self.witnesses, self.read_here()):
            w.note([r])

    def found(self) -> list[str]:
        actors = new_actors(self.actors, live_actors(), self.started())
        now = self.read_here()
        procs = [p for b, a in zip(self.here, now) for p in new_processes(
            [ProcessSeen(**x) for x in b["processes"]], [ProcessSeen(**x) for x in a["processes"]])]
        files = {f for b, a in zip(self.here, now) for f in new_files(b["files"], a["files"])}
        if self.judge is not None:
            for i, w in enumerate(self.witnesses):
                if w.suspects():
                    files |= set(self.judge(i, w.suspects(), w.since))
        return describe(actors, procs, sorted(files))

    def left(self, timeout_s: float, interval_s: float = 0.5) -> list[str]:
        """What is still there after up to timeout_s (a killed actor or process takes a moment to
        go); [] when nothing."""
        deadline = time.monotonic() + timeout_s
        while True:
            found = self.found()
            if not found or time.monotonic() >= deadline:
                return found
            time.sleep(interval_s)
