"""Where a certification's time goes: per area wall time, cluster starts, ratios to a bare ray.init().

    python benchmarks/certify.py [--manifest builtin:simulated --manifest builtin:simulated-2node]

Prints figures, never asserts: speed is measured here, not in timed unit tests. The baseline is a
bare `ray.init()` + `ray.shutdown()` in a fresh process, measured in the same run on the same
machine, so the ratios compare like with like across machines. The transport figures' spread is
reported as a robust coefficient of variation, (IQR / 1.349) / median of the per-trial
bandwidths, per size of the sweep, with the trials (x transfers per trial) PF-001's adaptive
method used and whether the CV target (PF-001's max_cv, 5 %) was met; the slowest checks and
where the sweep's time went are listed too. Beside each wall time: the machine's busy
CPU-seconds during the certification, the floor they set on the wall time of this machine (busy /
cores: no parallel schedule beats it) and which processes used them (benchmarks/cpu_use.py).
"""
from __future__ import annotations

import argparse
import json
import re
import signal
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections import Counter, defaultdict
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from cpu_use import TORCH_WORKERS, WORKER_KINDS, CpuUse, births_by_mark, describe, uptime_s

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


# a progress line, printed when a check ends: "[ 3/67] DP-003 Visible ids ..." (conformance.run.progress)
PROGRESS = re.compile(r"^\[\s*\d+/\d+\] (\S+) ")

RUN_TIMEOUT_S = 3600   # a certification that runs longer is stuck: the benchmark ends it and says so
REPORT_GRACE_S = 120   # after SIGTERM: the run writes its report (a hang is a failure with a reason)


class StuckRun(RuntimeError):
    """The certification did not end within RUN_TIMEOUT_S."""


@dataclass
class Certification:
    wall_s: float
    report: dict[str, Any]
    cpu: CpuUse
    ends: list[tuple[float, str]]    # (seconds since boot, check id) as each check's line was printed

    def births_by_check(self) -> dict[str, Counter[str]]:
        """Worker processes started, by kind, per check: each counts with the check running when
        it was born (the progress line each check prints at its end is the boundary)."""
        return births_by_mark(self.cpu.births, self.ends)


def _progress(stream: Any, ends: list[tuple[float, str]]) -> None:
    """Note when each check's progress line is printed (a thread: reading waits for output)."""
    for line in stream:
        found = PROGRESS.match(line)
        if found:
            ends.append((uptime_s(), found.group(1)))


def run_command(manifest: str, out: Path) -> list[str]:
    return [sys.executable, "-u", "-m", "conformance.cli.main", "run", "--manifest", manifest, "--out", str(out)]


def certify(manifest: str, out: Path, timeout_s: float = RUN_TIMEOUT_S, command: list[str] | None = None) -> Certification:
    """One certification (`command`: the run's, run_command), its progress lines timed as they
    come. A run past timeout_s is ended (SIGTERM, then SIGKILL after REPORT_GRACE_S: the process
    we started, by its pid) and raises StuckRun, rather than leaving the benchmark waiting on
    output that never comes."""
    t0 = time.monotonic()
    ends: list[tuple[float, str]] = []
    with CpuUse() as cpu:
        proc = subprocess.Popen(command or run_command(manifest, out), stdout=subprocess.PIPE,
                                stderr=subprocess.STDOUT, text=True)
        reader = threading.Thread(target=_progress, args=(proc.stdout, ends), daemon=True)
        reader.start()
        try:
            proc.wait(timeout=timeout_s)
        except subprocess.TimeoutExpired:
            proc.send_signal(signal.SIGTERM)
            try:
                proc.wait(timeout=REPORT_GRACE_S)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
            raise StuckRun(f"{manifest}: the certification did not end within {timeout_s:.0f} s "
                           f"(last check ended: {ends[-1][1] if ends else 'none'}); its folder: {out}") from None
        reader.join(timeout=10)
    wall = time.monotonic() - t0
    return Certification(wall, json.loads((out / "report.json").read_text()), cpu, ends)


