"""`ray-conformance`: run the suite, inspect the checklist and tiers, validate manifests.

Exit codes (conformance/exit_codes.py): 0 success; 1 the run completed but the tier is below
--require-tier (or, for verify/diff, a finding); 2 usage or input errors (one line, never a
traceback); 20 a check hung uninterruptibly (report written); 21 interrupted (report written);
22 the pytest run crashed (internal error); 23 `ray-compat` could not download the target Ray.
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Callable, NoReturn

from conformance import __version__
from conformance.cli import numbers as cli_numbers
from conformance.errors import UserError
from conformance.exit_codes import Exit, from_pytest

if TYPE_CHECKING:
    from conformance.catalog.data import SuiteData
    from conformance.catalog.manifest import Manifest
    from conformance.catalog.manifest_view import Collective

_ENDED = {Exit.HUNG: "a check hung and could not be interrupted; the run ended early",
          Exit.INTERRUPTED: "the run was interrupted",
          Exit.NO_REPORT: "the pytest run ended with an internal error"}

# Modules that add subcommands: each exposes register(subparsers). Optional so that a missing
# area does not break the core commands.
EXTENSION_MODULES = ("conformance.cli.signing", "conformance.cli.topology", "conformance.cli.transport",
                     "conformance.cli.firsthour", "conformance.cli.compat")


class _Parser(argparse.ArgumentParser):
    """argparse that reports usage errors as one line with exit 2 (its default is the same code)."""

    def error(self, message: str) -> NoReturn:
        self.exit(2, f"ray-conformance: error: {message}\n")


def cmd_checklist(args: argparse.Namespace) -> int:
    from conformance.catalog.data import load_suite_data
    from conformance.cli.checklist_view import render

    print(render(load_suite_data(), args.format, args.area, args.level))
    return 0


def cmd_tiers(args: argparse.Namespace) -> int:
    from conformance.catalog.data import load_suite_data
    from conformance.docgen.pages import tiers_markdown

    data = load_suite_data()
    if args.format == "json":
        print(json.dumps(list(data.ladder.tiers), indent=2))
    else:
        print(tiers_markdown(data))
    return 0


def collective_summary(block: Collective | None) -> str:
    """'SIMCOLL (conformance.simulated.collective:SimCollGroup, RDT over it)' or 'none'."""
    if block is None:
        return "none"
    parts = [block.group_class or "Ray's built-in"]
    if block.rdt_transport:
        parts.append("RDT over it")
    return f"{block.backend} ({', '.join(parts)})"


def cmd_validate_manifest(args: argparse.Namespace) -> int:
    from conformance.catalog.manifest import check_manifest, expected_contradictions, resolve_manager
    from conformance.run.preflight import refuse_node_start_hang
    from conformance.sanitize import terminal

    m = check_manifest(args.manifest)        # every call into the plugin bounded (conformance.catalog.vendor_calls)
    manager = resolve_manager(m)
    refuse_node_start_hang(manager, m)
    if m.torch_device:   # importable here; it is called in every process the run starts
        from conformance.catalog.manifest import import_object
        import_object(m.torch_device, field="accelerator.torch_device", python_path=m.python_path)
    contradictions = expected_contradictions(m, manager)
    if contradictions:
        raise UserError("manifest: " + "; ".join(contradictions))
    v = m.view
    provider = (v.topology.provider if v.topology else None) or "none"
    print(terminal(f"manifest OK: {v.vendor} / {v.product} (resource {m.resource_name}, "
                   f"{m.devices_per_node} devices/node, topology provider {provider}, "
                   f"transport {v.transport.name if v.transport else 'none'}, "
                   f"collective {collective_summary(v.collective)})"))
    from conformance.catalog.data import load_suite_data
    from conformance.catalog.manifest_gates import missing_lines

    data = load_suite_data()
    closed = missing_lines(m.data, data.checklist)
    for line in closed:
        print(terminal(f"  {line}", limit=600))
    if closed:
        from conformance.catalog.manifest_gates import FIELDS_DOC
        print(f"  (a not_applicable check never counts as passed; {FIELDS_DOC})")
    for line in reach_lines_of(m, data):
        print(terminal(f"  {line}", limit=1000))
    return 0


def reach_lines_of(m: Manifest, data: SuiteData) -> list[str]:
    """What this manifest's run can reach on a cluster the suite starts (conformance.catalog.ladder
    reach_lines): the manifest's nodes and devices, the checks its missing fields close."""
    from conformance.catalog.ladder import planned_context, reach_lines
    from conformance.catalog.manifest_gates import load_gates, missing

    ctx = planned_context(m.view.transport is not None, m.view.cluster.nodes, m.devices_per_node)
    closed = {cid: f"the manifest leaves out {(' and ' if g.when == 'all_missing' else ' / ').join(g.fields)}"
              for g in missing(m.data, load_gates(data.checklist)) for cid in g.checks}
    lines = reach_lines(data.checklist, data.ladder, ctx, closed)
    lines[0] = lines[0].replace("here", f"on a cluster the suite starts ({ctx.nodes} node(s), {m.devices_per_node} "
                                        "device(s) per node as declared)", 1)
    return lines


