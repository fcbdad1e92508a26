"""The leftovers audit's pure parts (conformance.leftovers): what appeared during a plugin's
lifecycle and is still there, minus what the check started itself."""
from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from conformance import leftovers
from conformance.leftovers import ActorSeen, ProcessSeen


def test_new_actors_are_those_alive_after_not_before_and_not_the_checks() -> None:
    member = ActorSeen("aa" * 8, "CollectiveMember", "", False)
    old = ActorSeen("bb" * 8, "Other", "svc", True)
    rendezvous = ActorSeen("cc" * 8, "_Rendezvous", "rendezvous-g1", True)
    before = {old.actor_id: old}
    after = {old.actor_id: old, member.actor_id: member, rendezvous.actor_id: rendezvous}
    assert leftovers.new_actors(before, after, {member.actor_id}) == [rendezvous]
    text = leftovers.describe([rendezvous])
    assert text == [f"actor _Rendezvous 'rendezvous-g1' (detached) [{rendezvous.actor_id[:12]}]"]


def test_new_processes_and_files() -> None:
    a, b = ProcessSeen(10, 1, "python worker"), ProcessSeen(11, 10, "vendor-proxy --port 9")
    reused = ProcessSeen(10, 1, "something else")
    assert leftovers.new_processes([a], [a, b, reused]) == [b, reused]
    assert leftovers.new_files(["x"], ["x", "vendor/seg"]) == ["vendor/seg"]
    assert leftovers.describe(processes=[b], files=["vendor/seg"]) == [
        "process 11 (vendor-proxy: vendor-proxy --port 9)", "/dev/shm/vendor/seg"]


def test_children_of_sees_a_spawned_process() -> None:
    child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    try:
        assert child.pid in {p.pid for p in leftovers.children_of(os.getpid())}
    finally:
        child.kill()
        child.wait()


def test_witness_suspects_what_was_held_since_its_start_only() -> None:
    w = leftovers.Witness(since=100.0)
    w.baseline([{"files": ["/var/log/vendor.log", "sem.x"]}])
    w.note([{"files": ["/var/log/vendor.log", "/tmp/vendor/stage-1"]}, {"files": ["vendor/seg"]}])
    assert w.suspects() == ["/tmp/vendor/stage-1", "vendor/seg"]


def test_orphans_are_new_files_nobody_holds(tmp_path: Path) -> None:
    """A file made since the audit began and held by no process is an orphan; one some process
    holds, one older than the audit, and one already gone are not."""
    old = tmp_path / "older"
    old.write_bytes(b"x")
    time.sleep(3 * leftovers.BIRTH_SLACK_S)
    since = time.time()
    left, held, gone = tmp_path / "left", tmp_path / "held", tmp_path / "gone"
    left.write_bytes(b"staged")
    held.write_bytes(b"staged")
    gone.write_bytes(b"staged")
    gone.unlink()
    holder = subprocess.Popen([sys.executable, "-c", "import sys, time; f = open(sys.argv[1]); print(1, flush=True); "
                               "time.sleep(60)", str(held)], stdout=subprocess.PIPE)
    try:
        assert holder.stdout is not None and holder.stdout.readline().strip() == b"1"
        names = [str(p) for p in (old, left, held, gone)]
        assert leftovers.orphans(names, since) == [str(left)]
    finally:
        holder.kill()
        holder.wait()
    assert leftovers.orphans([str(held)], since) == [str(held)]   # its holder is gone: nobody holds it now


def test_orphaned_asks_the_judge_until_the_plugin_cleans_up() -> None:
    w = leftovers.Witness(since=5.0)
    w.note([{"files": ["vendor/seg"]}])
    answers = [["vendor/seg"], []]
    asked = []

    def judge(names: list[str], since: float) -> list[str]:
        asked.append((names, since))
        return answers.pop(0)

    assert leftovers.orphaned(w, judge, timeout_s=5, interval_s=0.01) == []
    assert asked == [(["vendor/seg"], 5.0), (["vendor/seg"], 5.0)]
    assert leftovers.orphaned(leftovers.Witness(), judge, timeout_s=5) == []   # nothing seen: nothing asked
    assert len(asked) == 2


