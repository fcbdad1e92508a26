"""Whose is it? This run's Ray processes, and the /dev/shm segments each process holds.

A host is shared: other people's jobs run Ray clusters and allocate shared memory beside a
certification run. What the suite says about the host ("left on the host by this run") and what
its memory checks judge (TR-013) must speak only of what this run started, so both attribute a
segment by the processes that hold it, never by host-wide totals:

* a process is the run's when its command line names one of the run's session folders (Ray's
  own daemons: `--session-dir=`, `--session_dir=`, `--ray_session_dir=`), or when it descends from
  one (workers rename themselves `ray::…` and keep no session argument);
* a /dev/shm entry is `ours` when one of those processes has it open or mapped, `foreign` when
  another process holds it or another user owns it, and `orphan` when no process holds it: an
  orphan was unlinked by nobody, which is a leak by whoever created it. Linux does not record a
  segment's creator, so an orphan is attributed by when it appeared (the caller compares before
  and after) and by its owner, never by name.

/dev/shm is walked whole: a vendor that stages into its own folder (/dev/shm/<vendor>/buf-7)
leaks there as surely as at the top. Entries are named by their path below /dev/shm
("vendor/buf-7"); a folder is an entry of its own, named with a trailing "/" ("vendor/"),
holding no memory, never attributed as a segment.

`attribute` is pure; the rest only read /proc and /dev/shm.
"""
from __future__ import annotations

import os
import re
import stat
import time
from dataclasses import dataclass, field
from typing import Iterable, Mapping

SESSION_FLAGS = ("--session-dir=", "--session_dir=", "--ray_session_dir=")
SHM_DIR = "/dev/shm"


def session_of(argv: Iterable[str]) -> str | None:
    """The session folder a Ray daemon's command line names (None for none)."""
    for a in argv:
        for flag in SESSION_FLAGS:
            if a.startswith(flag):
                return a[len(flag):]
    return None


RAY_PROCESS_LOG = re.compile(r"^python-core-(?:worker|driver)-[0-9a-f]+_(\d+)\.log$")


def logged_pids(names: Iterable[str]) -> set[int]:
    """The pids in Ray's per-process log names (pure): every worker and driver of a session
    writes `python-core-worker-<id>_<pid>.log` or `python-core-driver-<id>_<pid>.log` in the
    session's logs folder, so a session's logs name each process it ran, also those that
    have exited (what `/proc` can no longer say)."""
    pids = set()
    for name in names:
        m = RAY_PROCESS_LOG.match(name)
        if m:
            pids.add(int(m.group(1)))
    return pids


def session_pids(temp_dir: str) -> set[int]:
    """The pids Ray logged under a Ray temp folder (RAY_TMPDIR: every session below it, and any
    folder its logs were moved to)."""
    names: list[str] = []
    for _here, _dirs, files in os.walk(temp_dir, onerror=lambda _exc: None):
        names.extend(files)
    return logged_pids(names)


def _pids() -> list[int]:
    return [int(p) for p in os.listdir("/proc") if p.isdigit()]


def _argv(pid: int) -> list[str]:
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as f:
            return [a.decode("utf-8", "replace") for a in f.read().split(b"\0") if a]
    except OSError:
        return []


def parents() -> dict[int, int]:
    """pid -> parent pid for every process readable on this host."""
    out = {}
    for pid in _pids():
        try:
            with open(f"/proc/{pid}/stat") as f:
                stat = f.read()
        except OSError:
            continue
        # the command name (field 2) may hold spaces and parentheses: split after the last ')'
        out[pid] = int(stat.rsplit(")", 1)[1].split()[1])
    return out


def descendants(roots: Iterable[int], parent_of: Mapping[int, int]) -> set[int]:
    """`roots` and every process below them (pure)."""
    children: dict[int, list[int]] = {}
    for pid, ppid in parent_of.items():
        children.setdefault(ppid, []).append(pid)
    found, todo = set(), list(roots)
    while todo:
        pid = todo.pop()
        if pid in found:
            continue
        found.add(pid)
        todo.extend(children.get(pid, ()))
    return found


def session_processes(sessions: Iterable[str]) -> set[int]:
    """The processes of these Ray sessions on this host: their daemons and everything below them."""
    wanted = {os.path.realpath(str(s)) for s in sessions if s}
    if not wanted:
        return set()
    roots = set()
    for pid in _pids():
        session = session_of(_argv(pid))
        if session and os.path.realpath(session) in wanted:
            roots.add(pid)
    return descendants(roots, parents()) if roots else set()


def _entry_name(path: str, prefix: str) -> str | None:
    """The entry a path from /proc/<pid>/fd or maps names below /dev/shm (None: elsewhere)."""
    if not path.startswith(prefix):
        return None
    return path[len(prefix):].removesuffix(" (deleted)") or None


def holders(shm_dir: str = SHM_DIR) -> dict[str, set[int]]:
    """entry name -> pids that have it open or mapped (processes this user may read)."""
    prefix = shm_dir.rstrip("/") + "/"
    out: dict[str, set[int]] = {}

    def note(path: str, pid: int) -> None:
        name = _entry_name(path, prefix)
        if name is not None:
            out.setdefault(name, set()).add(pid)

    for pid in _pids():
        try:
            for fd in os.listdir(f"/proc/{pid}/fd"):
                try:
                    note(os.readlink(f"/proc/{pid}/fd/{fd}"), pid)
                except OSError:
                    continue
            with open(f"/proc/{pid}/maps") as f:
                for line in f:
                    parts = line.split(None, 5)
                    if len(parts) == 6:
                        note(parts[5].strip(), pid)
        except OSError:
            continue
    return out


