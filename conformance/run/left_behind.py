"""What a run left on the host when it ended (report.json `host.left_behind`): its Ray processes
still alive, the /dev/shm segments and folders its processes held that are still there, the files
elsewhere they held and nobody holds now. Read against the host's state before the run
(preflight.host_state), so what was there before, or a neighbour's, is never this run's. Pure.
"""
from __future__ import annotations

import os
from typing import Any, Iterable

from conformance.report.local_paths import portable_processes


def left_behind(before: dict[str, Any], after: dict[str, Any], sessions: Iterable[str],
                witnessed: Iterable[str] = (), files_left: Iterable[str] = (), *,
                vendor_cluster: bool = False) -> dict[str, Any]:
    """What the run left on the host: its Ray processes still alive, /dev/shm entries it added (pure).

    Processes count as the run's own only when they name one of the run's session folders (or
    descend from a process that does), so a neighbour's cluster is never blamed on this run. A new
    /dev/shm file (at any depth) counts as the run's only when one of its processes was seen
    holding it (`witnessed`: process_owners.ShmWitness, read at each check's end and before each
    actor the suite kills, conformance.run.before_kill); a new entry some other live process holds,
    or another user owns, is not mentioned; one held by nobody and never seen held by the run is
    listed apart, as of unknown origin (Linux keeps no record of a segment's creator). New
    folders are listed as folders (they hold no memory): the run's when a file the run held lies
    below them, else of unknown origin; "(empty)" when nothing is left inside. `files_left`: regular
    files outside /dev/shm the run's processes were seen holding, made during the run, still there
    and held by nobody (conformance.leftovers.orphans of the witness's files).

    `vendor_cluster`: the run was on a cluster the suite did not start (`--ray-address`), whose
    session is the vendor's and which keeps running after the run: its raylets (one a fault driver
    restarted among them) and pooled workers are alive by design, and a segment a live process
    still holds is the cluster's state, not a leftover. Those are listed apart (`cluster_kept`: the
    processes by pid and kind, the segments by name), never as the run's, so nothing is hidden from
    the reader; a segment the run's processes held that nobody holds any more is still the run's.
    """
    ours = {str(s) for s in sessions}
    old_pids = {p["pid"] for p in before.get("ray_processes", [])}
    procs = [p for p in after.get("ray_processes", [])
             if p["pid"] not in old_pids and p.get("session") and p["session"] in ours]
    old_entries = set((before.get("shm") or {}).get("entries", []))
    after_entries = list((after.get("shm") or {}).get("entries", []))
    new_entries = [e for e in after_entries if e not in old_entries]
    detail = (after.get("shm") or {}).get("detail") or {}
    seen = set(witnessed)

    def is_folder(name: str) -> bool:
        return name.endswith("/") or bool((detail.get(name) or {}).get("folder"))

    def own_user(name: str) -> bool:
        uid: int = (detail.get(name) or {}).get("uid", os.getuid())
        return uid == os.getuid()

    files = [e for e in new_entries if not is_folder(e)]
    mine = [e for e in files if e in seen]
    kept: dict[str, Any] = {}
    held: list[str] = []
    if vendor_cluster:
        held = [e for e in mine if (detail.get(e) or {}).get("held")]
        mine = [e for e in mine if e not in held]
        kept = {"ray_processes": portable_processes(procs), "shm_entries_held": held[:50],
                "shm_entries_held_count": len(held)}
        procs = []
    unknown = [e for e in files if e not in seen and not (detail.get(e) or {}).get("held") and own_user(e)]
    folders = [e if e.endswith("/") else e + "/" for e in new_entries if is_folder(e) and own_user(e)]
    mine_folders = [f for f in folders if any(s.startswith(f) for s in mine)]
    kept_folders = [f for f in folders if f not in mine_folders and any(s.startswith(f) for s in held)]
    if vendor_cluster:
        kept["shm_folders"] = kept_folders[:50]
    empty = [f for f in folders if not any(e.startswith(f) and e != f for e in after_entries)]

    def mb(names: list[str]) -> float:
        return round(sum(int((detail.get(n) or {}).get("bytes") or 0) for n in names) / 2**20, 1)

    return {"ray_processes": portable_processes(procs), "shm_entries": mine[:50], "shm_entries_count": len(mine),
            "shm_growth_mb": mb(mine), "shm_unattributed": unknown[:50], "shm_unattributed_count": len(unknown),
            "shm_unattributed_mb": mb(unknown),
            "shm_entry_mb": {n: round(int((detail.get(n) or {}).get("bytes") or 0) / 2**20, 1)
                             for n in (mine[:50] + unknown[:50] + held[:50])},
            "shm_folders": mine_folders[:50], "shm_folders_unattributed": [f for f in folders if f not in mine_folders + kept_folders][:50],
            "shm_folders_empty": empty[:50], "files_left": sorted(files_left)[:50],
            "files_left_count": len(set(files_left)), **({"cluster_kept": kept} if vendor_cluster else {})}
