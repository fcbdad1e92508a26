"""Helpers shared by the test_signing_* modules (no tests here).

Builds small, schema-valid report.json dicts from the real checklist (load_suite_data), with
the tier and per-tier detail computed the way the plugin computes them, and writes report
folders, releases files and waiver files into temporary directories.
"""
from __future__ import annotations

import copy
import functools
import json
from collections import Counter
from pathlib import Path
from typing import Any, Mapping

import judged

from conformance import SUITE_NAME
from conformance.catalog import data, datafiles, releases
from conformance.catalog.ladder import compute_tiers, context_from_report
from conformance.signing.entry_rules import spent_figures

FINISHED_AT = "2026-03-01T12:00:00Z"
# What `ray-conformance run` records for a whole run (conformance/run/certification.py).
CERTIFICATION_ARGS = ["-p", "no:cacheprovider", "-p", "no:logging", "-q", "-rfE", "-c", "/dev/null",
                      "-p", "no:hypothesispytest", "--conformance-manifest=manifest.yaml", "--conformance-out=out",
                      "--rootdir=$SUITE/checks", "$SUITE/checks"]
PUBLISHED = "2026-01-01"  # the test releases' publication date: before every run here
# Evidence that satisfies each judged check's judge under the shipped params (tests/support/judged/).
PASSING_METRICS = judged.PASSING


def _node_id(i: int) -> str:
    """Node i's id in the hand-made run: the short ids the judged device evidence records
    (tests/support/judged/device.py NODES), as the preflight writes them in full."""
    from judged.device import NODES

    return (NODES[i] if i < len(NODES) else f"{i:08x}") + "0" * 48


def suite() -> data.SuiteData:
    """The suite data in force, loaded once per data folder (CONFORMANCE_DATA_DIR honoured): each
    load re-validates the whole checklist, which cost the judge tests a second apiece."""
    return _suite_at(str(datafiles.data_root()))


@functools.lru_cache(maxsize=4)
def _suite_at(root: str) -> data.SuiteData:
    return data.load_suite_data()


def gated_by_diff(check_id: str, figures: dict[str, Any]) -> dict[str, tuple[str, str | None]]:
    """What `ray-conformance diff` gates of one device's workload figures (the checklist's merit:):
    each figure's key -> (which way is better, the key of the trials its test compares)."""
    from conformance.signing.merit_diff import resolve

    merit = next(c for c in suite().checklist.checks if c.id == check_id).merit
    assert merit is not None, check_id
    out: dict[str, tuple[str, str | None]] = {}
    for f in merit.figures:
        assert resolve({"devices": {"cpu": figures}}, f.metric), f.metric
        out[f.metric.rsplit(".", 1)[-1]] = (f.better, f.trials.rsplit(".", 1)[-1] if f.trials else None)
    return out


def check_ids() -> list[str]:
    return [c.id for c in suite().checklist.active()]


def retier(report: dict[str, Any]) -> dict[str, Any]:
    """Set tier, tiers and summary (and capabilities, where the report has them) from the report's
    checks (what an honest plugin writes)."""
    s = suite()
    tier, detail = compute_tiers(report["checks"], s.checklist, s.ladder, context_from_report(report))
    report["tier"], report["tiers"] = tier, detail
    if "capabilities" in report:
        from conformance.catalog.capabilities import compute_capabilities, load_profiles

        report["capabilities"] = compute_capabilities(report["checks"], s.checklist, load_profiles(),
                                                      report["manifest"])
    counts = Counter(c["outcome"] for c in report["checks"])
    report["summary"] = {k: counts.get(k, 0) for k in ("pass", "fail", "error", "skip", "not_applicable", "waived")}
    if counts.get("flaky"):   # as a run counts them (results.summarize); absent where none, as in older reports
        report["summary"]["flaky"] = counts["flaky"]
    return report


