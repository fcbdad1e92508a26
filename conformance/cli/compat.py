"""`ray-conformance ray-compat`: does the plugin still plug into that Ray? (docs/ci.md)

Thin: reads the manifest (no import of the plugin), gets the target Ray's source (a folder, a
wheel, or `pip download` of a version or a wheel URL), compares with conformance/compat, prints.
Exit 0 compatible, 1 incompatible, 2 bad input, 23 that Ray could not be downloaded.
"""
from __future__ import annotations

import argparse
import json
import sys
import tempfile
from pathlib import Path

from conformance.cli import numbers as cli_numbers
from conformance.exit_codes import Exit
from conformance.sanitize import terminal

DOWNLOAD_TIMEOUT_S = 900.0   # one Ray wheel is ~80 MB


def cmd_ray_compat(args: argparse.Namespace) -> int:
    from conformance.catalog.manifest import load_manifest
    from conformance.compat.compare import compare, render_json, render_text
    from conformance.compat.source import CannotInstall, installed_ray, obtain

    manifest = load_manifest(args.manifest)
    baseline = installed_ray()
    with tempfile.TemporaryDirectory(prefix="ray-compat-") as tmp:
        into = Path(args.download_dir) if args.download_dir else Path(tmp)
        into.mkdir(parents=True, exist_ok=True)
        def announce(requirement: str) -> None:
            print(f"ray-compat: pip download {terminal(requirement, limit=200)} (no dependencies) ...", file=sys.stderr)

        try:
            target = obtain(args.ray, into, timeout_s=args.timeout, on_download=announce)
        except CannotInstall as exc:
            if args.format == "json":
                print(json.dumps({"verdict": "cannot_install", "ray": args.ray, "reason": str(exc)}, indent=2))
            print(f"ray-conformance: ray-compat: cannot install Ray {terminal(args.ray, limit=200)}: "
                  f"{terminal(exc)}", file=sys.stderr)
            return int(Exit.CANNOT_INSTALL)
        answer = compare(target, baseline, manifest)
    print(render_json(answer, manifest) if args.format == "json" else render_text(answer, manifest, notes=args.notes))
    return int(Exit.OK if answer.compatible else Exit.BELOW_TIER)


def register(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = subparsers.add_parser(
        "ray-compat", help="without a cluster: does every Ray interface the plugin and the suite use hold in that Ray?")
    p.add_argument("--ray", required=True, metavar="RAY",
                   help="a Ray version pip can download (2.61.0, 2.61.0rc1), a wheel file or URL (nightlies), "
                        "or a folder holding the ray package (a site-packages)")
    p.add_argument("--manifest", required=True,
                   help="vendor manifest (YAML or JSON), or builtin:simulated[-2node] shipped in the package")
    p.add_argument("--format", choices=["text", "json"], default="text")
    p.add_argument("--notes", action="store_true", help="also print the notes (what holds with a caveat)")
    p.add_argument("--download-dir", help="keep the downloaded wheel here (default: a temporary folder, removed)")
    p.add_argument("--timeout", type=cli_numbers.seconds, default=DOWNLOAD_TIMEOUT_S,
                   help=f"bound on pip download, seconds (default {DOWNLOAD_TIMEOUT_S:g})")
    p.set_defaults(func=cmd_ray_compat)
