"""What the workload area costs and what it measures: its checks in one run, at a few sizes.

    python benchmarks/workload.py [--manifest builtin:simulated-2node] [--size 4MiB --size 32MiB]
                                  [--check WL-001 --check WL-003 ...]

For each size (the run's RAY_CONFORMANCE_TRANSPORT_MAX_BYTES, which caps the checks' payloads) it
runs `ray-conformance run --check ...` once in a fresh process (one cluster start for all of them)
and prints each check's outcome and wall time (what it adds to a certification or to make test)
and, per device type, the figures `diff` gates (median seconds per round, step or wave, bytes per
second, the speedup over Ray's object store measured in the same run). Prints figures, never
asserts: speed is measured here, not in timed tests.
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

CHECKS = ("WL-001", "WL-002", "WL-003", "WL-004")
# the figures each check records per device type (docs/ci.md: the ones diff gates, and the store baseline)
FIGURES = ("median_round_s", "median_store_round_seconds", "object_store_speedup", "sync_bytes_per_s",
           "median_broadcast_round_s", "median_step_s", "median_allreduce_s", "median_wave_s",
           "pipeline_bytes_per_s")


def run_once(manifest: str, size: str, checks: list[str], out: Path) -> tuple[float, dict[str, dict[str, Any]]]:
    env = dict(os.environ, RAY_CONFORMANCE_TRANSPORT_MAX_BYTES=size)
    t0 = time.monotonic()
    subprocess.run([sys.executable, "-m", "conformance.cli.main", "run", "--manifest", manifest, "--check", *checks,
                    "--out", str(out)], capture_output=True, text=True, timeout=3600, env=env)
    wall = time.monotonic() - t0
    path = out / "report.json"
    report = json.loads(path.read_text()) if path.exists() else {"checks": []}
    return wall, {c["id"]: c for c in report["checks"] if c["id"] in checks}


def figure_text(value: Any) -> str:
    if not isinstance(value, (int, float)):
        return "?"
    return f"{value / 1e6:.1f} MB/s" if value > 1e4 else f"{value:.4g}"


def per_device(check: dict[str, Any]) -> dict[str, dict[str, Any]]:
    """The check's figures by device type (one type: the metrics themselves)."""
    metrics = check.get("metrics") or {}
    devices = metrics.get("devices")
    if isinstance(devices, dict) and all(isinstance(v, dict) for v in devices.values()):
        return devices
    return {"-": metrics}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--manifest", default="builtin:simulated-2node")
    parser.add_argument("--size", action="append", help="payload caps (default: 4MiB and 32MiB)")
    parser.add_argument("--check", action="append", help=f"checks (default: {' '.join(CHECKS)})")
    args = parser.parse_args(argv)
    checks = args.check or list(CHECKS)
    for size in args.size or ["4MiB", "32MiB"]:
        with tempfile.TemporaryDirectory() as tmp:
            wall, found = run_once(args.manifest, size, checks, Path(tmp))
        print(f"size {size}: one run of {len(checks)} check(s), {wall:.1f} s of wall (cluster start included)")
        for cid in checks:
            check = found.get(cid)
            if check is None:
                print(f"  {cid}: no report entry")
                continue
            print(f"  {cid} {check.get('outcome', '?'):>8} {check.get('duration_s') or 0:7.1f} s"
                  + ("" if check.get("outcome") == "pass" else f"  ({str(check.get('reason'))[:120]})"))
            for device, figs in sorted(per_device(check).items()):
                shown = [f"{k} {figure_text(figs[k])}" for k in FIGURES if k in figs]
                if shown:
                    print(f"      {device}: " + ", ".join(shown))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