def _run_forwarding_signals(cmd: list[str]) -> int:
    """Run the pytest process; SIGINT/SIGTERM sent to this CLI are passed on to it, so that a
    stopped certification still writes its report (marked interrupted) instead of orphaning it."""
    import signal

    # Its own session: a terminal's Ctrl-C reaches only this CLI, which passes it on once (a
    # second copy arriving mid-way through the report writing would cut the report short).
    proc = subprocess.Popen(cmd, start_new_session=True)

    def forward(signum: int, frame: object) -> None:
        if proc.poll() is None:
            proc.send_signal(signum)

    previous = {sig: signal.signal(sig, forward) for sig in (signal.SIGINT, signal.SIGTERM)}
    try:
        while True:
            try:
                return proc.wait()
            except KeyboardInterrupt:  # a handler raised elsewhere: keep waiting for the report
                continue
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)


def cmd_run(args: argparse.Namespace) -> int:
    from conformance.catalog import datafiles
    from conformance.catalog.data import load_suite_data
    from conformance.catalog.manifest import check_manifest

    manifest = check_manifest(args.manifest)
    data = load_suite_data()
    if args.require_tier and args.require_tier not in data.ladder.names():
        raise UserError(f"--require-tier: unknown tier {args.require_tier!r}; expected one of "
                        f"{', '.join(data.ladder.names())}")
    key = None
    passphrase = None
    if args.sign_key:
        from conformance.signing.keys import passphrase_from_env
        key = Path(args.sign_key)
        if not key.is_file():
            raise UserError(f"--sign-key: file not found: {key}")
        passphrase = passphrase_from_env(args.passphrase_env)
    out_dir = Path(args.out) if args.out else Path("reports") / manifest.product_slug
    chosen = selected_checks(args, data, out_dir / "report.json")
    shard = None
    if args.shard is not None:
        from conformance.catalog.shards import parse_shard
        try:
            shard = parse_shard(args.shard, data.ladder.knobs.shards.max_count)   # the release's (tiers.yaml)
        except ValueError as exc:
            raise UserError(str(exc)) from None
    nodes = None
    if args.nodes is not None:
        from conformance.run.nodes import parse_mode
        try:
            nodes = parse_mode(args.nodes)
        except ValueError as exc:
            raise UserError(str(exc)) from None
    node_seed = None
    if args.node_seed is not None:
        from conformance.catalog.node_sample import parse_seed
        try:
            node_seed = parse_seed(args.node_seed)
        except ValueError as exc:
            raise UserError(str(exc)) from None
    elif shard is not None:
        from conformance.catalog.node_sample import shard_seed
        node_seed = shard_seed(manifest.sha256)   # every shard of the run draws the same sample (merge holds it)
    if chosen == []:
        print("ray-conformance: nothing to re-run: the previous report has no failed or errored check")
        return int(Exit.OK)
    extra = list(args.pytest_args)
    if extra and extra[0] == "--":
        extra = extra[1:]
    from conformance.run.command import suite_command
    cmd = suite_command(manifest.path, out_dir.resolve(), extra, verbose=args.verbose,
                        options={"ray-address": args.ray_address, "timeout": args.timeout,
                                 "select": ",".join(chosen) if chosen is not None else None,
                                 "shard": shard.spec if shard is not None else None,
                                 "nodes": nodes,
                                 "node-seed": str(node_seed) if node_seed is not None else None,
                                 "fault-driver": args.fault_driver,
                                 "fault-driver-options": args.fault_driver_options})
    from conformance.sanitize import terminal
    print(terminal(f"ray-conformance: certifying {manifest.view.vendor} / {manifest.view.product} → {out_dir}"),
          flush=True)
    if chosen is not None:
        print(f"ray-conformance: only {len(chosen)} check(s): {', '.join(chosen[:12])}"
              f"{' …' if len(chosen) > 12 else ''} (a partial run: not a certification run)", flush=True)
    if shard is not None:
        print(f"ray-conformance: shard {shard.label}: its slice of the checklist and the mandatory core "
              "(sign it, then `ray-conformance merge` the shards)", flush=True)
    report_path = out_dir / "report.json"
    before = file_signature(report_path)
    returncode = _run_forwarding_signals(cmd)
    ended = from_pytest(returncode)
    if ended is Exit.USAGE:
        print("ray-conformance: error: the suite refused to run (see the message above)", file=sys.stderr)
        return int(Exit.USAGE)
    if not report_path.exists() or file_signature(report_path) == before:
        print(f"ray-conformance: error: the run wrote no report (pytest exit {returncode})", file=sys.stderr)
        return int(Exit.NO_REPORT)
    report = datafiles.read_yaml_or_json(report_path, what="report")
    if ended is not None:
        print(f"ray-conformance: {_ENDED[ended]}; the report in {out_dir} says which checks did not run",
              file=sys.stderr)
        return int(ended)
    if key is not None:
        from conformance.cli.signing import sign_report_dir
        envelope = sign_report_dir(out_dir, key, passphrase)
        print(f"ray-conformance: signed → {envelope}")
    tier = report.get("tier")
    preflight = report.get("preflight") or {}
    from conformance.report.results import OUTCOMES
    summary = report.get("summary", {})
    print("ray-conformance: checks: " + ", ".join(f"{k} {summary[k]}" for k in OUTCOMES if summary.get(k)))
    print(f"ray-conformance: tier achieved: {tier or 'none'}; reports in {out_dir}")
    if preflight and not preflight.get("ok", True):
        from conformance.sanitize import terminal
        fatal = "; ".join(f"{f['where']}: {f['message']}" for f in preflight["findings"] if f["level"] == "error")
        print(terminal(f"ray-conformance: the preflight failed, so no check ran: {fatal}", limit=1500))
        return int(Exit.BELOW_TIER)
    if report.get("partial"):
        print(f"ray-conformance: partial run ({len(report['selection']['not_run'])} check(s) not run): "
              "not a certification run; its tier cannot be claimed")
    if args.require_tier:
        from conformance.catalog.ladder import tier_rank
        if tier_rank(data.ladder, tier) < tier_rank(data.ladder, args.require_tier):
            print(f"ray-conformance: tier {tier or 'none'} is below the required {args.require_tier}")
            return int(Exit.BELOW_TIER)
        if report.get("partial"):
            return int(Exit.BELOW_TIER)
    return int(Exit.OK)


