"""The built wheel and sdist carry the suite's data: installed into a fresh environment with no
checkout on the path, the tool lists its checklist, validates the shipped manifests, certifies
the simulated accelerator's device area and verifies the committed example report.

This is what a vendor does on every node of a real cluster (`pip install`), so the test runs the
installed console script from a folder outside the checkout, with PYTHONPATH cleared.
"""
from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tarfile
import venv
import zipfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
DATA_FILES = ("catalog/tiers/checklist.yaml", "catalog/tiers/tiers.yaml", "catalog/tiers/waivers.yaml",
              "catalog/tiers/labels.yaml", "catalog/tiers/releases.yaml",
              "catalog/schemas/report.schema.json", "catalog/schemas/manifest.schema.json",
              "simulated/manifest.yaml", "simulated/manifest-2node.yaml")


def _run(cmd: list[str], cwd: Path, timeout: int, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    proc = subprocess.run(cmd, cwd=cwd, capture_output=True, text=True, timeout=timeout, env=env)
    assert proc.returncode == 0, f"{cmd}: exit {proc.returncode}\n{proc.stdout[-3000:]}\n{proc.stderr[-3000:]}"
    return proc


def _tracked_copy(dest: Path) -> Path:
    """The checkout's tracked files only (what a clean clone has), so the build sees no local state."""
    files = subprocess.run(["git", "ls-files", "-z"], cwd=ROOT, capture_output=True, check=True).stdout
    for name in filter(None, files.decode().split("\0")):
        src = ROOT / name
        if src.is_file():
            (dest / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(src, dest / name)
    return dest


@pytest.fixture(scope="module")
def dists(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    if shutil.which("git") is None or not (ROOT / ".git").exists():
        pytest.fail("the wheel test builds from the git checkout's tracked files; no git checkout here")
    src = _tracked_copy(tmp_path_factory.mktemp("src"))
    out = tmp_path_factory.mktemp("dist")
    _run([sys.executable, "-m", "build", "--no-isolation", "--sdist", "--wheel", "--outdir", str(out), str(src)],
         cwd=src, timeout=300)
    return {"wheel": next(out.glob("*.whl")), "sdist": next(out.glob("*.tar.gz"))}


def test_wheel_and_sdist_carry_the_data(dists: dict[str, Path]) -> None:
    wheel_names = set(zipfile.ZipFile(dists["wheel"]).namelist())
    with tarfile.open(dists["sdist"]) as tar:
        sdist_names = {n.split("/", 1)[1] for n in tar.getnames() if "/" in n}
    for rel in DATA_FILES:
        assert f"conformance/{rel}" in wheel_names, f"wheel lacks conformance/{rel}"
        # The sdist is the repository's layout: the data's one copy at the top level (tiers/, schemas/).
        in_sdist = rel.removeprefix("catalog/") if rel.startswith("catalog/") else f"conformance/{rel}"
        assert in_sdist in sdist_names, f"sdist lacks {in_sdist}"
    tracked = subprocess.run(["git", "ls-files", "tiers", "schemas"], cwd=ROOT, capture_output=True, text=True,
                             check=True).stdout.split()
    assert tracked and {f"conformance/catalog/{name}" for name in tracked} <= wheel_names, \
        "the wheel must carry every file of tiers/ and schemas/ under conformance/catalog/"
    assert not any(n.startswith(("tiers/", "schemas/")) for n in wheel_names), "data outside the package"
    assert any(n.startswith("conformance/checks/test_") for n in wheel_names), "wheel lacks the checks"


@pytest.fixture(scope="module")
def installed(dists: dict[str, Path], tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A fresh venv with the wheel installed (dependencies from the configured package index)."""
    env_dir = tmp_path_factory.mktemp("venv") / "v"
    venv.create(env_dir, with_pip=True)
    _run([str(env_dir / "bin" / "python"), "-m", "pip", "install", "--quiet", str(dists["wheel"])],
         cwd=env_dir, timeout=900)
    return env_dir


def _clean_env() -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "CONFORMANCE_DATA_DIR")}
    env["RAY_CONFORMANCE_TRANSPORT_MAX_BYTES"] = str(16 << 20)
    return env


def test_installed_wheel_certifies_without_checkout(installed: Path, tmp_path: Path) -> None:
    tool = str(installed / "bin" / "ray-conformance")
    env = _clean_env()
    where = _run([str(installed / "bin" / "python"), "-c", "import conformance; print(conformance.__file__)"],
                 cwd=tmp_path, timeout=60, env=env).stdout
    assert str(installed) in where and str(ROOT) not in where, where

    listing = json.loads(_run([tool, "checklist", "--format", "json"], cwd=tmp_path, timeout=60, env=env).stdout)
    assert {c["id"] for c in listing} >= {"DP-001", "TL-001", "TR-001", "FR-001", "PF-001"}
    assert "manifest OK" in _run([tool, "validate-manifest", "builtin:simulated-2node"], cwd=tmp_path,
                                 timeout=120, env=env).stdout

    out = tmp_path / "out"
    run = subprocess.run([tool, "run", "--manifest", "builtin:simulated", "--out", str(out), "--",
                          "-k", "test_device_"], cwd=tmp_path, capture_output=True, text=True, timeout=600, env=env)
    assert run.returncode in (0, 1), run.stdout[-3000:] + run.stderr[-3000:]
    report = json.loads((out / "report.json").read_text())
    device = [c for c in report["checks"] if c["id"].startswith("DP-")]
    assert device and all(c["outcome"] in ("pass", "not_applicable") for c in device), \
        [(c["id"], c["outcome"], c.get("reason")) for c in device if c["outcome"] not in ("pass", "not_applicable")]
    assert report["tier"] == "experimental"

    example = ROOT / "reports" / "example"
    verify = subprocess.run([tool, "verify", str(example), "--key", str(example / "example.pub")], cwd=tmp_path,
                            capture_output=True, text=True, timeout=120, env=env)
    assert verify.returncode == 0, verify.stdout[-3000:] + verify.stderr[-3000:]
    assert "VERIFIED" in verify.stdout
