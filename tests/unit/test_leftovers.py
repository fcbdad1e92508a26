"""The leftovers audit's pure parts (conformance.leftovers): what appeared during a plugin's
lifecycle and is still there, minus what the check started itself."""
from __future__ import annotations

import os
import subprocess
import sys

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
