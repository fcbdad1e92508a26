"""Every transport and performance check has teeth: a broken transport that it catches, and the
reference transport (SIMXFER) passes them all.

Each variant of tests/broken_plugins/broken_transports.py runs the transport/performance check
modules in a fresh pytest process against a live Ray cluster and must fail exactly its declared
set of checks — the intended ones among them — and pass every other check that ran (TR-006 is
not applicable on one node). The runs are started together by a module fixture, in phases that
keep them from disturbing each other's measurements (see `SCHEDULE`), with small payloads
(RAY_CONFORMANCE_TRANSPORT_MAX_BYTES=16MiB).
"""
from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import pytest
import yaml

from suite_runner import BROKEN, CHECKS, ROOT, outcomes, write_manifest

DATA = (str(CHECKS / "test_transport_data.py"), str(CHECKS / "test_transport_lifecycle.py"))
PERF = (str(CHECKS / "test_performance_transport.py"),)
FAILURES = (str(CHECKS / "test_transport_failures.py"),)
USES = (str(CHECKS / "test_transport_usage.py"),)
USAGE = FAILURES + USES
ALL = DATA + PERF
SIZE_ENV = {"RAY_CONFORMANCE_TRANSPORT_MAX_BYTES": "16MiB"}
TRANSPORT_MANIFEST = ROOT / "conformance" / "simulated" / "manifest-transport.yaml"
REFERENCE = "SimXferTransport"

# variant -> (intended checks, every check it is expected to fail, check files, nodes)
VARIANTS: dict[str, tuple[set[str], set[str], tuple[str, ...], int]] = {
    "WireFloat32": ({"TR-001"}, {"TR-001"}, DATA, 1),
    "ZeroDimLost": ({"TR-001"}, {"TR-001"}, DATA, 1),
    "IgnoreStrides": ({"TR-002"}, {"TR-002"}, DATA, 1),
    "ReverseOrder": ({"TR-003"}, {"TR-003", "TR-005", "TR-008", "TR-009"}, DATA, 1),
    "Truncate1MiB": ({"TR-004", "PF-001"}, {"TR-004", "PF-001", "PF-004"}, ALL, 1),
    "FlatShapes": ({"TR-005"}, {"TR-005"}, DATA, 1),
    "NodeLocal": ({"TR-006"}, {"TR-006", "PF-004"}, (DATA[0],) + PERF, 2),
    "SharedStaging": ({"TR-007"}, {"TR-007"}, DATA, 1),
    "UnlinkOnRead": ({"TR-008"}, {"TR-008", "TR-012"}, DATA, 1),
    "BrokenFetch": ({"TR-009"}, {"TR-009"}, DATA, 1),
    "FalseTwoSided": ({"TR-010"}, {"TR-010"}, DATA, 1),
    "WireMeta": ({"TR-011"}, {"TR-011"}, DATA, 1),
    "GcRaises": ({"TR-012"}, {"TR-012", "TR-013"}, DATA, 1),
    "NoFree": ({"TR-013"}, {"TR-013"}, DATA, 1),
    "NonBoolHas": ({"TR-014"}, {"TR-014"}, DATA, 1),
    "SlowLink": ({"PF-002", "PF-003"}, {"PF-002", "PF-003"}, ALL, 1),
    "OneBadDevice": ({"PF-004"}, {"PF-004"}, PERF, 1),
    # usage variants run the module holding their check (the reference and TwoSidedShm run both)
    "ReceiverReleasesChannel": ({"TR-015"}, {"TR-015"}, FAILURES, 1),
    "CreditLeak": ({"TR-016"}, {"TR-016"}, FAILURES, 1),
    "PooledAlias": ({"TR-017"}, {"TR-017"}, USES, 1),
    "EmptyObjectCrash": ({"TR-018"}, {"TR-018"}, USES, 1),
    "SingleRecvBuffer": ({"TR-019"}, {"TR-019", "TR-017"}, USES, 1),   # what a receiver keeps is overwritten too
    "SharedFetchBuffer": ({"TR-020"}, {"TR-020"}, USES, 1),
    # correct transports: the reference (everything, two nodes) and a two-sided twin
    REFERENCE: (set(), set(), ALL + USAGE, 2),
    "TwoSidedShm": (set(), set(), DATA + USAGE, 1),
}
CORRECT = (REFERENCE, "TwoSidedShm")
# Phases run one after the other; within a phase, `lanes` runs at a time. The two leaking
# variants go first, together (host shared memory is system-wide, so a leak would show in
# another run's TR-013); runs that measure performance go last, one at a time.
SCHEDULE: list[tuple[int, list[str]]] = [
    (2, ["NoFree", "GcRaises"]),
    (2, ["WireFloat32", "ZeroDimLost", "IgnoreStrides", "ReverseOrder", "FlatShapes", "SharedStaging",
         "UnlinkOnRead", "BrokenFetch", "FalseTwoSided", "WireMeta", "NonBoolHas", "TwoSidedShm",
         "ReceiverReleasesChannel", "CreditLeak", "PooledAlias", "EmptyObjectCrash", "SingleRecvBuffer",
         "SharedFetchBuffer"]),
    (1, [REFERENCE, "NodeLocal", "Truncate1MiB", "SlowLink", "OneBadDevice"]),
]


