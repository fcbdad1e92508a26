"""`python -m conformance.cluster.hosts`: the multi-host demo, and the node listing the harness uses.

* `demo [--manifest M] [--hosts N] [--out DIR] [--nodes all|sample]` – start N namespace hosts, certify them with
  `ray-conformance run --ray-address` (and the namespace fault driver) from inside the head
  host, print the tier, tear down.
* `nodes --address A [--wait-alive N --timeout S]` – print ray.nodes() as JSON (run inside a
  host by the harness; needs the cluster's RAY_AUTH_* environment).
"""
from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[3]


def cmd_nodes(args: argparse.Namespace) -> int:
    import ray

    ray.init(address=args.address, log_to_driver=False, logging_level="ERROR")  # type: ignore[arg-type]  # Ray's hints: pyproject.toml
    try:
        deadline = time.monotonic() + args.timeout
        while True:
            nodes = ray.nodes()
            alive = [n for n in nodes if n.get("Alive")]
            if args.wait_alive is None or len(alive) >= args.wait_alive:
                break
            if time.monotonic() > deadline:
                print(f"only {len(alive)} of {args.wait_alive} nodes alive", file=sys.stderr)
                return 1
            time.sleep(0.5)
        keep = ("NodeID", "Alive", "NodeManagerAddress", "Resources", "Labels")
        print(json.dumps([{k: n.get(k) for k in keep} for n in nodes]))
    finally:
        ray.shutdown()
    return 0


def cmd_demo(args: argparse.Namespace) -> int:
    from conformance.cluster.hosts.cluster import HostCluster, bin_path

    out = Path(args.out).resolve()
    t0 = time.monotonic()
    with HostCluster(Path(args.manifest).resolve(), hosts=args.hosts) as hc:
        started = time.monotonic() - t0
        print(f"{args.hosts} hosts up in {started:.0f}s at {hc.address} "
              f"({', '.join(f'{h.role}={h.net.address}' for h in hc.members)})", flush=True)
        state = hc.write_state(hc.workdir / "hosts.json")  # type: ignore[operator]  # set on entering
        proc = hc.run_in(0, [bin_path("ray-conformance"), "run", "--manifest", str(Path(args.manifest).resolve()),
                             "--ray-address", hc.address, "--out", str(out),
                             "--fault-driver", "conformance.cluster.hosts.faults:NamespaceFaultDriver",
                             "--fault-driver-options", json.dumps({"state": str(state)}),
                             *(["--nodes", args.nodes] if args.nodes else [])],
                         timeout_s=1800, cwd=str(ROOT))
        print(proc.stdout[-4000:])
        if proc.returncode not in (0, 1):
            print(proc.stderr[-2000:], file=sys.stderr)
    report = out / "report.json"
    if report.exists():
        print(f"tier: {json.loads(report.read_text())['tier']}; report: {out / 'report.md'}; "
              f"took {time.monotonic() - t0:.0f}s")
    return proc.returncode


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m conformance.cluster.hosts")
    sub = parser.add_subparsers(dest="cmd", required=True)
    p = sub.add_parser("nodes")
    p.add_argument("--address", required=True)
    p.add_argument("--wait-alive", type=int)
    p.add_argument("--timeout", type=float, default=60)
    p.set_defaults(fn=cmd_nodes)
    p = sub.add_parser("demo")
    p.add_argument("--manifest", default=str(ROOT / "conformance" / "simulated" / "manifest.yaml"))
    p.add_argument("--hosts", type=int, default=3)
    p.add_argument("--out", default=str(ROOT / "reports" / "hosts-demo"))
    p.add_argument("--nodes", metavar="all|sample", help="passed to `ray-conformance run --nodes` (docs/scale.md)")
    p.set_defaults(fn=cmd_demo)
    args = parser.parse_args(argv)
    return int(args.fn(args))


if __name__ == "__main__":
    sys.exit(main())
