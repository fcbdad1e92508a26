"""A vendor's first hour with real Ray: the preflight catches a worker-only import failure in
seconds, and a failed check's report carries Ray's own log lines."""
from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import yaml

from suite_runner import SIM_MANIFEST, run_suite, write_manifest

NIMBUS_MANAGER = "import nimbus_sdk\nfrom conformance.simulated.manager import SimAccManager\n\n\n" \
                 "class NimbusManager(SimAccManager):\n    pass\n"


def nimbus_plugin(folder: Path) -> Path:
    """A manager importable in the driver only: its SDK is found through the driver's working
    folder (python -m puts it on sys.path), which Ray workers never see at start-up."""
    (folder / "nimbus_sdk").mkdir(parents=True)
    (folder / "nimbus_sdk" / "__init__.py").write_text("")
    (folder / "plugin").mkdir()
    (folder / "plugin" / "nimbus_mgr.py").write_text(NIMBUS_MANAGER)
    data = yaml.safe_load(SIM_MANIFEST.read_text())
    data["accelerator"]["manager"] = "nimbus_mgr:NimbusManager"
    data["plugin"] = {"python_path": ["plugin"]}
    data["product"] = "Nimbus N1"
    return write_manifest(data, folder)


def cli(*args: str, cwd: Path) -> tuple[subprocess.CompletedProcess[str], float]:
    env = {k: v for k, v in os.environ.items() if k not in ("PYTEST_ADDOPTS", "PYTHONPATH")}
    t0 = time.monotonic()
    proc = subprocess.run([sys.executable, "-m", "conformance.cli.main", *args], capture_output=True, text=True,
                          timeout=300, cwd=cwd, env=env)
    return proc, time.monotonic() - t0


def test_worker_only_import_failure_is_named_within_a_minute(tmp_path: Path) -> None:
    manifest = nimbus_plugin(tmp_path)
    proc, seconds = cli("preflight", "--manifest", "manifest.yaml", cwd=tmp_path)
    assert proc.returncode == 1, proc.stdout + proc.stderr
    assert "ModuleNotFoundError: No module named 'nimbus_sdk'" in proc.stdout
    assert 'Failed to preload the module "conformance.cluster.inject_autoinstall"' in proc.stdout
    assert seconds < 60, seconds

    out = tmp_path / "out"
    proc, seconds = cli("run", "--manifest", "manifest.yaml", "--out", str(out), cwd=tmp_path)
    assert proc.returncode == 1, proc.stdout[-3000:] + proc.stderr[-3000:]
    assert seconds < 60, seconds
    assert "the preflight failed, so no check ran" in proc.stdout
    report = json.loads((out / "report.json").read_text())
    assert report["preflight"]["ok"] is False
    first = next(f for f in report["preflight"]["findings"] if f["level"] != "warning")   # host warnings aside
    assert "No module named 'nimbus_sdk'" in first["message"]
    assert all(c["outcome"] == "skip" and c["reason"].startswith("not run: the preflight failed")
               for c in report["checks"])
    assert report["manifest_path"] == "manifest.yaml" == str(manifest.relative_to(tmp_path))
    text = (out / "report.json").read_text()
    assert str(tmp_path) not in text and tempfile.gettempdir() + "/" not in text
    assert "No module named 'nimbus_sdk'" in (out / "report.md").read_text()
    assert report["next_steps"]["next_tier"] == "experimental"


# A neighbour's Ray session on the same host: started by its own driver, ended when its stdin closes.
FOREIGN_DRIVER = """
import sys, ray
for attempt in range(3):    # Ray's fixed 30 s node-registration wait runs out on a loaded host
    try:
        ray.init(num_cpus=1, include_dashboard=False)
        break
    except Exception:
        ray.shutdown()
        if attempt == 2:
            raise
print(ray._private.worker.global_worker.node.get_session_dir_path(), flush=True)
sys.stdin.read()
ray.shutdown()
"""