def variant_manifest(variant: str, nodes: int) -> dict[str, Any]:
    data = yaml.safe_load(TRANSPORT_MANIFEST.read_text())
    if variant != REFERENCE:
        data["transport"]["manager"] = f"broken_transports:{variant}"
        data["plugin"] = {"python_path": [str(BROKEN)]}
    data["product"] = f"SimAcc SIMXFER {variant}"
    data["cluster"] = {"nodes": nodes, "object_store_memory_mb": 300}
    return data


def run_variant(variant: str, root: Path) -> dict[str, Any]:
    _, _, files, nodes = VARIANTS[variant]
    folder = root / variant
    manifest = write_manifest(variant_manifest(variant, nodes), folder)
    out = folder / "out"
    cmd = [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-q", f"--rootdir={CHECKS}", "-c", os.devnull,
           f"--conformance-manifest={manifest}", f"--conformance-out={out}", *files]
    env = {k: v for k, v in os.environ.items() if k != "PYTEST_ADDOPTS"}
    env.update(SIZE_ENV)
    t0 = time.monotonic()
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=400, env=env, cwd=str(folder))
    report_path = out / "report.json"
    report = json.loads(report_path.read_text()) if report_path.exists() else None
    return {"report": report, "output": proc.stdout + proc.stderr, "code": proc.returncode,
            "seconds": time.monotonic() - t0}


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, dict[str, Any]]:
    from conformance.simulated.transport import reap_orphaned_segments

    root = tmp_path_factory.mktemp("transport-teeth")
    results: dict[str, dict[str, Any]] = {}
    try:
        for lanes, variants in SCHEDULE:
            with ThreadPoolExecutor(lanes) as pool:
                for variant, result in zip(variants, pool.map(lambda v: run_variant(v, root), variants)):
                    results[variant] = result
                    print(f"transport teeth: {variant} ran in {result['seconds']:.0f}s (exit {result['code']})")
            reap_orphaned_segments()   # the leaking variants' segments, once their processes are gone
    finally:
        reap_orphaned_segments()
    return results


def transport_outcomes(report: dict[str, Any], files: tuple[str, ...]) -> dict[str, str]:
    """Outcomes of the transport/performance checks whose module ran."""
    ran = {c["id"] for c in report["checks"] if any(Path(t.split("::")[0]).name in {Path(f).name for f in files}
                                                     for t in c["tests"])}
    got = {**outcomes(report, "transport"), **outcomes(report, "performance")}
    return {k: v for k, v in got.items() if k in ran}


def test_every_transport_and_performance_check_has_a_variant() -> None:
    from conformance.data import load_suite_data

    ours = {c.id for c in load_suite_data().checklist.active() if c.area in ("transport", "performance")}
    intended = set().union(*(i for i, _, _, _ in VARIANTS.values()))
    assert ours == intended, f"checks without a variant: {sorted(ours - intended)}; unknown: {sorted(intended - ours)}"
    assert set(VARIANTS) == {v for _, vs in SCHEDULE for v in vs}, "every variant must be scheduled exactly once"


def test_reference_transport_passes_every_check(runs: dict[str, dict[str, Any]]) -> None:
    run = runs[REFERENCE]
    assert run["report"] is not None, run["output"][-3000:]
    got = transport_outcomes(run["report"], ALL + USAGE)
    assert len(got) == 24, got
    bad = {k: v for k, v in got.items() if v != "pass"}
    reasons = {c["id"]: c["reason"] for c in run["report"]["checks"] if c["id"] in bad}
    assert not bad, f"the reference transport must pass every check on two nodes: {reasons}"
    assert "Transport" in run["report"]["sections"], "the report has no Transport section"


def test_a_correct_two_sided_custom_transport_passes(runs: dict[str, dict[str, Any]]) -> None:
    run = runs["TwoSidedShm"]
    assert run["report"] is not None, run["output"][-3000:]
    got = transport_outcomes(run["report"], DATA + USAGE)
    bad = {k: v for k, v in got.items() if v not in ("pass", "not_applicable")}
    reasons = {c["id"]: c["reason"] for c in run["report"]["checks"] if c["id"] in bad}
    assert not bad, f"a correct two-sided transport must pass: {reasons}"
    assert run["report"]["sections"]["Transport"]["data"]["transport"]["one_sided"] is False


@pytest.mark.parametrize("variant", sorted(v for v in VARIANTS if v not in CORRECT))
def test_broken_variant_is_caught(variant: str, runs: dict[str, dict[str, Any]]) -> None:
    intended, expected, files, nodes = VARIANTS[variant]
    run = runs[variant]
    assert run["report"] is not None, run["output"][-3000:]
    got = transport_outcomes(run["report"], files)
    reasons = {c["id"]: c["reason"] for c in run["report"]["checks"]}
    for check in intended:
        assert got.get(check) == "fail", f"{check} did not catch {variant}: {got.get(check)} ({reasons.get(check)})"
    failed = {k for k, v in got.items() if v in ("fail", "error")}
    assert failed == expected, (f"{variant}: failed {sorted(failed)}, expected {sorted(expected)}: "
                                f"{ {k: reasons[k] for k in failed ^ expected} }")
    allowed = {"pass"} | ({"not_applicable"} if nodes == 1 else set())
    odd = {k: v for k, v in got.items() if k not in expected and v not in allowed}
    assert not odd, f"{variant}: checks it does not break did not pass: {odd}"
    if nodes == 1 and "TR-006" in got:
        assert got["TR-006"] == "not_applicable", "TR-006 must be not applicable on one node"
