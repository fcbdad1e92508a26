"""The CPU side of tests/gpu/run_on_nvidia.sh, the one script for a lent NVIDIA machine.

No GPU is lent to most sessions, so what can break without one is tested here: the script parses
(`bash -n`), its manifests validate against schemas/manifest.schema.json and declare what
tests/gpu/README.md says (Ray's NVIDIA manager; NCCL, NIXL and CUDA_IPC on `cuda`), and with
detection stubbed (RAY_CONFORMANCE_GPU_DETECT) it writes one valid manifest per transport
carrying the detected count and type, plus the plan of what it would run. Bad arguments are one
line and exit 2.
"""
from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from conformance.catalog.datafiles import validate
from conformance.catalog.manifest import check_manifest

ROOT = Path(__file__).resolve().parents[2]
GPU = ROOT / "tests" / "gpu"
SCRIPT = GPU / "run_on_nvidia.sh"
NVIDIA_MANAGER = "ray._private.accelerators.nvidia_gpu:NvidiaGPUAcceleratorManager"
TRANSPORTS = {"nccl": "NCCL", "nixl": "NIXL", "cuda-ipc": "CUDA_IPC"}


def run_script(*args: str, out: Path, detect: str | None = "2 H100") -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "OUT": str(out), "PYTHON": sys.executable}
    if detect is not None:
        env["RAY_CONFORMANCE_GPU_DETECT"] = detect
    return subprocess.run(["bash", str(SCRIPT), *args], capture_output=True, text=True, env=env, timeout=120)


def test_the_script_parses() -> None:
    assert subprocess.run(["bash", "-n", str(SCRIPT)], capture_output=True, text=True).returncode == 0
    assert os.access(SCRIPT, os.X_OK)


@pytest.mark.parametrize("name,transport", sorted(TRANSPORTS.items()))
def test_each_committed_manifest_validates_and_declares_cuda(name: str, transport: str) -> None:
    path = GPU / f"nvidia-{name}.yaml"
    doc = yaml.safe_load(path.read_text())
    validate(doc, "manifest", what=str(path))
    manifest = check_manifest(str(path))
    assert doc["accelerator"]["manager"] == NVIDIA_MANAGER
    assert manifest.data["transport"] == {"name": transport, "devices": ["cuda"]}


def test_generate_only_writes_one_valid_manifest_per_transport_with_what_was_detected(tmp_path: Path) -> None:
    done = run_script("--generate-only", out=tmp_path)
    assert done.returncode == 0, done.stderr
    plan = dict(line.split(" ", 1) for line in (tmp_path / "plan.txt").read_text().splitlines())
    assert sorted(plan) == sorted(TRANSPORTS)
    for name, transport in TRANSPORTS.items():
        path = tmp_path / "manifests" / f"{name}.yaml"
        doc = yaml.safe_load(path.read_text())
        validate(doc, "manifest", what=str(path))
        assert doc["accelerator"]["expected"] == {"devices_per_node": 2, "accelerator_type": "H100"}
        assert doc["accelerator"]["quantities"]["valid"] == [0.5, 1, 2]
        assert doc["transport"] == {"name": transport, "devices": ["cuda"]}
        assert "H100" in doc["product"] and "H200" not in doc["product"]
        assert plan[name] == "run" or plan[name].startswith("skip missing ")   # never silently a pass


def test_only_selects_and_a_single_device_gets_no_quantity_of_two(tmp_path: Path) -> None:
    done = run_script("--generate-only", "--only", "nixl", out=tmp_path, detect="1 A100-SXM4-80GB")
    assert done.returncode == 0, done.stderr
    assert [p.name for p in (tmp_path / "manifests").iterdir()] == ["nixl.yaml"]
    doc = yaml.safe_load((tmp_path / "manifests" / "nixl.yaml").read_text())
    assert doc["accelerator"]["expected"] == {"devices_per_node": 1, "accelerator_type": "A100-SXM4-80GB"}
    assert doc["accelerator"]["quantities"]["valid"] == [0.5, 1]


@pytest.mark.parametrize("args,field", [(["--only", "rocm"], "--only"), (["--fast"], "--fast")])
def test_bad_arguments_are_one_line_and_exit_2(tmp_path: Path, args: list[str], field: str) -> None:
    done = run_script(*args, out=tmp_path)
    assert done.returncode == 2
    assert len(done.stderr.strip().splitlines()) == 1 and field in done.stderr