@dataclass(frozen=True)
class Entry:
    name: str           # path below /dev/shm; a folder's ends with "/"
    uid: int
    bytes: int          # pages actually allocated (a tmpfs file may be sparse); 0 for a folder
    folder: bool = False


def shm_entries(shm_dir: str = SHM_DIR) -> list[Entry]:
    """Every file and folder below /dev/shm, however deep (symbolic links are not followed)."""
    out = []
    root = shm_dir.rstrip("/")
    for here, dirs, files in os.walk(root, onerror=lambda _exc: None):
        rel = os.path.relpath(here, root)
        base = "" if rel == "." else rel + "/"
        for name in dirs + files:
            try:
                st = os.lstat(os.path.join(here, name))
            except OSError:
                continue
            folder = name in dirs and not os.path.islink(os.path.join(here, name))
            out.append(Entry(base + name + ("/" if folder else ""), st.st_uid, 0 if folder else st.st_blocks * 512,
                             folder))
    return out


@dataclass
class Attribution:
    ours: dict[str, int] = field(default_factory=dict)       # name -> bytes
    orphan: dict[str, int] = field(default_factory=dict)
    foreign: dict[str, int] = field(default_factory=dict)

    def as_dict(self) -> dict[str, object]:
        return {"ours_bytes": sum(self.ours.values()), "orphan_bytes": sum(self.orphan.values()),
                "foreign_bytes": sum(self.foreign.values()), "ours": sorted(self.ours),
                "orphan": sorted(self.orphan)}


def attribute(entries: Iterable[Entry], held_by: Mapping[str, set[int]], ours: set[int], uid: int) -> Attribution:
    """Sort /dev/shm entries into ours / orphan / foreign (pure; the rules in the module docstring)."""
    out = Attribution()
    for e in entries:
        if e.folder:
            continue   # a folder holds no memory; what is inside it is attributed entry by entry
        pids = held_by.get(e.name, set())
        if pids & ours:
            out.ours[e.name] = e.bytes
        elif pids or e.uid != uid:
            out.foreign[e.name] = e.bytes
        else:
            out.orphan[e.name] = e.bytes
    return out


def attribute_now(ours: set[int], shm_dir: str = SHM_DIR) -> Attribution:
    return attribute(shm_entries(shm_dir), holders(shm_dir), ours, os.getuid())


def held_by(pids: Iterable[int], shm_dir: str = SHM_DIR) -> set[str]:
    """The /dev/shm entries these processes have open or mapped (cheap: reads only their /proc)."""
    prefix = shm_dir.rstrip("/") + "/"
    names: set[str] = set()
    for pid in pids:
        paths = []
        try:
            for fd in os.listdir(f"/proc/{pid}/fd"):
                try:
                    paths.append(os.readlink(f"/proc/{pid}/fd/{fd}"))
                except OSError:
                    continue
            with open(f"/proc/{pid}/maps") as f:
                paths += [parts[5].strip() for parts in (line.split(None, 5) for line in f) if len(parts) == 6]
        except OSError:
            continue
        names |= {n for n in (_entry_name(p, prefix) for p in paths) if n is not None}
    return names


def open_files(pid: int, skip: Iterable[str] = ()) -> set[str]:
    """Regular files outside /dev/shm (which held_by reads) that process `pid` holds open, as
    absolute paths: a staging file a transport keeps under /tmp or its own folder. Left out: files
    below the folders in `skip` (Ray's own), and files already deleted (they take no room once
    closed)."""
    skipped = tuple(os.path.join(os.path.realpath(s), "") for s in skip)
    out: set[str] = set()
    try:
        fds = os.listdir(f"/proc/{pid}/fd")
    except OSError:
        return out
    for fd in fds:
        try:
            target = os.readlink(f"/proc/{pid}/fd/{fd}")
            st = os.stat(f"/proc/{pid}/fd/{fd}")
        except OSError:
            continue
        if not target.startswith("/") or target.endswith(" (deleted)") or not stat.S_ISREG(st.st_mode):
            continue
        if target.startswith(SHM_DIR.rstrip("/") + "/") or target.startswith(skipped) or not os.path.exists(target):
            continue
        out.add(target)
    return out


@dataclass
class ShmWitness:
    """The /dev/shm entries this run's processes were seen holding, sampled while they run (after
    the run they are gone, and a segment they leave behind carries no trace of its creator), and
    the regular files elsewhere they held open since `since` (open_files; the sessions' own temp
    folders left out), which conformance.leftovers.orphans judges at the run's end."""

    seen: set[str] = field(default_factory=set)
    pids: set[int] = field(default_factory=set)
    files: set[str] = field(default_factory=set)
    since: float = field(default_factory=time.time)

    def sample(self, sessions: Iterable[str]) -> None:
        sessions = list(sessions)
        ours = session_processes(sessions)
        self.pids |= ours
        self.seen |= held_by(ours)
        skip = {os.path.dirname(os.path.realpath(str(s))) for s in sessions if s}
        self.files |= {f for pid in ours for f in open_files(pid, skip)}


def shm_detail(shm_dir: str = SHM_DIR) -> dict[str, dict[str, int | bool]]:
    """Every /dev/shm entry, however deep: its allocated bytes, owner uid, whether a live process
    holds it and whether it is a folder."""
    held = holders(shm_dir)
    return {e.name: {"bytes": e.bytes, "uid": e.uid, "held": bool(held.get(e.name)), "folder": e.folder}
            for e in shm_entries(shm_dir)}
