"""Helpers shared by the test_signing_* modules (no tests here).

Builds small, schema-valid report.json dicts from the real checklist (load_suite_data), with
the tier and per-tier detail computed the way the plugin computes them, and writes report
folders, releases files and waiver files into temporary directories.
"""
from __future__ import annotations

import functools
import json
from collections import Counter
from pathlib import Path
from typing import Any, Mapping

from conformance import SUITE_NAME
from conformance.catalog import data
from conformance.catalog.ladder import compute_tiers, context_from_report
from conformance.signing import releases

FINISHED_AT = "2026-03-01T12:00:00Z"
PUBLISHED = "2026-01-01"  # the test releases' publication date: before every run here
# Metrics that satisfy each judged check's judge under the shipped params (conformance/report/judges.py).
PASSING_METRICS: dict[str, dict[str, Any]] = {
    "PF-002": {"largest_size_gbps": 5.0, "reference_gbps": 10.0, "achieved_fraction": 0.5},
    "PF-003": {"rdt_gbps": 4.0, "object_store_gbps": 2.0, "ratio_to_object_store": 2.0},
    "PF-004": {"wrong_pairs": 0, "links": {"same_node": {"median_gbps": 4.0, "min_gbps": 3.0}}},
    "TR-013": {"payload_bytes": 1 << 20, "transfers_per_round": 12,
               "growth_per_round_bytes": {"source.held_bytes": [0, 4096, 0]}},
    "TR-014": {"actor_has_transport_max_latency_s": 0.01},
    "FR-006": {"restart_s": 12.5},
    "CC-010": {"busbw_gbps": 2.0, "host_copy_gbps": 10.0, "host_fraction": 0.2, "nominal_link_gbps": 4.0,
               "link_fraction": 0.5, "object_store_gbps": 4.0, "object_store_fraction": 0.5},
}


def suite() -> data.SuiteData:
    """The suite data in force, loaded once per data folder (CONFORMANCE_DATA_DIR honoured): each
    load re-validates the whole checklist, which cost the judge tests a second apiece."""
    return _suite_at(str(data.data_root()))


@functools.lru_cache(maxsize=4)
def _suite_at(root: str) -> data.SuiteData:
    return data.load_suite_data()


def check_ids() -> list[str]:
    return [c.id for c in suite().checklist.active()]


def retier(report: dict[str, Any]) -> dict[str, Any]:
    """Set tier, tiers and summary from the report's checks (what an honest plugin writes)."""
    s = suite()
    tier, detail = compute_tiers(report["checks"], s.checklist, s.ladder, context_from_report(report))
    report["tier"], report["tiers"] = tier, detail
    counts = Counter(c["outcome"] for c in report["checks"])
    report["summary"] = {k: counts.get(k, 0) for k in ("pass", "fail", "error", "skip", "not_applicable", "waived")}
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
                                 "duration_s": 0.25,
                                 "metrics": dict((metrics or {}).get(c.id, PASSING_METRICS.get(c.id, {}))),
                                 "params": dict(c.params),
                                 "tests": [f"tests/test_x.py::test_{c.id.lower().replace('-', '_')}"]}
        if waivers and c.id in waivers:
            entry["waiver"] = dict(waivers[c.id])
        checks.append(entry)
    manifest = {"schema_version": 1, "vendor": "ExampleCorp", "product": "NPU X1",
                "accelerator": {"resource_name": "NPU"}, "cluster": {"nodes": nodes}}
    if transport:
        manifest["transport"] = {"kind": "host-memory"}
    report: dict[str, Any] = {
        "schema_version": 1,
        "suite": {"name": SUITE_NAME, "version": releases.current_version(),
                  "checklist_sha256": s.checklist.sha256, "tiers_sha256": s.ladder.sha256,
                  "report_schema_sha256": data.sha256_file(data.schema_path("report"))},
        "manifest": manifest,
        "manifest_sha256": "ab" * 32,
        "environment": {"ray": "2.60.0", "torch": "2.13.0", "python": "3.11.7", "os": "Linux",
                        "cpu": "x86_64", "devices": {
                            "resource": "NPU", "total": 4.0 * nodes,
                            "nodes": [{"node_id": f"node{i}", "count": 4.0, "accelerator_type": "NPU-X1",
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
        "selection": {"args": [], "deselected": [], "not_run": [], "collect_only": False,
                      "whole_checklist_collected": True},
    }
    if plugin_artifact:
        report["plugin_artifact"] = plugin_artifact
    return retier(report)


def write_report_dir(folder: Path, report: Mapping[str, Any]) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "report.json").write_text(json.dumps(report, indent=2) + "\n")
    (folder / "junit.xml").write_text('<?xml version="1.0"?>\n<testsuites name="pytest tests"/>\n')
    (folder / "report.md").write_text(f"# Conformance report\n\nTier: {report.get('tier')}\n")
    return folder


def write_releases(path: Path) -> Path:
    """A releases file whose current-version entry matches this checkout's data files."""
    releases.write_release(path, version=releases.current_version(), published=PUBLISHED)
    return path


def write_waivers(path: Path, waivers: list[dict[str, Any]]) -> Path:
    path.write_text(json.dumps({"schema_version": 1, "waivers": waivers}, indent=2))
    return path
