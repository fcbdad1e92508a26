"""Shared memory is attributed by the processes that hold it, so another job's segments never
count against this run: real processes and real /dev/shm segments, no Ray (conformance.cluster.process_owners)."""
from __future__ import annotations

import os
import subprocess
import sys
import time
import uuid
from multiprocessing import resource_tracker, shared_memory
from pathlib import Path

import pytest

from conformance.cluster import process_owners
from conformance.rdt import memory

MiB = 1 << 20
HOLDER = """
import sys, time
from multiprocessing import shared_memory, resource_tracker
seg = shared_memory.SharedMemory(name=sys.argv[1], create=True, size=int(sys.argv[2]))
resource_tracker.unregister(seg._name, "shared_memory")
seg.buf[:] = b"x" * len(seg.buf)
print("ready", flush=True)
time.sleep(120)
"""


def _segment(name: str, size: int) -> shared_memory.SharedMemory:
    seg = shared_memory.SharedMemory(name=name, create=True, size=size)
    resource_tracker.unregister(seg._name, "shared_memory")  # type: ignore[attr-defined]
    seg.buf[:] = b"y" * size
    return seg


@pytest.fixture
def tag():
    t = f"rc-attr-{os.getpid()}-{uuid.uuid4().hex[:6]}"
    yield t
    for p in Path("/dev/shm").glob(f"{t}*"):
        p.unlink(missing_ok=True)


def test_segments_are_ours_orphan_or_foreign_by_who_holds_them(tag: str) -> None:
    foreign = subprocess.Popen([sys.executable, "-c", HOLDER, f"{tag}-foreign", str(4 * MiB)],
                               stdout=subprocess.PIPE, text=True)
    try:
        assert foreign.stdout is not None and foreign.stdout.readline().strip() == "ready"
        held = _segment(f"{tag}-held", 2 * MiB)                 # this process keeps it mapped
        orphan = _segment(f"{tag}-orphan", 1 * MiB)
        orphan.close()                                          # unmapped, never unlinked: a leak
        att = process_owners.attribute_now({os.getpid()})
        assert att.ours.get(f"{tag}-held", 0) >= 2 * MiB
        assert att.orphan.get(f"{tag}-orphan", 0) >= 1 * MiB
        assert att.foreign.get(f"{tag}-foreign", 0) >= 4 * MiB
        assert f"{tag}-foreign" not in att.ours and f"{tag}-foreign" not in att.orphan
        # the memory probe counts ours and orphans, never the foreign holder's segment
        shm = memory.cluster_shm({os.getpid()})
        assert shm["foreign_shm_bytes"] >= 4 * MiB
        held.close()
    finally:
        foreign.kill()
        foreign.wait()


def test_attribute_is_pure_and_follows_the_rules() -> None:
    E = process_owners.Entry
    entries = [E("a", 1000, 10), E("b", 1000, 20), E("c", 1000, 30), E("d", 2000, 40), E("e", 1000, 50)]
    held = {"a": {11}, "b": {11, 99}, "c": {99}}
    att = process_owners.attribute(entries, held, ours={11}, uid=1000)
    assert att.ours == {"a": 10, "b": 20}          # held by one of ours (also by another: still ours)
    assert att.foreign == {"c": 30, "d": 40}       # held only by another process / owned by another user
    assert att.orphan == {"e": 50}                 # held by nobody, our user's


def test_descendants_and_session_flags() -> None:
    assert process_owners.descendants([1], {2: 1, 3: 2, 4: 9, 5: 3}) == {1, 2, 3, 5}
    assert process_owners.session_of(["raylet", "--session_dir=/tmp/ray/s1"]) == "/tmp/ray/s1"
    assert process_owners.session_of(["python", "agent.py", "--session-dir=/tmp/ray/s2"]) == "/tmp/ray/s2"
    assert process_owners.session_of(["python", "-c", "pass"]) is None


def test_a_child_process_is_one_of_ours_through_its_parent() -> None:
    child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(30)"])
    try:
        deadline = time.monotonic() + 10
        while child.pid not in process_owners.parents() and time.monotonic() < deadline:
            time.sleep(0.05)
        assert child.pid in process_owners.descendants([os.getpid()], process_owners.parents())
    finally:
        child.kill()
        child.wait()


