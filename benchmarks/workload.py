"""What the workload area costs and what it measures: WL-001 (RL weight sync) alone, at a few sizes.

    python benchmarks/workload.py [--manifest builtin:simulated-2node] [--size 4MiB --size 32MiB]

For each size (the run's RAY_CONFORMANCE_TRANSPORT_MAX_BYTES, which caps WL-001's state_bytes)
it runs `ray-conformance run --check WL-001` in a fresh process and prints the check's wall time
(what it adds to a certification or to make test), the median seconds per round through the
transport and through Ray's object store, the speedup over the store and the bytes per second.
Prints figures, never asserts: speed is measured here, not in timed tests.
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


def run_once(manifest: str, size: str, out: Path) -> tuple[float, dict[str, Any]]:
    env = dict(os.environ, RAY_CONFORMANCE_TRANSPORT_MAX_BYTES=size)
    t0 = time.monotonic()
    subprocess.run([sys.executable, "-m", "conformance.cli.main", "run", "--manifest", manifest, "--check", "WL-001",
                    "--out", str(out)], capture_output=True, text=True, timeout=3600, env=env)
    wall = time.monotonic() - t0
    report = json.loads((out / "report.json").read_text())
    return wall, next((c for c in report["checks"] if c["id"] == "WL-001"), {})


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--manifest", default="builtin:simulated-2node")
    parser.add_argument("--size", action="append", help="state sizes (default: 4MiB and 32MiB)")
    args = parser.parse_args(argv)
    print(f"{'size':>8} {'outcome':>8} {'run s':>7} {'check s':>8} {'round s':>8} {'store s':>8} {'speedup':>8} {'MB/s':>8}")
    for size in args.size or ["4MiB", "32MiB"]:
        with tempfile.TemporaryDirectory() as tmp:
            wall, check = run_once(args.manifest, size, Path(tmp))
        for device, fig in sorted(((check.get("metrics") or {}).get("devices") or {}).items()):
            rate = fig.get("sync_bytes_per_s")
            print(f"{size:>8} {check.get('outcome', '?'):>8} {wall:7.1f} {check.get('duration_s', 0) or 0:8.1f} "
                  f"{fig.get('median_round_s', float('nan')):8.3f} {fig.get('median_store_round_seconds', float('nan')):8.3f} "
                  f"{fig.get('object_store_speedup', float('nan')):8.2f} {(rate or 0) / 1e6:8.1f}  ({device}, "
                  f"{fig.get('tensors')} tensors)")
        if not (check.get("metrics") or {}).get("devices"):
            print(f"{size:>8} {check.get('outcome', 'no report'):>8} {wall:7.1f}  {str(check.get('reason'))[:120]}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
