"""Wall time per area against N namespace hosts: one certification over `--ray-address` (docs/scale.md).

    sudo .venv/bin/python benchmarks/scale_hosts.py 6 [--nodes all] [--area device topology ...]

Starts N namespace hosts (conformance/cluster/hosts, docs/hosts.md: needs root and iproute2),
runs `ray-conformance run --ray-address HEAD:6379 --nodes all` inside the head host with the
namespace fault driver and RAY_CONFORMANCE_TRANSPORT_MAX_BYTES (16MiB by default, given to the
driver and to every host), tears the hosts down and prints what docs/scale.md's table shows: hosts
up, per area the sum of its checks' duration_s and how many passed, the whole run's duration_s,
the tier, the checks whose node_coverage names every alive node, the load average (sampled every
10 s during the run, and at its end) and the failures. One run per call; prints figures, never
asserts. The report folder is kept (--out).
"""
from __future__ import annotations

import argparse
import json
import os
import sys
import threading
import time
from collections import defaultdict
from pathlib import Path
from typing import Any, Mapping

from conformance.cluster.hosts.cluster import HostCluster, bin_path
from conformance.report.coverage import coverage_of
from conformance.simulated.transport import SEGMENTS

ROOT = Path(__file__).resolve().parents[1]
MANIFEST = ROOT / "tests" / "manifests" / "recovery-simxfer.yaml"
NS_DRIVER = "conformance.cluster.hosts.faults:NamespaceFaultDriver"
SIZE_KNOB = "RAY_CONFORMANCE_TRANSPORT_MAX_BYTES"
LOAD_EVERY_S = 10.0


def area_rows(report: Mapping[str, Any]) -> list[tuple[str, float, int, int]]:
    """(area, sum of its checks' duration_s, checks passed, checks) in the report's order."""
    seconds: dict[str, float] = defaultdict(float)
    passed: dict[str, int] = defaultdict(int)
    total: dict[str, int] = defaultdict(int)
    for check in report.get("checks") or []:
        area = str(check.get("area"))
        seconds[area] += float(check.get("duration_s") or 0)
        passed[area] += check.get("outcome") == "pass"
        total[area] += 1
    return [(a, seconds[a], passed[a], total[a]) for a in total]


def every_node_checks(report: Mapping[str, Any]) -> list[str]:
    """Checks whose node_coverage names as many nodes as were alive when they looked."""
    out = []
    for check in report.get("checks") or []:
        found = coverage_of(check.get("metrics"))
        if found is not None and found[1] > 0 and len(found[0]) >= found[1]:
            out.append(str(check.get("id")))
    return out


class LoadSampler(threading.Thread):
    """os.getloadavg()'s 1-minute figure every LOAD_EVERY_S seconds while the run lasts."""

    def __init__(self) -> None:
        super().__init__(daemon=True)
        self.samples: list[float] = []
        self.done = threading.Event()

    def run(self) -> None:
        while not self.done.is_set():
            self.samples.append(os.getloadavg()[0])
            self.done.wait(LOAD_EVERY_S)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="benchmarks/scale_hosts.py")
    parser.add_argument("hosts", type=int, help="N: how many namespace hosts")
    parser.add_argument("--manifest", default=str(MANIFEST))
    parser.add_argument("--nodes", default="all", choices=("all", "sample"))
    parser.add_argument("--max-bytes", default="16MiB", help=f"{SIZE_KNOB} (driver and hosts)")
    parser.add_argument("--area", nargs="+", help="only these areas (a partial run; default: every area)")
    parser.add_argument("--out", help="report folder (default reports/scale-hosts-<N>)")
    parser.add_argument("--timeout", type=float, default=1800, help="seconds the run may take")
    args = parser.parse_args(argv)
    manifest = Path(args.manifest).resolve()
    out = Path(args.out or ROOT / "reports" / f"scale-hosts-{args.hosts}").resolve()
    if (out / "report.json").exists():
        print(f"--out: {out} already holds a report.json; expected an empty or new folder", file=sys.stderr)
        return 2
    started_at = time.strftime("%Y-%m-%d %H:%M:%S UTC", time.gmtime())
    t0 = time.monotonic()
    sampler = LoadSampler()
    with HostCluster(manifest, hosts=args.hosts, segments=SEGMENTS, extra_env={SIZE_KNOB: args.max_bytes}) as hc:
        up_s = time.monotonic() - t0
        print(f"{args.hosts} hosts up in {up_s:.1f} s at {hc.address}", flush=True)
        state = hc.write_state(hc.workdir / "hosts.json")  # type: ignore[operator]  # set on entering
        argv_run = [bin_path("ray-conformance"), "run", "--manifest", str(manifest), "--ray-address", hc.address,
                    "--out", str(out), "--nodes", args.nodes, "--fault-driver", NS_DRIVER,
                    "--fault-driver-options", json.dumps({"state": str(state)}),
                    *(["--area", *args.area] if args.area else [])]
        sampler.start()
        t_run = time.monotonic()
        try:
            proc = hc.run_in(0, argv_run, env=hc.driver_env(**{SIZE_KNOB: args.max_bytes}),
                             timeout_s=args.timeout, cwd=str(ROOT))
        finally:
            sampler.done.set()
        run_wall_s = time.monotonic() - t_run
        end_load = os.getloadavg()
        print(proc.stdout[-1500:])
        if proc.returncode not in (0, 1):
            print(proc.stderr[-2000:], file=sys.stderr)
    total_s = time.monotonic() - t0
    left = hc.leftovers()
    report_path = out / "report.json"
    if not report_path.exists():
        print(f"no report.json in {out} (exit {proc.returncode})", file=sys.stderr)
        return 1
    report = json.loads(report_path.read_text())
    print(f"\nN = {args.hosts}, --nodes {args.nodes}, {SIZE_KNOB}={args.max_bytes}, "
          f"areas: {' '.join(args.area) if args.area else 'all'}; started {started_at}")
    print(f"| hosts up (s) | {up_s:.1f} |")
    for area, seconds, passed, total in area_rows(report):
        print(f"| {area} | {seconds:.1f} s ({passed}/{total} pass) |")
    print(f"| whole run (s, report.json duration_s) | {float(report.get('duration_s') or 0):.1f} "
          f"({total_s:.0f} with the hosts' start and stop; the driver's process {run_wall_s:.0f}) |")
    print(f"| tier | {report.get('tier')} |")
    every = every_node_checks(report)
    print(f"| checks whose evidence names every node | {len(every)} ({', '.join(every)}) |")
    samples = sampler.samples or [end_load[0]]
    print(f"| load average at the end (1/5/15 min) | {end_load[0]:.0f}/{end_load[1]:.0f}/{end_load[2]:.0f} "
          f"({min(samples):.0f}-{max(samples):.0f} during the run) |")
    failed = [c for c in report.get("checks") or [] if c.get("outcome") in ("fail", "error")]
    for check in failed:
        print(f"  {check.get('outcome')}: {check.get('id')} ({check.get('duration_s')} s): "
              f"{str(check.get('reason') or '')[:200]}")
    slow = sorted(report.get("checks") or [], key=lambda c: -float(c.get("duration_s") or 0))[:10]
    print("slowest: " + ", ".join(f"{c.get('id')} {float(c.get('duration_s') or 0):.1f} s" for c in slow))
    print(f"leftovers after teardown: {'none' if not any(left.values()) else left}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