NEIGHBOUR = """
import glob, os, sys, time
from multiprocessing import shared_memory, resource_tracker
tag, step, cap, out = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), sys.argv[4]
held = []
while len(held) * step < cap:
    # another job on the host: it grows its shared memory while transfers are in flight (TR-013's
    # rounds), the way other jobs' stores moved the host's Shmem by 30-67 MiB a round
    if glob.glob("/dev/shm/simxfer-*"):
        seg = shared_memory.SharedMemory(name=f"{tag}-{len(held)}", create=True, size=step)
        resource_tracker.unregister(seg._name, "shared_memory")
        seg.buf[:] = b"n" * step
        held.append(seg)
        with open(out, "w") as f:
            f.write(str(len(held) * step))
    time.sleep(0.1)
time.sleep(600)
"""


def test_another_jobs_shared_memory_cannot_fail_tr013(tmp_path: Path, tag: str) -> None:
    """TR-013 on the good transport passes while a neighbour's process grows its /dev/shm segments
    by far more than the check's budget during the rounds; transport/NoFree (tests/teeth.yaml)
    shows the leak is still caught with the same probes."""
    from teeth import TeethRun, execute

    grown = tmp_path / "grown"
    neighbour = subprocess.Popen([sys.executable, "-c", NEIGHBOUR, f"{tag}-n", str(16 * MiB), str(384 * MiB),
                                  str(grown)])
    try:
        run = TeethRun(id="good/tr013-beside-a-neighbour", base="transport",
                       set={"cluster.object_store_memory_mb": 300}, env={"RAY_CONFORMANCE_TRANSPORT_MAX_BYTES": "16MiB"},
                       catches={}, may_fail=(), passes=("TR-013",), not_applicable=(), waived=(), files=(), phase=1,
                       also=(), data={})
        result = execute(run, tmp_path)
    finally:
        neighbour.kill()
        neighbour.wait()
    assert result.report is not None, result.output[-3000:]
    tr013 = result.check("TR-013")
    budget = 0.5 * tr013["metrics"]["payload_bytes"] * tr013["metrics"]["transfers_per_round"]
    neighbour_bytes = int(grown.read_text()) if grown.exists() else 0
    assert neighbour_bytes > 2 * budget, f"the neighbour grew only {neighbour_bytes >> 20} MiB: no test"
    assert tr013["outcome"] == "pass", tr013["reason"]
    assert "node.cluster_shm_bytes" in tr013["metrics"]["growth_per_round_bytes"]


SESSION_DAEMON = """
import subprocess, sys, time
# a stand-in for one of the run's Ray daemons (its command line names the session) and the
# worker below it that creates a segment and is then killed before freeing it
child = subprocess.Popen([sys.executable, "-c", sys.argv[2], sys.argv[3], sys.argv[4]])
print(child.pid, flush=True)
time.sleep(60)
"""


def test_a_segment_left_by_a_killed_actor_of_this_run_is_the_runs(tag: str, tmp_path: Path) -> None:
    """Issue 45: segments left by this run's own killed actors were "creator unknown" because the
    run read its processes only at each check's end, after the kill. Read before the kill
    (conformance.run.before_kill), the segment is the run's in "left on the host"."""
    from types import SimpleNamespace

    from conformance.report.guidance import left_behind_lines
    from conformance.run.before_kill import BeforeKill
    from conformance.run.left_behind import left_behind
    from conformance.run.preflight import host_state

    session = str(tmp_path / "session_x")
    before = host_state()
    daemon = subprocess.Popen([sys.executable, "-c", SESSION_DAEMON, f"--session-dir={session}", HOLDER,
                               f"{tag}-killed", str(1 * MiB)], stdout=subprocess.PIPE, text=True)
    try:
        assert daemon.stdout is not None
        worker = int(daemon.stdout.readline())
        deadline = time.monotonic() + 20
        while not Path(f"/dev/shm/{tag}-killed").exists() and time.monotonic() < deadline:
            time.sleep(0.05)
        time.sleep(0.2)   # mapped, not only created
        witness = process_owners.ShmWitness()
        ray_stand_in = SimpleNamespace(kill=lambda pid: os.kill(pid, 9))
        guard = BeforeKill(lambda: witness.sample([session]))
        guard.install(ray_stand_in)
        ray_stand_in.kill(worker)                      # the suite kills its actor: read first
        guard.uninstall()
        time.sleep(0.3)
        summary = left_behind(before, host_state(), [session], witness.seen)
        assert f"{tag}-killed" in summary["shm_entries"] and f"{tag}-killed" not in summary["shm_unattributed"]
        assert any("this run's processes held are still there" in line and f"{tag}-killed" in line
                   for line in left_behind_lines(summary))
        # read only after the kill (as before): the run cannot tell, and says so
        late = process_owners.ShmWitness()
        late.sample([session])
        assert f"{tag}-killed" in left_behind(before, host_state(), [session], late.seen)["shm_unattributed"]
    finally:
        daemon.kill()
        daemon.wait()
