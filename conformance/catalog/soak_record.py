"""Recording CI runs of the reference plugin in tiers/soak.yaml: the soak a promotion rests on.

The rule (conformance.catalog.soak) promotes a provisional check once its last `soak_runs`
recorded CI runs of the reference plugin all passed. Nothing wrote that record: the release
manager appends it here from a CI run's reports (the golden path's certification, the teeth
table's good rows, the example), one entry per provisional check each report ran:

    python -m conformance.catalog.soak_record REPORT_DIR... --commit SHA --ci URL [--write]

Only the reference plugin's runs count, so a report whose manifest names plugin code other than
the suite's own simulated accelerator (`conformance.simulated`), or adds a python_path, is
refused: a broken twin's failures are that twin's, not the check's flakiness. A report that
did not run a provisional check adds nothing for it (a skip or not-applicable is no soak), and
the same CI address is never recorded twice for one check. Bad input is one line, exit 2; the
file is rewritten only with --write, its leading comment kept.
"""
from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any, Iterable, Mapping, Sequence

import yaml

from conformance.catalog import data, datafiles
from conformance.errors import UserError
from conformance.sanitize import terminal

REFERENCE_PACKAGE = "conformance.simulated."   # the reference plugin's code: the suite's own
NOT_A_RUN = ("skip", "not_applicable")          # outcomes that say the check did not run
_COMMIT = frozenset("0123456789abcdef")


def plugin_code(manifest: Mapping[str, Any]) -> list[str]:
    """Every "module:Class" the manifest names as plugin code (manager, transport, collective)."""
    named = [(manifest.get("accelerator") or {}).get("manager"), (manifest.get("transport") or {}).get("manager")]
    collective = manifest.get("collective") or {}
    named += [collective.get("group_class"), collective.get("rdt_transport")]
    return [str(n) for n in named if n]


def reference_problem(manifest: object) -> str | None:
    """Why a report's manifest is not the reference plugin's (None: it is)."""
    if not isinstance(manifest, Mapping):
        return "manifest: expected the run's manifest (an object)"
    path = (manifest.get("plugin") or {}).get("python_path") or []
    if path:
        return f"manifest.plugin.python_path: {terminal(str(path[0]), limit=80)!r}: the reference plugin adds none"
    others = [n for n in plugin_code(manifest) if not n.startswith(REFERENCE_PACKAGE)]
    if others or not plugin_code(manifest):
        named = terminal(others[0], limit=80) if others else "none"
        return f"manifest: names plugin code {named!r}; a soak records the reference plugin ({REFERENCE_PACKAGE}*) only"
    return None


def entries(report: Mapping[str, Any], provisional: Iterable[str], commit: str, ci: str, label: str) -> dict[str, dict[str, str]]:
    """{check id: soak entry} for each provisional check the report ran (pure); UserError naming
    the field when the report is not a run of the reference plugin or lacks what an entry needs."""
    problem = reference_problem(report.get("manifest"))
    if problem:
        raise UserError(f"{label}: {problem}")
    finished = report.get("finished_at")
    if not isinstance(finished, str) or len(finished) < 10:
        raise UserError(f"{label}: finished_at: expected the run's end (an ISO date and time)")
    checks = report.get("checks")
    if not isinstance(checks, list):
        raise UserError(f"{label}: checks: expected a list of the run's checks")
    wanted, out = set(provisional), {}
    for c in checks:
        if isinstance(c, Mapping) and c.get("id") in wanted and c.get("outcome") not in NOT_A_RUN:
            out[str(c["id"])] = {"date": finished[:10], "commit": commit, "ci": ci, "outcome": str(c.get("outcome"))}
    return out


def appended(text: str, new: Mapping[str, Sequence[Mapping[str, str]]]) -> str:
    """The soak file `text` with `new` entries appended to their checks' lists (pure): its leading
    comment kept, the result valid against schemas/soak.schema.json; UserError when an entry's CI
    address is already recorded for its check."""
    doc = yaml.safe_load(text)
    data.parse_soak(doc)
    for cid, runs in new.items():
        recorded = doc["checks"].setdefault(cid, [])
        for run in runs:
            if any(r.get("ci") == run["ci"] for r in recorded):
                raise UserError(f"soak: checks.{cid}: the CI run {terminal(run['ci'], limit=120)!r} is recorded already")
            recorded.append(dict(run))
    data.parse_soak(doc)
    start = text.find("\nschema_version")
    head = text[:start + 1] if start >= 0 else ""
    return head + yaml.safe_dump(doc, sort_keys=False, default_flow_style=None, width=120)


def _read_report(path: Path) -> dict[str, Any]:
    file = path / "report.json" if path.is_dir() else path
    try:
        report = json.loads(file.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, ValueError) as exc:
        raise UserError(f"{terminal(str(file))}: not a readable report.json ({type(exc).__name__})") from None
    if not isinstance(report, dict):
        raise UserError(f"{terminal(str(file))}: expected a report (a JSON object)")
    datafiles.validate(report, "report", what=terminal(str(file)))
    return report


def _commit(text: str) -> str:
    if not 7 <= len(text) <= 40 or not set(text) <= _COMMIT:
        raise UserError(f"--commit: {terminal(text, limit=60)!r}: expected the suite's commit the CI run tested (7-40 hex digits)")
    return text


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m conformance.catalog.soak_record", description=__doc__.splitlines()[0])
    parser.add_argument("reports", nargs="+", type=Path, help="report folders (or report.json files) of one CI run")
    parser.add_argument("--commit", required=True, help="the suite's commit the CI run tested")
    parser.add_argument("--ci", required=True, help="where the CI run is (its job's address): recorded once per check")
    parser.add_argument("--soak", type=Path, default=None, help="the soak file (default: tiers/soak.yaml)")
    parser.add_argument("--write", action="store_true", help="append to the soak file (default: print the entries)")
    args = parser.parse_args(argv)
    try:
        commit, path = _commit(args.commit), Path(args.soak or data.soak_path())
        provisional = [c.id for c in data.load_checklist().provisional()]
        new: dict[str, list[dict[str, str]]] = {}
        for i, folder in enumerate(args.reports):
            ci = args.ci if len(args.reports) == 1 else f"{args.ci}#{i + 1}"
            for cid, entry in entries(_read_report(folder), provisional, commit, ci, terminal(str(folder))).items():
                new.setdefault(cid, []).append(entry)
        for cid, runs in new.items():
            for run in runs:
                print(f"soak: {cid} {run['outcome']} {run['date']} {run['commit']} {terminal(run['ci'])}")
        if not new:
            print(f"soak: nothing to record: no report ran a provisional check ({', '.join(provisional) or 'none'})")
        if args.write and new:
            try:
                text = path.read_text(encoding="utf-8")
            except OSError as exc:
                raise UserError(f"--soak: {terminal(str(path))}: cannot be read ({type(exc).__name__})") from None
            tmp = path.with_name(path.name + ".tmp")
            tmp.write_text(appended(text, new), encoding="utf-8")
            tmp.replace(path)
            print(f"soak: appended to {terminal(str(path))}")
        return 0
    except UserError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
