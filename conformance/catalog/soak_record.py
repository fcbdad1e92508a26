"""Recording CI runs of the reference plugin in tiers/soak.yaml: the soak a promotion rests on.

The rule (conformance.catalog.soak) promotes a provisional check once its last `soak_runs`
recorded CI runs of the reference plugin all passed. Nothing wrote that record: the release
manager appends it here from a CI run's reports (the golden path's certification, the teeth
table's good rows, the example): one entry per provisional check that any of them ran, the worst
outcome among them, so one CI run counts once however many of its reports ran the check:

    python -m conformance.catalog.soak_record REPORT_DIR... --commit SHA --ci URL [--write]

Only the reference plugin's runs count, so a report whose manifest names plugin code other than
the suite's own simulated accelerator (`conformance.simulated`) is refused: a broken twin's
failures are that twin's, not the check's flakiness. A report that
did not run a provisional check adds nothing for it (a skip or not-applicable is no soak), and
the same CI address is never recorded twice for one check. Bad input is one line, exit 2; the
file is rewritten only with --write, its leading comment kept.
"""
from __future__ import annotations

import argparse
import json
import re
import sys
from pathlib import Path
from typing import Any, Iterable, Mapping, Sequence

import yaml

from conformance.catalog import data, datafiles
from conformance.errors import UserError
from conformance.sanitize import terminal

REFERENCE_PACKAGE = "conformance.simulated."   # the reference plugin's code: the suite's own
NOT_A_RUN = ("skip", "not_applicable")          # outcomes that say the check did not run
OUTCOME_RANK = {"pass": 0, "waived": 1, "flaky": 2, "fail": 3, "error": 4}   # worse later
IMPORT_REF = re.compile(r"[A-Za-z_][A-Za-z0-9_.]*:[A-Za-z_][A-Za-z0-9_.]*")   # schemas/manifest.schema.json's import_ref
DATE = re.compile(r"[0-9]{4}-[0-9]{2}-[0-9]{2}")
_COMMIT = frozenset("0123456789abcdef")


def plugin_code(manifest: object) -> list[str]:
    """Every "module:attribute" the manifest names (its schema's import references: the manager, the
    torch device's registration, the transport, the collective backend, the topology provider, a
    fault driver), found wherever it stands, so a field added later is not missed."""
    if isinstance(manifest, str):
        return [manifest] if IMPORT_REF.fullmatch(manifest) else []
    if isinstance(manifest, Mapping):
        return [ref for v in manifest.values() for ref in plugin_code(v)]
    if isinstance(manifest, list):
        return [ref for v in manifest for ref in plugin_code(v)]
    return []


def reference_problem(manifest: object) -> str | None:
    """Why a report's manifest is not the reference plugin's (None: it is): it names plugin code
    outside the suite's own simulated accelerator, or none. A python_path may stand beside (the
    teeth table's good rows carry the twins' folder) since only what the manifest names is loaded."""
    if not isinstance(manifest, Mapping):
        return "manifest: expected the run's manifest (an object)"
    named = plugin_code(manifest)
    others = [n for n in named if not n.startswith(REFERENCE_PACKAGE)]
    if others or not named:
        shown = terminal(others[0], limit=80) if others else "none"
        return f"manifest: names plugin code {shown!r}; a soak records the reference plugin ({REFERENCE_PACKAGE}*) only"
    return None


def worst(outcomes: Iterable[str]) -> str:
    """The worst of one CI run's outcomes of a check (a pass only when every report passed it)."""
    return max(outcomes, key=lambda o: OUTCOME_RANK.get(o, len(OUTCOME_RANK)))


def entries(report: Mapping[str, Any], provisional: Iterable[str], commit: str, ci: str, label: str) -> dict[str, dict[str, str]]:
    """{check id: soak entry} for each provisional check the report ran (pure); UserError naming
    the field when the report is not a run of the reference plugin or lacks what an entry needs."""
    problem = reference_problem(report.get("manifest"))
    if problem:
        raise UserError(f"{label}: {problem}")
    finished = report.get("finished_at")
    day = finished[:10] if isinstance(finished, str) else ""
    if not DATE.fullmatch(day):
        raise UserError(f"{label}: finished_at: expected the run's end (an ISO date and time)")
    checks = report.get("checks")
    if not isinstance(checks, list):
        raise UserError(f"{label}: checks: expected a list of the run's checks")
    wanted, out = set(provisional), {}
    for c in checks:
        if isinstance(c, Mapping) and c.get("id") in wanted and c.get("outcome") not in NOT_A_RUN:
            out[str(c["id"])] = {"date": day, "commit": commit, "ci": ci, "outcome": str(c.get("outcome"))}
    return out


def one_run(per_report: Iterable[Mapping[str, Mapping[str, str]]]) -> dict[str, dict[str, str]]:
    """One CI run's entry per check from its reports' (pure): the latest date, the worst outcome, so
    that a run is one run of the soak however many of its reports ran the check."""
    merged: dict[str, dict[str, str]] = {}
    for got in per_report:
        for cid, entry in got.items():
            seen = merged.get(cid)
            merged[cid] = dict(entry) if seen is None else dict(
                seen, date=max(seen["date"], entry["date"]), outcome=worst((seen["outcome"], entry["outcome"])))
    return merged


def appended(text: str, new: Mapping[str, Mapping[str, str]]) -> str:
    """The soak file `text` with one entry per check appended (pure): its leading comment kept, the
    result valid against schemas/soak.schema.json; UserError when the file is not a soak record or
    an entry's CI run is recorded for its check already."""
    try:
        doc = yaml.safe_load(text)
    except yaml.YAMLError as exc:
        raise UserError(f"soak: not YAML ({terminal(str(exc).splitlines()[0], limit=120)})") from None
    data.parse_soak(doc)
    for cid, run in new.items():
        recorded = doc["checks"].setdefault(cid, [])
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
        new = one_run(entries(_read_report(folder), provisional, commit, args.ci, terminal(str(folder)))
                      for folder in args.reports)
        for cid, run in new.items():
            print(f"soak: {cid} {run['outcome']} {run['date']} {run['commit']} {terminal(run['ci'])}")
        if not new:
            print(f"soak: nothing to record: no report ran a provisional check ({', '.join(provisional) or 'none'})")
        if args.write and new:
            try:
                text = path.read_text(encoding="utf-8")
            except OSError as exc:
                raise UserError(f"--soak: {terminal(str(path))}: cannot be read ({type(exc).__name__})") from None
            out = appended(text, new)
            tmp = path.with_name(path.name + ".tmp")
            try:
                tmp.write_text(out, encoding="utf-8")
                tmp.replace(path)
            except OSError as exc:
                tmp.unlink(missing_ok=True)
                raise UserError(f"--soak: {terminal(str(path))}: cannot be written ({type(exc).__name__})") from None
            print(f"soak: appended to {terminal(str(path))}")
        return 0
    except UserError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
