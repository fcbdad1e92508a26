"""Where a certification's time goes: per area wall time, cluster starts, ratios to a bare ray.init().

    python benchmarks/certify.py [--manifest builtin:simulated --manifest builtin:simulated-2node]

Prints figures, never asserts: speed is measured here, not in timed unit tests. The baseline is a
bare `ray.init()` + `ray.shutdown()` in a fresh process, measured in the same run on the same
machine, so the ratios compare like with like across machines. The transport figures' spread is
reported as a robust coefficient of variation, (IQR / 1.349) / median, per size of the sweep.
"""
from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import tempfile
import time
from collections import defaultdict
from pathlib import Path
from typing import Any

# Targets of issue 13 on the 2-core reference machine (printed beside the figures).
TARGETS_S = {"builtin:simulated": 45.0, "builtin:simulated-2node": 100.0}

BARE_INIT = ("import time, ray; t = time.monotonic(); ray.init(num_cpus=1, include_dashboard=False, "
             "log_to_driver=False); ray.shutdown(); print(time.monotonic() - t)")


def bare_ray_init_s(repeats: int = 3) -> float:
    """Median wall time of a bare ray.init()+shutdown in a fresh interpreter."""
    times = []
    for _ in range(repeats):
        out = subprocess.run([sys.executable, "-c", BARE_INIT], capture_output=True, text=True, timeout=300)
        times.append(float(out.stdout.strip().splitlines()[-1]))
    return statistics.median(times)


def certify(manifest: str, out: Path) -> tuple[float, dict[str, Any]]:
    t0 = time.monotonic()
    subprocess.run([sys.executable, "-m", "conformance.cli", "run", "--manifest", manifest, "--out", str(out)],
                   capture_output=True, text=True, timeout=3600)
    wall = time.monotonic() - t0
    return wall, json.loads((out / "report.json").read_text())


def area_seconds(report: dict[str, Any]) -> dict[str, float]:
    per_area: dict[str, float] = defaultdict(float)
    for check in report["checks"]:
        per_area[check["area"]] += float(check.get("duration_s") or 0.0)
    return dict(per_area)


def transport_spread(report: dict[str, Any]) -> list[tuple[int, float, float]]:
    """(bytes, median GB/s, robust CV) of the transport at each size of the sweep."""
    sweep = (((report.get("sections") or {}).get("Transport") or {}).get("data") or {}).get("sweep") or {}
    rows = []
    for device in sweep.values():
        for row in device.get("rows", []):
            stats = row.get("rdt") or {}
            iqr, median = stats.get("iqr_gbps"), stats.get("median_gbps")
            if iqr and median:
                rows.append((int(row["bytes"]), median, (iqr[1] - iqr[0]) / 1.349 / median))
    return rows


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--manifest", action="append", help="manifest(s) to certify (default: both built-ins)")
    args = parser.parse_args(argv)
    manifests = args.manifest or list(TARGETS_S)
    base = bare_ray_init_s()
    print(f"baseline: bare ray.init()+shutdown = {base:.2f} s (median of 3, same run)")
    for manifest in manifests:
        with tempfile.TemporaryDirectory() as tmp:
            wall, report = certify(manifest, Path(tmp) / "out")
        history = report["cluster"]["history"]
        starts = sum(float(h.get("start_s") or 0.0) for h in history)
        target = TARGETS_S.get(manifest)
        verdict = f"target {target:.0f} s: {'met' if wall <= target else 'NOT met'}" if target else "no target"
        print(f"\n{manifest}: tier {report['tier']}, wall {wall:.1f} s = {wall / base:.1f}x bare init ({verdict})")
        print(f"  cluster starts: {len(history)} ({starts:.1f} s = {starts / base:.1f}x bare init): "
              + ", ".join(f"{h['shape']} {h.get('start_s', '-')}s" for h in history))
        for area, seconds in sorted(area_seconds(report).items(), key=lambda kv: -kv[1]):
            print(f"  {area:<12} {seconds:7.1f} s  ({seconds / base:5.1f}x bare init)")
        spread = transport_spread(report)
        if spread:
            worst = max(cv for _, _, cv in spread)
            print(f"  transport robust CV: worst {worst:.1%} over {len(spread)} sizes (target <= 5%)")
            for size, median, cv in spread:
                print(f"    {size:>11} B  {median:8.3f} GB/s  CV {cv:.1%}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
