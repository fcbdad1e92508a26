"""Helpers for the project's tests: write a manifest, run the suite in a subprocess, read the report."""
from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path
from typing import Any

import yaml

from conformance.run.command import suite_command

ROOT = Path(__file__).resolve().parents[2]
BROKEN = ROOT / "tests" / "broken_plugins"
CHECKS = ROOT / "conformance" / "checks"
SIM_MANIFEST = ROOT / "conformance" / "simulated" / "manifest.yaml"


def sim_manifest(**overrides: Any) -> dict[str, Any]:
    """The simulated accelerator's manifest as a dict, with top-level/accelerator overrides."""
    data = yaml.safe_load(SIM_MANIFEST.read_text())
    for key, value in overrides.items():
        if key in data["accelerator"] or key in ("manager_cls",):
            data["accelerator"][key] = value
        else:
            data[key] = value
    return data


def broken_manifest(cls: str, *, env: dict[str, str] | None = None, **overrides: Any) -> dict[str, Any]:
    data = sim_manifest(**overrides)
    data["accelerator"]["manager"] = f"broken_device:{cls}"
    data["plugin"] = {"python_path": [str(BROKEN)]}
    data["product"] = f"SimAcc broken {cls}"
    if env:
        data["accelerator"]["env"] = {**data["accelerator"].get("env", {}), **env}
    return data


def write_manifest(data: dict[str, Any], folder: Path, name: str = "manifest.yaml") -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / name
    path.write_text(yaml.safe_dump(data, sort_keys=False))
    return path


def run_suite(manifest: Path, out: Path, *pytest_args: str, timeout_s: float = 600) -> tuple[int, dict[str, Any] | None, str]:
    """Run the conformance suite as plain pytest in a fresh process; return (exit, report, output)."""
    env = dict(os.environ)
    env.pop("PYTEST_ADDOPTS", None)
    cmd = suite_command(manifest, out, pytest_args)
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout_s, env=env, cwd=str(out.parent))
    report_path = out / "report.json"
    report = json.loads(report_path.read_text()) if report_path.exists() else None
    return proc.returncode, report, proc.stdout + proc.stderr


def outcomes(report: dict[str, Any], area: str | None = None) -> dict[str, str]:
    return {c["id"]: c["outcome"] for c in report["checks"] if area is None or c["area"] == area}
