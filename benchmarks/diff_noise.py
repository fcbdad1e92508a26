"""The CI gate's false-regression rate: N certifications of one unchanged plugin, diffed pairwise.

    python benchmarks/diff_noise.py [--runs 4] [--manifest builtin:simulated-2node] [--keep DIR]
    python benchmarks/diff_noise.py --reports DIR...   # diff runs made earlier, run nothing

Issue 44's measure of `ray-conformance diff`: every ordered pair (OLD, NEW) of N >= 4 runs of the
same plugin on the same machine is a change that did not happen, so each pair's exit code must
be 0. Prints, per pair, its exit code and what it flagged; then the false-regression rate
(pairs that exited 1 / pairs), the figures that moved beyond the tolerance but within the runs'
spread, the references reported as the host's, and each run's wall time. Also diffs the first
half of the runs against the second (`diff OLD... -- NEW...`), the way a CI with repeated runs
uses it. Prints figures, never asserts. A whole 2-node certification takes about 8 minutes on
the 2-core reference machine: N = 4 is about half an hour.
"""
from __future__ import annotations

import argparse
import itertools
import json
import subprocess
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path


def certify(manifest: str, out: Path) -> float:
    """One certification through the CLI a vendor uses; its wall time."""
    t0 = time.monotonic()
    subprocess.run([sys.executable, "-m", "conformance.cli.main", "run", "--manifest", manifest, "--out", str(out)],
                   capture_output=True, text=True, timeout=3600)
    if not (out / "report.json").is_file():
        raise SystemExit(f"{out}: the certification wrote no report.json")
    return time.monotonic() - t0


def diff(old: list[Path], new: list[Path], tolerance: float | None, *extra: str) -> tuple[int, dict]:
    """`ray-conformance diff OLD... -- NEW... --format json`: (exit code, its document); without a
    tolerance, the CLI's default for the runs on each side."""
    given = ("--tolerance", str(tolerance)) if tolerance is not None else ()
    proc = subprocess.run([sys.executable, "-m", "conformance.cli.main", "diff", *map(str, old), "--",
                           *map(str, new), "--format", "json", *given, *extra],
                          capture_output=True, text=True, timeout=600)
    if proc.returncode not in (0, 1):
        raise SystemExit(f"diff exited {proc.returncode}: {proc.stderr.strip()}")
    return proc.returncode, json.loads(proc.stdout)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--runs", type=int, default=4, help="certifications to make (default 4; at least 2)")
    ap.add_argument("--manifest", default="builtin:simulated-2node")
    ap.add_argument("--tolerance", type=float, default=None,
                    help="passed to diff (default: none, diff's own default for the runs on each side)")
    ap.add_argument("--keep", type=Path, help="keep the reports in this folder (default: a temporary one)")
    ap.add_argument("--reports", type=Path, nargs="+", help="diff these report folders instead of certifying")
    ap.add_argument("--allow-different-product", action="store_true",
                    help="passed to diff (reports of tests/teeth.yaml's rows carry their row id in the product)")
    args = ap.parse_args(argv)
    extra = ("--allow-different-product",) if args.allow_different_product else ()

    walls: list[float] = []
    if args.reports:
        folders = list(args.reports)
    else:
        if args.runs < 2:
            ap.error("--runs: at least 2")
        root = args.keep or Path(tempfile.mkdtemp(prefix="diff-noise-"))
        folders = []
        for i in range(args.runs):
            out = root / f"run{i + 1}"
            walls.append(certify(args.manifest, out))
            folders.append(out)
            print(f"run {i + 1}/{args.runs}: {walls[-1]:.0f} s -> {out}", flush=True)

    flagged, moved, noise, untested, unconfirmed = Counter(), Counter(), Counter(), Counter(), Counter()
    pairs = list(itertools.permutations(range(len(folders)), 2))
    failed = 0
    why = ""
    for i, j in pairs:
        rc, doc = diff([folders[i]], [folders[j]], args.tolerance, *extra)
        failed += rc == 1
        why = doc.get("tolerance_why", why)
        regressions = [f for f in doc["findings"] if f["regression"]]
        for f in doc["findings"]:
            key = f"{f['check'] or f['kind']} {f['detail'].split(' ')[0]}"
            if f["regression"]:
                flagged[key] += 1
            elif f["kind"] in ("noise", "untested", "unconfirmed"):
                {"noise": noise, "untested": untested, "unconfirmed": unconfirmed}[f["kind"]][key] += 1
            elif f["kind"] == "host":
                moved["the host differed"] += 1
        shown = "; ".join(f"{f['kind']} {f['check'] or ''} {f['detail'][:100]}" for f in regressions[:3])
        print(f"diff run{i + 1} run{j + 1}: exit {rc}, {len(regressions)} regression(s){': ' + shown if shown else ''}")

    print(f"\nfalse-regression rate: {failed}/{len(pairs)} pairs = {failed / len(pairs):.1%} "
          f"({why}; target 0)")
    for title, counts in (("regressions by figure", flagged), ("beyond the tolerance, within the spread", noise),
                          ("unconfirmed (one run a side: exit 3 with --fail-unconfirmed)", unconfirmed),
                          ("untested (no spread, or the host's paths moved apart)", untested), ("host", moved)):
        if counts:
            print(f"{title}: " + ", ".join(f"{k} x{n}" for k, n in counts.most_common(12)))
    if len(folders) >= 4:
        half = len(folders) // 2
        rc, doc = diff(folders[:half], folders[half:], args.tolerance, *extra)
        print(f"diff of runs 1-{half} -- runs {half + 1}-{len(folders)}: exit {rc}, "
              f"{sum(f['regression'] for f in doc['findings'])} regression(s) ({doc.get('tolerance_why', '')})")
    if walls:
        print("wall s per certification: " + ", ".join(f"{w:.0f}" for w in walls))
    return 0


if __name__ == "__main__":
    sys.exit(main())
