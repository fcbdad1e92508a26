"""When ray.shutdown() hangs at a run's end (a Ray deadlock, a vendor's code on Ray's IO thread),
the run still ends: the report is written with a note saying where the shutdown is stuck, the
cluster's processes are ended, and the process exits with pytest's status instead of waiting
forever in Ray's own atexit shutdown.

The hang is made by a plugin loaded into the suite process (`-p`): its ray.shutdown takes Ray's
connect lock and never returns, as the deadlock in tests/ray/test_queued_transfer_shutdown.py did.
"""
from __future__ import annotations

import json
import os
import subprocess
import time
from pathlib import Path

from conformance.run.command import suite_command
from suite_runner import SIM_MANIFEST

HANGING_SHUTDOWN_PLUGIN = '''
import threading
import ray
import ray._private.worker as ray_worker
import conformance.cluster.manager as manager

manager.CLUSTER_STOP_S = 3.0     # the run's bound, shortened for the test


def hung_shutdown(*_args, **_kwargs):
    with ray_worker._connect_or_shutdown_lock:
        threading.Event().wait()


def pytest_configure(config):
    ray.shutdown = hung_shutdown
'''

CHECK = '''
import pytest, ray

@pytest.mark.check("DP-002")
def test_connected(device_ctx):
    from conformance.areas.device.evidence import contract_evidence
    device_ctx.cluster()   # DP-002 names no cluster (tiers/checklist.yaml): this test starts the shared one itself
    assert ray.is_initialized()
    device_ctx.decide(probe=contract_evidence(device_ctx.contract(), "DP-002"))   # DP-002 is judged
'''


def _processes_of_sessions_started_by(pid: int) -> list[str]:
    """Live processes of the Ray sessions a process started (Ray names a session's folder
    session_<date>_<time>_<micros>_<pid of the starter>; its daemons' command lines name it)."""
    found = []
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                cmdline = Path(f"/proc/{entry}/cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
            except OSError:
                continue
            if f"_{pid}/" in cmdline and "/session_" in cmdline:
                found.append(cmdline[:120])
    return found


def test_a_hung_ray_shutdown_ends_the_run_with_its_report_written(tmp_path: Path) -> None:
    (tmp_path / "plugins").mkdir()
    (tmp_path / "plugins" / "hanging_shutdown.py").write_text(HANGING_SHUTDOWN_PLUGIN)
    checks = tmp_path / "checks" / "test_connected.py"
    checks.parent.mkdir()
    checks.write_text(CHECK)
    out = tmp_path / "out"
    env = {k: v for k, v in os.environ.items() if k != "PYTEST_ADDOPTS"}
    env["PYTHONPATH"] = os.pathsep.join([str(tmp_path / "plugins"), env.get("PYTHONPATH", "")]).rstrip(os.pathsep)
    t0 = time.monotonic()
    proc = subprocess.Popen([*suite_command(SIM_MANIFEST, out, ["-p", "hanging_shutdown", str(checks)])],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env, cwd=str(tmp_path))
    try:
        stdout, stderr = proc.communicate(timeout=150)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.communicate()
    assert time.monotonic() - t0 < 120
    assert proc.returncode == 0, (stdout[-2000:], stderr[-2000:])
    report = json.loads((out / "report.json").read_text())
    checks_by_id = {c["id"]: c for c in report["checks"]}
    assert checks_by_id["DP-002"]["outcome"] == "pass", checks_by_id["DP-002"]
    notes = " ".join(report["cluster"]["notes"])
    assert "stopping it hung: ray.shutdown(): did not return within 3s (stuck in " in notes, notes
    assert "hung_shutdown" in notes, notes       # where: the hung call's own frame
    assert "conformance: ray.shutdown(): did not return within 3s" in stderr and str(out) in stderr, stderr[-2000:]
    assert "tier achieved:" in stdout             # the summary was printed before the process ended
    time.sleep(1.0)
    assert not _processes_of_sessions_started_by(proc.pid)   # none of the cluster is left running