def build_report(outcomes: Mapping[str, str] | None = None, *, nodes: int = 2, transport: bool = True,
                 metrics: Mapping[str, dict[str, Any]] | None = None,
                 waivers: Mapping[str, dict[str, Any]] | None = None,
                 plugin_artifact: dict[str, str] | None = None) -> dict[str, Any]:
    """A schema-valid report: every active check `pass` unless `outcomes` says otherwise."""
    s = suite()
    outcomes = dict(outcomes or {})
    checks = []
    for c in s.checklist.active():
        outcome = outcomes.get(c.id, "pass")
        entry: dict[str, Any] = {"id": c.id, "title": c.title, "area": c.area, "level": c.level,
                                 "outcome": outcome, "reason": None if outcome == "pass" else f"{outcome} in test",
                                 "duration_s": 0.25,   # below: at least its metrics' longest step
                                 # a pass carries evidence its judge passes; any other outcome none
                                 # (a fail beside passing evidence is what verify refuses)
                                 "metrics": dict((metrics or {}).get(
                                     c.id, PASSING_METRICS.get(c.id, {}) if outcome == "pass" else {})),
                                 "params": dict(c.params),
                                 "tests": [f"{c.area}/test_x.py::test_{c.id.lower().replace('-', '_')}"]}
        entry["duration_s"] = max([0.25, *(round(v + 0.25, 3) for _, v in spent_figures(entry["metrics"]))])
        if waivers and c.id in waivers:
            entry["waiver"] = dict(waivers[c.id])
        if c.provisional:   # as the run records a soaking check (conformance/report/results.py)
            entry["provisional"] = True
        checks.append(entry)
    # a manifest the release's manifest schema accepts (verify's `manifest` line)
    manifest = judged.manifest(nodes=nodes, transport=transport)
    report: dict[str, Any] = {
        "schema_version": 1,
        "suite": {"name": SUITE_NAME, "version": releases.current_version(),
                  "checklist_sha256": s.checklist.sha256, "tiers_sha256": s.ladder.sha256,
                  "report_schema_sha256": datafiles.sha256_file(datafiles.schema_path("report"))},
        "manifest": manifest,
        "manifest_sha256": "ab" * 32,
        "environment": {"ray": "2.60.0", "torch": "2.13.0", "python": "3.11.7", "os": "Linux",
                        "cpu": "x86_64", "devices": {
                            "resource": "NPU", "total": 4.0 * nodes,
                            # the nodes the judged device evidence names (judged/device.py NODES), full ids
                            "nodes": [{"node_id": _node_id(i), "count": 4.0, "accelerator_type": "NPU-X1",
                                       "labels": {"ray.io/accelerator-type": "NPU-X1"}} for i in range(nodes)]}},
        "cluster": {"mode": "simulated", "nodes": nodes},
        "shape": {"nodes": nodes, "devices_per_node": 4, "domain_labels": False},
        "started_at": "2026-03-01T11:00:00Z",
        "finished_at": FINISHED_AT,
        "duration_s": 3600.0,
        "interrupted": False,
        "interrupted_reason": None,
        "checks": checks,
        "partial": False,
        "manifest_path": "manifest.yaml",
        "selection": {"args": list(CERTIFICATION_ARGS), "deselected": [], "not_run": [], "collect_only": False,
                      "whole_checklist_collected": True},
    }
    if plugin_artifact:
        report["plugin_artifact"] = plugin_artifact
    return retier(report)


def write_report_dir(folder: Path, report: Mapping[str, Any]) -> Path:
    """report.json, and junit.xml and report.md written from it by the run's own writers."""
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "report.json").write_text(json.dumps(report, indent=2) + "\n")
    write_companions(folder, report)
    return folder


def write_companions(folder: Path, report: Mapping[str, Any]) -> None:
    """junit.xml and report.md as the run writes them for `report` (conformance/report/build.py)."""
    from conformance.report.build import render_markdown, write_junit
    from conformance.report.results import TestRecord

    try:
        records = []
        for c in report.get("checks") or []:
            tests = c.get("tests") or []
            outcome = (c.get("waiver") or {}).get("original_outcome", "fail") if c["outcome"] == "waived" \
                else c["outcome"]
            records += [TestRecord(nodeid=t, check_id=c["id"], outcome=outcome, reason=c.get("reason"),
                                   duration_s=c["duration_s"] / len(tests)) for t in tests]
        write_junit(dict(report), records, folder)
        (folder / "report.md").write_text(render_markdown(dict(report)), encoding="utf-8")
    except (KeyError, TypeError, ValueError, AttributeError, ZeroDivisionError):
        # a report the run could not have written: companions no writer would produce (verify
        # rejects the report for its own fault first; these files only have to exist)
        (folder / "junit.xml").write_text('<?xml version="1.0"?>\n<testsuites name="pytest tests"/>\n')
        (folder / "report.md").write_text(f"# Conformance report\n\nTier: {report.get('tier')}\n")