def cmd_merge(args: argparse.Namespace) -> int:
    """`merge SHARD_DIR... --out DIR`: conformance.signing.shards does the work."""
    from conformance.areas import AREAS
    from conformance.signing.shards import merge_folders

    report = merge_folders([Path(d) for d in args.shard_dirs], Path(args.out), {a.name: a.doc for a in AREAS})
    shards = len(report["selection"]["shards"])
    print(f"ray-conformance: merged {shards} shards → {args.out} (tier {report.get('tier') or 'none'}"
          f"{'; partial: ' + str(len(report['selection']['not_run'])) + ' check(s) no shard ran' if report.get('partial') else ''})"
          f"; sign it: ray-conformance sign {args.out} --key KEY")
    return int(Exit.OK)


def selected_checks(args: argparse.Namespace, data: SuiteData, previous_report: Path) -> list[str] | None:
    """The check ids `--area/--check/--last-failed` limit the run to (None: no such option, the
    whole checklist). Unknown ids and a missing or invalid previous report are one-line errors."""
    from conformance.catalog.selection import chosen_checks, failed_checks

    if not (args.area or args.check or args.last_failed):
        return None
    last_failed: list[str] = []
    if args.last_failed:
        from conformance.catalog.datafiles import read_yaml_or_json, validate
        if not previous_report.is_file():
            raise UserError(f"--last-failed: no previous report at {previous_report} (run once without it first, "
                            "with the same --out)")
        report = read_yaml_or_json(previous_report, what="--last-failed: previous report")
        if not isinstance(report, dict):
            raise UserError(f"--last-failed: {previous_report}: expected a report object, got {type(report).__name__}")
        validate(report, "report", what=f"--last-failed: {previous_report}")
        last_failed = failed_checks(report)
    ids = [part for value in args.check or [] for part in value.split(",") if part.strip()]
    active = {c.id: c.area for c in data.checklist.active()}
    try:
        chosen = chosen_checks(active, areas=args.area or [], checks=ids, last_failed=last_failed)
    except ValueError as exc:
        raise UserError(str(exc)) from None
    return chosen