def test_another_ray_sessions_folder_never_reaches_the_report(tmp_path: Path) -> None:
    """The preflight records the Ray processes of other sessions on the host (a neighbour's
    cluster makes timings noisier); their session folders are local paths and are shortened like
    the run's own (a neighbour's `/tmp/ray/session_…` reached report.json when another session
    ran beside test_worker_only_import_failure_is_named_within_a_minute)."""
    nimbus_plugin(tmp_path)
    env = {k: v for k, v in os.environ.items() if k not in ("PYTEST_ADDOPTS", "PYTHONPATH")}
    foreign = subprocess.Popen([sys.executable, "-c", FOREIGN_DRIVER], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                               text=True, env=env, cwd=tmp_path)
    try:
        assert foreign.stdout is not None
        session = foreign.stdout.readline().strip()
        assert session.startswith("/"), f"the foreign driver did not start a session: {session!r}"
        out = tmp_path / "out"
        proc, _ = cli("run", "--manifest", "manifest.yaml", "--out", str(out), cwd=tmp_path)
        assert proc.returncode == 1, proc.stdout[-3000:] + proc.stderr[-3000:]
    finally:
        assert foreign.stdin is not None
        foreign.stdin.close()
        try:
            foreign.wait(timeout=60)
        except subprocess.TimeoutExpired:
            foreign.kill()
            foreign.wait()
    text = (out / "report.json").read_text()
    recorded = json.loads(text)["preflight"]["host"]["ray_processes"]
    assert any(p.get("session") == "$TMPDIR" + session[len(tempfile.gettempdir()):] for p in recorded), recorded
    assert session not in text and tempfile.gettempdir() + "/" not in text


CRASHING_CHECK = '''
import os, sys
import pytest, ray

@pytest.mark.check("DP-008")
def test_worker_dies(device_ctx):
    @ray.remote(max_retries=0)
    def boom():
        print("RuntimeError: the device fell off the bus", file=sys.stderr, flush=True)
        os._exit(1)
    ray.get(boom.remote(), timeout=60)

@pytest.mark.check("DP-002")
def test_fine(device_ctx):
    from conformance.areas.device.evidence import contract_evidence
    device_ctx.decide(probe=contract_evidence(device_ctx.contract(), "DP-002"))   # DP-002 is judged
'''


def test_failed_check_carries_rays_log_and_progress_matches_report(tmp_path: Path) -> None:
    checks = tmp_path / "checks" / "test_crash.py"
    checks.parent.mkdir()
    checks.write_text(CRASHING_CHECK)
    out = tmp_path / "out"
    code, report, output = run_suite(SIM_MANIFEST, out, str(checks), timeout_s=300)
    assert report is not None, output[-3000:]
    dp8 = next(c for c in report["checks"] if c["id"] == "DP-008")
    assert dp8["outcome"] == "fail", dp8
    assert "RuntimeError: the device fell off the bus" in dp8["reason"] and "logs/DP-008/" in dp8["reason"]
    assert "RuntimeError: the device fell off the bus" in dp8["log_excerpt"]
    assert dp8["log_files"] and all(f.startswith("logs/DP-008/") and (out / f).is_file() for f in dp8["log_files"])
    assert "preflight: ok" in output
    lines = output.splitlines()
    assert any(x.startswith("[1/2] DP-002") and "PASS" in x for x in lines), output[-3000:]
    assert any(x.startswith("[2/2] DP-008") and "FAIL" in x for x in lines), output[-3000:]
    from conformance.report.results import OUTCOMES
    counts = ", ".join(f"{k} {report['summary'][k]}" for k in OUTCOMES if report["summary"].get(k))
    assert f"checks (as in report.json): {counts}" in output
    assert report["host"]["left_behind"]["ray_processes"] == []
    assert "## Failures and Ray's logs" in (out / "report.md").read_text()