def write_releases(path: Path) -> Path:
    """A releases file whose current-version entry matches this checkout's data files."""
    releases.write_release(path, version=releases.current_version(), published=PUBLISHED)
    return path


def write_waivers(path: Path, waivers: list[dict[str, Any]]) -> Path:
    path.write_text(json.dumps({"schema_version": 1, "waivers": waivers}, indent=2))
    return path


def stable_only_check() -> str:
    """A check the top tier needs and no tier below it does (failing it gives the tier below)."""
    from conformance.catalog.ladder import required_checks

    s = suite()
    below = set(required_checks(s.ladder.tiers[0], s.checklist)) | set(required_checks(s.ladder.tiers[1], s.checklist))
    return next(c for c in required_checks(s.ladder.tiers[2], s.checklist) if c not in below)


def write_product_history(root: Path) -> tuple[Path, Path, Path, Any]:
    """Issue 46's register: a stable report of ExampleCorp NPU X1, a later beta one of the same product, and a stable
    NPU X2, each signed; returns (submissions, releases, keyring, the vendor's key pair)."""
    from conformance.signing import keys
    from conformance.signing.sign import sign_report_dir

    pair = keys.write_keypair(root / "vendor")
    releases = write_releases(root / "releases.yaml")
    subs = root / "subs"
    write_report_dir(subs / "a-x1-march", build_report())
    later = build_report({stable_only_check(): "fail"})
    later["started_at"], later["finished_at"] = "2026-04-01T11:00:00Z", "2026-04-01T12:00:00Z"
    write_report_dir(subs / "b-x1-april", later)
    x2 = build_report()
    x2["manifest"]["product"] = "NPU X2"
    write_report_dir(subs / "c-x2", x2)
    for name in ("a-x1-march", "b-x1-april", "c-x2"):
        sign_report_dir(subs / name, pair.private_path, releases_file=releases)
    keyring = root / "keyring.yaml"
    keyring.write_text(f"keys:\n  - name: examplecorp\n    public_key: {pair.public_path}\n    vendors: [ExampleCorp]\n")
    return subs, releases, keyring, pair


# The shards' spans (started_at, finished_at) in shard_reports: the second starts before the first ends.
SPANS = {1: ("2026-03-01T11:00:00Z", "2026-03-01T11:40:00Z"), 2: ("2026-03-01T11:10:00Z", "2026-03-01T11:55:00Z")}


def shard_reports(whole: dict[str, Any], count: int = 2) -> list[dict[str, Any]]:
    """`whole` as `count` shards would have recorded it (`run --shard I/N`): each its slice and the
    core, the others' checks skipped and deselected, its own span of SPANS."""
    from conformance.catalog import shards as sh
    from conformance.catalog.data import load_checklist, load_ladder, load_run_knobs

    policy = load_ladder().knobs.shards
    # the suite's own plan (the one run --shard makes; merge and verify hold its structure)
    plan = sh.release_plan([c["id"] for c in whole["checks"]], count, load_checklist(), policy.core,
                           load_run_knobs()["durations"])
    out = []
    for i in range(1, count + 1):
        report = copy.deepcopy(whole)
        record = sh.selection_shard(sh.Shard(i, count), plan, policy.core)
        mine = sh.shard_checks(record)
        deselected = []
        for c in report["checks"]:
            if c["id"] not in mine:
                deselected += c["tests"]
                c.update(outcome="skip", reason=f"not in this shard ({i}-of-{count})", tests=[], duration_s=0.0,
                         metrics={})   # a check the shard did not run recorded nothing
        report["started_at"], report["finished_at"] = SPANS[i]
        report["duration_s"] = 2000.0
        report["selection"] = {"args": [*whole["selection"]["args"], f"--conformance-shard={i}/{count}"],
                               "deselected": sorted(deselected), "not_run": sorted(c["id"] for c in report["checks"]
                                                                                   if not c["tests"]),
                               "collect_only": False, "whole_checklist_collected": True, "shard": record}
        report["partial"] = True
        out.append(retier(report))
    return out