def cmd_inject(args: argparse.Namespace) -> int:
    from conformance.cluster.injection import ENV_VAR, install_pth, uninstall_pth

    if args.action == "install":
        path: str | Path | None = install_pth()
        print(f"wrote {path}; set {ENV_VAR}=pkg.module:Manager (and RAY_custom_unit_instance_resources) "
              "before `ray start` on every node")
    elif args.action == "uninstall":
        path = uninstall_pth()
        print(f"removed {path}" if path else "no hook installed")
    else:
        import sysconfig

        from conformance.cluster.injection import PTH_NAME
        path = Path(sysconfig.get_paths()["purelib"]) / PTH_NAME
        print(f"{path}: {'installed' if path.exists() else 'not installed'}; {ENV_VAR}={os.environ.get(ENV_VAR, '')!r}")
    return 0


def cmd_docs(args: argparse.Namespace) -> int:
    from conformance.docgen.pages import write_docs

    for path in write_docs(Path(args.out)):
        print(f"wrote {path}")
    return 0


def build_parser() -> argparse.ArgumentParser:
    parser = _Parser(prog="ray-conformance", description=__doc__.splitlines()[0])
    parser.add_argument("--version", action="version", version=f"%(prog)s {__version__}")
    sub = parser.add_subparsers(dest="command", required=True, parser_class=_Parser)

    from conformance.catalog.data import load_vocabulary
    vocabulary = load_vocabulary()
    p = sub.add_parser("run", allow_abbrev=False, help="certify a plugin: run the checks, compute the tier, write the reports")
    p.add_argument("--manifest", required=True,
                   help="vendor manifest (YAML or JSON), or builtin:simulated[-2node] shipped in the package")
    p.add_argument("--out", help="output folder (default reports/<product-slug>/)")
    p.add_argument("--ray-address", help="existing Ray cluster to run against")
    p.add_argument("--require-tier", help="exit 1 unless at least this tier is achieved")
    p.add_argument("--fault-driver", help="pkg.module:Class that kills/partitions/restarts nodes of the "
                                          "--ray-address cluster (docs/recovery.md)")
    p.add_argument("--fault-driver-options", help="the fault driver's keyword arguments as a JSON object")
    p.add_argument("--timeout", type=cli_numbers.seconds, help="default hard timeout per check, seconds")
    p.add_argument("--sign-key", help="sign the report with this private key (writes report.intoto.json)")
    p.add_argument("--passphrase-env", help="environment variable holding the key's passphrase")
    p.add_argument("--area", nargs="+", action="extend", choices=list(vocabulary.area_prefix), metavar="AREA",
                   help="only the checks of these areas (a partial run, never a certification)")
    p.add_argument("--check", nargs="+", action="extend", metavar="ID",
                   help="only these checks, e.g. DP-003 (a partial run, never a certification)")
    p.add_argument("--last-failed", action="store_true",
                   help="only the checks that failed or errored in the previous report.json of the output folder")
    p.add_argument("--nodes", metavar="all|sample",
                   help="which nodes the per-node checks cover: sample (default: a sample of the device nodes chosen "
                        "with a recorded seed, the size tiers/tiers.yaml fixes) or all (every alive node, in waves); "
                        "recorded in the report's selection, "
                        "and each per-node check's evidence names its nodes (docs/scale.md)")
    p.add_argument("--node-seed", metavar="SEED",
                   help="the seed that chooses the sample's nodes under --nodes sample, and under either mode "
                        "the recovery scenarios' nodes per failure domain (drawn when not given; recorded in the "
                        "report, which verify recomputes the choices from; give every shard the same one)")
    p.add_argument("--shard", metavar="I/N",
                   help="run shard I of N: a deterministic slice by area and cluster shape plus the mandatory "
                        "core; sign each shard, then `ray-conformance merge` them (docs/signing.md#shards)")
    p.add_argument("-v", "--verbose", action="store_true", help="also pytest's own per-test output")
    p.add_argument("pytest_args", nargs=argparse.REMAINDER, help="after --: extra pytest arguments")
    p.set_defaults(func=cmd_run)

    p = sub.add_parser("merge", allow_abbrev=False,
                       help="merge the signed shards of one run (run --shard I/N) into one report",
                       description="Write one report of the shards' union (tier and capabilities recomputed), "
                                   "the shards copied into DIR/shards/<i-of-N>/; sign it, then verify it.")
    p.add_argument("shard_dirs", nargs="+", metavar="SHARD_DIR", help="the signed shard folders, all N of them")
    p.add_argument("--out", required=True, metavar="DIR", help="a new (or empty) folder for the merged report")
    p.set_defaults(func=cmd_merge)

    p = sub.add_parser("checklist", help="print the checklist (filter by --area/--level)")
    p.add_argument("--format", choices=["text", "md", "json"], default="text")
    p.add_argument("--area", choices=list(vocabulary.area_prefix), help="only this area's checks")
    p.add_argument("--level", choices=list(vocabulary.levels), help="only MUST or only SHOULD checks")
    p.set_defaults(func=cmd_checklist)

    p = sub.add_parser("tiers", help="print the tier ladder")
    p.add_argument("--format", choices=["md", "json"], default="md")
    p.set_defaults(func=cmd_tiers)

    p = sub.add_parser("validate-manifest", help="validate a manifest (schema, imports, cross-checks)")
    p.add_argument("manifest")
    p.set_defaults(func=cmd_validate_manifest)

    p = sub.add_parser("inject", help="install the .pth hook that loads a vendor manager into `ray start` nodes")
    p.add_argument("action", choices=["install", "uninstall", "status"])
    p.set_defaults(func=cmd_inject)

    p = sub.add_parser("docs", help="regenerate the docs tables from tiers/*.yaml")
    p.add_argument("--out", default=str(Path(__file__).resolve().parents[2] / "docs"))
    p.set_defaults(func=cmd_docs)

    import importlib
    for name in EXTENSION_MODULES:
        try:
            module = importlib.import_module(name)
        except ModuleNotFoundError as exc:
            if exc.name != name:
                raise
            continue
        module.register(sub)
    return parser


def file_signature(path: Path) -> tuple[int, int, int] | None:
    """(inode, size, mtime in ns) of a file, None when absent. The CLI compares it before and
    after a run: a report.json left unchanged is the previous run's (moved aside only when a new
    one is written) and must never be read as this run's. No clock is compared, so a file
    system whose clock differs from this machine's cannot fool it."""
    try:
        st = path.stat()
    except FileNotFoundError:
        return None
    return st.st_ino, st.st_size, st.st_mtime_ns


def main(argv: list[str] | None = None) -> int:
    try:
        from conformance.cli.signing import split_diff_runs

        # the parser reads the vocabulary (--area, --level); `diff OLD... -- NEW...` keeps its --
        args = build_parser().parse_args(split_diff_runs(sys.argv[1:] if argv is None else argv))
        handler: Callable[[argparse.Namespace], int] = args.func
        return handler(args)
    except UserError as exc:
        from conformance.sanitize import terminal
        print(f"ray-conformance: error: {terminal(exc)}", file=sys.stderr)
        return int(Exit.USAGE)
    except KeyboardInterrupt:
        print("ray-conformance: interrupted", file=sys.stderr)
        return int(Exit.INTERRUPTED)


if __name__ == "__main__":
    sys.exit(main())