def test_here_reads_regular_files_held_anywhere(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The one reading for transports' endpoints and collective members: a file held open
    outside /dev/shm is in it."""
    monkeypatch.setattr(leftovers, "ray_temp_root", lambda: None)   # outside a Ray worker (and without importing ray)
    path = tmp_path / "staging"
    with open(path, "wb") as f:
        f.write(b"x")
        f.flush()
        assert str(path) in leftovers.here()["files"]
    assert str(path) not in leftovers.here()["files"]


def test_the_run_names_a_file_its_processes_held_that_outlived_them(tmp_path: Path) -> None:
    """Left on the host: a file one of the run's processes held while it lived, killed before it
    removed it (as Ray kills a source), is named; a file another process still holds is not."""
    from conformance.cluster import process_owners
    from conformance.report.guidance import left_behind_lines
    from conformance.run.left_behind import left_behind

    session = tmp_path / "ray" / "session_mine"
    session.mkdir(parents=True)
    staged, kept = tmp_path / "stage-1", tmp_path / "kept"
    code = ("import sys, time; a = open(sys.argv[1], 'w'); b = open(sys.argv[2], 'w'); print(1, flush=True); "
            "time.sleep(60)")
    source = subprocess.Popen([sys.executable, "-c", code, str(staged), str(kept), f"--session-dir={session}"],
                              stdout=subprocess.PIPE)
    holder = None
    try:
        assert source.stdout is not None and source.stdout.readline().strip() == b"1"
        witness = process_owners.ShmWitness()
        witness.since = time.time() - 5   # the run began before the source staged
        witness.sample([str(session)])
        assert {str(staged), str(kept)} <= witness.files
        holder = subprocess.Popen([sys.executable, "-c", "import sys, time; f = open(sys.argv[1]); print(1, flush=True); "
                                   "time.sleep(60)", str(kept)], stdout=subprocess.PIPE)
        assert holder.stdout is not None and holder.stdout.readline().strip() == b"1"
        source.kill()
        source.wait()
        left_files = leftovers.orphans(witness.files, witness.since)
        assert left_files == [str(staged)]
    finally:
        for p in (source, holder):
            if p is not None and p.poll() is None:
                p.kill()
                p.wait()
    empty = {"shm": {"entries": []}, "ray_processes": []}
    text = " ".join(left_behind_lines(left_behind(empty, empty, [str(session)], files_left=left_files)))
    assert f"1 file(s) this run's processes held open are still there, held by no process: {staged}" in text
    assert "nothing" in " ".join(left_behind_lines(left_behind(empty, empty, [str(session)])))


def test_the_run_reads_its_processes_before_each_kill_and_kills_all_the_same() -> None:
    """What a killed actor held is seen while it lived (conformance.run.before_kill); a reading
    that fails never stops the kill, and a pool's kill loop costs one reading."""
    from types import SimpleNamespace

    from conformance.run.before_kill import BeforeKill

    killed: list[tuple[Any, dict[str, Any]]] = []
    ray_stand_in = SimpleNamespace(kill=lambda actor, **kw: killed.append((actor, kw)))
    readings: list[str] = []
    now = [100.0]

    def read() -> None:
        readings.append("read")
        if len(readings) == 2:
            raise OSError("/proc went away")

    guard = BeforeKill(read, interval_s=0.2, clock=lambda: now[0])
    guard.install(ray_stand_in)
    guard.install(ray_stand_in)                       # idempotent: one wrapper
    ray_stand_in.kill("a")
    ray_stand_in.kill("b", no_restart=False)          # the same loop: no second reading
    now[0] += 1
    ray_stand_in.kill("c")                            # its reading fails: killed all the same
    assert killed == [("a", {}), ("b", {"no_restart": False}), ("c", {})]
    assert readings == ["read", "read"] and guard.count == 1
    guard.uninstall()
    ray_stand_in.kill("d")
    assert readings == ["read", "read"] and killed[-1] == ("d", {})