def worker_lines(run: Certification, by_check: dict[str, Counter[str]], top: int = 12) -> list[str]:
    """Worker processes started (with torch / without), in all and per area, and the checks that
    started the most: a worker is counted with the check running when it was born."""
    area_of = {c["id"]: c["area"] for c in run.report["checks"]}
    total: Counter[str] = Counter()
    per_area: dict[str, Counter[str]] = defaultdict(Counter)
    for check, kinds in by_check.items():
        total.update(kinds)
        per_area[area_of.get(check, check)].update(kinds)

    def both(kinds: Counter[str]) -> str:
        return f"{sum(kinds[k] for k in WORKER_KINDS)} ({kinds[TORCH_WORKERS]} with torch)"

    lines = [f"  worker processes started: {both(total)}; per area: "
             + ", ".join(f"{area} {both(kinds)}" for area, kinds in
                         sorted(per_area.items(), key=lambda kv: -sum(kv[1].values())))]
    heavy = sorted(by_check.items(), key=lambda kv: -sum(kv[1].values()))[:top]
    lines.append("  the checks starting the most: " + ", ".join(f"{c} {both(k)}" for c, k in heavy))
    lent, born = warm_pool_tally(run.report)
    if lent or born:
        lines.append(f"  the warm pool (conformance.rdt.warm): {lent} actor(s) lent warm, {born} born for a borrower")
    return lines


def warm_pool_tally(report: dict[str, Any]) -> tuple[int, int]:
    """(actors lent warm, actors born) over every check's metrics.warm_pool, per device type too."""
    lent = born = 0

    def add(metrics: Any) -> None:
        nonlocal lent, born
        if isinstance(metrics, dict):
            tally = metrics.get("warm_pool")
            if isinstance(tally, dict):
                lent += int(tally.get("lent", 0))
                born += int(tally.get("born", 0))
            for d in metrics.get("devices", []) if isinstance(metrics.get("devices"), list) else []:
                add(metrics.get(d))
    for c in report["checks"]:
        add(c.get("metrics"))
    return lent, born


def area_seconds(report: dict[str, Any]) -> dict[str, float]:
    per_area: dict[str, float] = defaultdict(float)
    for check in report["checks"]:
        per_area[check["area"]] += float(check.get("duration_s") or 0.0)
    return dict(per_area)


def transport_spread(report: dict[str, Any]) -> list[dict[str, Any]]:
    """Per size of the sweep: bytes, median GB/s, the median's CV, the trials' robust CV, trials,
    batch, whether the CV target was met (None in reports from before adaptive trials, whose CV
    is the trials' robust CV derived from the IQR) and the seconds the size took."""
    sweep = (((report.get("sections") or {}).get("Transport") or {}).get("data") or {}).get("sweep") or {}
    rows = []
    for device in sweep.values():
        for row in device.get("rows", []):
            stats = row.get("rdt") or {}
            iqr, median = stats.get("iqr_gbps"), stats.get("median_gbps")
            if not (iqr and median):
                continue
            cv = stats.get("cv")
            rows.append({"bytes": int(row["bytes"]), "median_gbps": median,
                         "cv": cv if cv is not None else (iqr[1] - iqr[0]) / 1.349 / median,
                         "trial_cv": stats.get("trial_cv"), "trials": stats.get("trials"), "batch": stats.get("batch", 1), "met": stats.get("cv_met"),
                         "seconds": sum((row.get("seconds") or {}).values())})
    return rows


def slowest_checks(report: dict[str, Any], areas: tuple[str, ...] = ("performance", "transport"),
                   top: int = 6) -> list[tuple[str, float]]:
    """(check id, seconds) of the slowest checks of the given areas."""
    found = [(c["id"], float(c.get("duration_s") or 0.0)) for c in report["checks"] if c["area"] in areas]
    return sorted(found, key=lambda kv: -kv[1])[:top]


