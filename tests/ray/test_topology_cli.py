"""`ray-conformance topology` and --ray-address: the hardware view and remote probing.

The remote test starts a cluster in another process the way an operator would (manager
injected on every node) but without applying the plugin's labels, which Ray 2.60 does not do
for non-TPU plugins; the suite then connects with --conformance-ray-address, probes each node
and must catch exactly that (TL-003, TL-008) while every other topology check passes.
"""
from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest
import yaml

from suite_runner import BROKEN, CHECKS, outcomes, run_suite, write_manifest

TOPOLOGY_FILES = [str(CHECKS / f"topology/test_topology_{name}.py") for name in ("labels", "description", "placement", "groups")]

ROOT = Path(__file__).resolve().parents[2]
TWO_NODE = ROOT / "conformance" / "simulated" / "manifest-2node.yaml"

SERVE = """
import sys, time
from pathlib import Path
from conformance.cluster.manager import ClusterShape, prepare_driver, start_cluster, stop_cluster
from conformance.catalog.manifest import load_manifest
manifest = load_manifest(sys.argv[1])
prepare_driver(manifest)
handle = start_cluster(manifest, ClusterShape("shared"), None, None)  # manager=None: labels not applied
addr = Path(sys.argv[2])
addr.write_text(handle.address)
try:
    deadline = time.monotonic() + 300
    while not addr.with_suffix(".stop").exists() and time.monotonic() < deadline:
        time.sleep(0.2)
finally:
    stop_cluster(handle)
"""


def cli(*args: str, timeout: float = 180) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "conformance.cli.main", *args], capture_output=True, text=True,
                          timeout=timeout, cwd=str(ROOT))


def test_topology_command_refuses_bad_input(tmp_path: Path) -> None:
    proc = cli("topology", "--manifest", str(tmp_path / "missing.yaml"))
    assert proc.returncode == 2 and proc.stderr.strip().count("\n") == 0, proc.stderr
    assert "manifest" in proc.stderr


@pytest.mark.slow
def test_topology_command_shows_the_view() -> None:
    proc = cli("topology", "--manifest", str(TWO_NODE))
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-2000:]
    assert "2 node(s); 0 difference(s)" in proc.stdout
    assert "simlink 200 GB/s: 0-1, 2-3" in proc.stdout and "ray.io/accelerator-domain=simlink-b" in proc.stdout


@pytest.mark.slow
def test_topology_command_marks_differences(tmp_path: Path) -> None:
    data = yaml.safe_load(TWO_NODE.read_text())
    data["plugin"]["python_path"] = [str(BROKEN)]
    data["accelerator"]["manager"] = "broken_topology:DomainLie"
    proc = cli("topology", "--manifest", str(write_manifest(data, tmp_path)), "--format", "json")
    assert proc.returncode == 1, proc.stderr[-2000:]
    view = json.loads(proc.stdout)
    checks = {d["check"] for n in view["nodes"] for d in n["differences"]}
    assert checks == {"TL-007", "TL-008"}, view


@pytest.mark.slow
def test_remote_cluster_without_plugin_labels(tmp_path: Path) -> None:
    addr = tmp_path / "addr.txt"
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")]))
    server = subprocess.Popen([sys.executable, "-c", SERVE, str(TWO_NODE), str(addr)], cwd=str(tmp_path), env=env,
                              stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    try:
        deadline = time.monotonic() + 120
        while not addr.exists() and server.poll() is None and time.monotonic() < deadline:
            time.sleep(0.2)
        assert addr.exists(), f"the remote cluster did not start: {server.stderr.read()[-2000:] if server.poll() is not None else 'timeout'}"
        _, report, output = run_suite(TWO_NODE, tmp_path / "out", *TOPOLOGY_FILES,
                                      f"--conformance-ray-address={addr.read_text()}")
        assert report is not None, output[-3000:]
        assert report["cluster"]["mode"] == "remote" and report["cluster"]["nodes"] == 2
        topo = outcomes(report, "topology")
        reasons = {c["id"]: c["reason"] for c in report["checks"]}
        assert {k for k, v in topo.items() if v == "fail"} == {"TL-003", "TL-008"}, reasons
        assert "ray start --labels" in reasons["TL-003"]
        assert {k for k, v in topo.items() if v == "not_applicable"} == {"TL-014"}
        assert all(v == "pass" for k, v in topo.items() if k not in {"TL-003", "TL-008", "TL-014"})
        assert len(report["sections"]["Topology"]["data"]["nodes"]) == 2
    finally:
        addr.with_suffix(".stop").touch()
        try:
            server.wait(timeout=60)
        except subprocess.TimeoutExpired:
            server.kill()  # our own child, by handle
            server.wait(timeout=30)
