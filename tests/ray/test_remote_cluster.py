"""--ray-address against a real `ray start` cluster, loaded through the supported .pth hook.

This is the path a vendor takes on real hardware: `ray-conformance inject install` on the node,
RAY_CONFORMANCE_ACCELERATORS and RAY_custom_unit_instance_resources in the environment of
`ray start`, then the suite connects with --ray-address.
"""
from __future__ import annotations

import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from conformance.catalog import node_sample
from conformance.catalog.data import load_ladder
from conformance.cluster.injection import ENV_VAR, install_pth, uninstall_pth, unit_instance_resources
from conformance.signing.trust import remote_problems
from suite_runner import CHECKS, SIM_MANIFEST, outcomes, run_suite

RAY = Path(sys.executable).with_name("ray")


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_device_checks_pass_on_a_ray_start_cluster(tmp_path: Path) -> None:
    port = free_port()
    temp_dir = tempfile.mkdtemp(prefix="rc")  # short: Ray's socket paths must fit AF_UNIX limits
    env = {**os.environ, ENV_VAR: "conformance.simulated.manager:SimAccManager",
           "RAY_custom_unit_instance_resources": unit_instance_resources("SIMACC"),
           "SIMACC_NUM_DEVICES": "4", "SIMACC_TYPE": "SIMACC-X1", "RAY_AUTH_MODE": "disabled"}
    pth = install_pth()
    head = None
    try:
        head = subprocess.Popen([str(RAY), "start", "--head", "--block", f"--port={port}", "--num-cpus=2",
                                 "--object-store-memory=200000000", "--include-dashboard=false",
                                 f"--temp-dir={temp_dir}"], env=env, stdout=subprocess.DEVNULL,
                                stderr=subprocess.DEVNULL, start_new_session=True)
        time.sleep(10)
        os.environ["RAY_AUTH_MODE"] = "disabled"
        try:
            code, report, output = run_suite(SIM_MANIFEST, tmp_path / "out", str(CHECKS / "device/test_device_contract.py"),
                                             str(CHECKS / "device/test_device_live.py"), str(CHECKS / "device/test_device_hosts.py"),
                                             f"--conformance-ray-address=127.0.0.1:{port}", timeout_s=300)
        finally:
            os.environ.pop("RAY_AUTH_MODE", None)
    finally:
        if head is not None:
            os.killpg(head.pid, signal.SIGTERM)
            try:
                head.wait(timeout=10)
            except subprocess.TimeoutExpired:
                os.killpg(head.pid, signal.SIGKILL)
                head.wait(timeout=30)
        uninstall_pth()
        shutil.rmtree(temp_dir, ignore_errors=True)
    assert not Path(pth).exists()
    assert report is not None, output[-3000:]
    assert report["cluster"]["mode"] == "remote" and report["cluster"]["nodes"] == 1
    assert remote_problems(report) == []   # the argument and the cluster record agree (trust.remote_problems)
    device = outcomes(report, "device")
    assert device.pop("DP-015") == "not_applicable"  # needs nodes the suite starts itself
    assert set(device.values()) == {"pass"}, device
    # the default run's per-node checks ran on its seed's choice (verify's `nodes` line recomputes it)
    assert report["selection"]["nodes"]["mode"] == "sample" and isinstance(report["selection"]["nodes"]["seed"], int)
    problems, said = node_sample.choice_problems(report, load_ladder().knobs.nodes)
    assert problems == [] and said.startswith("4 per-node check(s) exercised seed"), (problems, said)