def print_spread(report: dict[str, Any]) -> None:
    spread = transport_spread(report)
    if not spread:
        return
    worst = max(r["cv"] for r in spread)
    met = sum(1 for r in spread if r["met"] or (r["met"] is None and r["cv"] <= 0.05))
    print(f"  transport CV of the median: worst {worst:.1%}; <= 5 % at {met} of {len(spread)} sizes "
          "(trial CV: the trials' own spread)")
    print(f"    {'size':>11}  {'GB/s':>8}  {'CV':>6}  {'trial CV':>8}  {'trials':>9}  target  seconds")
    for r in spread:
        verdict = {True: "met", False: "NOT met", None: "—"}[r["met"]]
        trials = f"{r['trials']} x {r['batch']}" if r["trials"] is not None else "—"
        trial_cv = "—" if r["trial_cv"] is None else f"{r['trial_cv']:.1%}"
        print(f"    {r['bytes']:>9} B  {r['median_gbps']:8.3g}  {r['cv']:6.1%}  {trial_cv:>8}  {trials:>9}  {verdict:<7} "
              f"{r['seconds']:6.1f}")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--manifest", action="append", help="manifest(s) to certify (default: both built-ins)")
    parser.add_argument("--births", type=Path, help="write each check's worker processes started as JSON here "
                        "(one file per manifest: <births>.<n>.json)")
    parser.add_argument("--keep", type=Path, help="keep each certification's report folder as <keep>/<n> (a "
                        "manifest named N times is certified N times: benchmarks/diff_noise.py --reports diffs them)")
    args = parser.parse_args(argv)
    manifests = args.manifest or list(TARGETS_S)
    base = bare_ray_init_s()
    print(f"baseline: bare ray.init()+shutdown = {base:.2f} s (median of 3, same run)")
    for n, manifest in enumerate(manifests):
        with tempfile.TemporaryDirectory() as tmp:
            out = args.keep / str(n) if args.keep else Path(tmp) / "out"
            if out.exists():
                print(f"certify.py: --keep: {out} exists; it is not overwritten", file=sys.stderr)
                return 2
            out.parent.mkdir(parents=True, exist_ok=True)
            try:
                run = certify(manifest, out)
            except StuckRun as exc:
                print(f"certify.py: {exc}", file=sys.stderr)
                return 1
        wall, report, cpu = run.wall_s, run.report, run.cpu
        history = report["cluster"]["history"]
        starts = sum(float(h.get("start_s") or 0.0) for h in history)
        target = TARGETS_S.get(manifest)
        verdict = f"target {target:.0f} s: {'met' if wall <= target else 'NOT met'}" if target else "no target"
        print(f"\n{manifest}: tier {report['tier']}, wall {wall:.1f} s = {wall / base:.1f}x bare init ({verdict})")
        print(f"  cluster starts: {len(history)} ({starts:.1f} s = {starts / base:.1f}x bare init): "
              + ", ".join(f"{h['shape']} {h.get('start_s', '-')}s" for h in history))
        by_check = run.births_by_check()
        for line in describe(cpu, wall, target) + worker_lines(run, by_check):
            print(line)
        if args.births:
            Path(f"{args.births}.{n}.json").write_text(
                json.dumps({c: dict(k) for c, k in by_check.items()}, indent=1, sort_keys=True))
        for area, seconds in sorted(area_seconds(report).items(), key=lambda kv: -kv[1]):
            print(f"  {area:<12} {seconds:7.1f} s  ({seconds / base:5.1f}x bare init)")
        slow = slowest_checks(report)
        if slow:
            print("  slowest transport/performance checks: " + ", ".join(f"{cid} {sec:.1f} s" for cid, sec in slow))
        print_spread(report)
    return 0


if __name__ == "__main__":
    sys.exit(main())
