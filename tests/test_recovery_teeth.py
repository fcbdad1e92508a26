"""The recovery checks have teeth: each fault-injected variant (tests/broken_plugins/faulty.py) is
caught by the check meant to catch it, passes the recovery checks it does not break, the good
plugin passes every recovery check (FR-016 waived, never passed), and a hanging scenario is
reported as a failure naming the scenario and its elapsed time while the other checks still run.

Each case runs the suite in a fresh process with only the recovery check files it needs. The
runs are independent clusters, so they are started two at a time (a session fixture submits the
runs the selected tests need); each test then asserts on its own run's report.json.
"""
from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterator

import pytest
import yaml

from conformance import data

ROOT = Path(__file__).resolve().parent.parent
CHECKS = ROOT / "conformance" / "checks"
MANIFESTS = ROOT / "tests" / "manifests"
BROKEN = ROOT / "tests" / "broken_plugins"
DEV, NODES, XFER = "test_recovery_devices.py", "test_recovery_nodes.py", "test_recovery_transfers.py"
TESTS = {
    "FR-001": (DEV, "test_killed_actor_returns_its_device"),
    "FR-002": (DEV, "test_crashed_actor_returns_its_device"),
    "FR-003": (DEV, "test_restarted_actor_holds_a_device_again"),
    "FR-004": (DEV, "test_restart_storm_keeps_ids_disjoint"),
    "FR-005": (DEV, "test_retried_task_gets_a_valid_device"),
    "FR-006": (DEV, "test_fresh_start_in_same_process_detects_same_devices"),
    "FR-007": (NODES, "test_dead_node_leaves_view_and_survivors_keep_running"),
    "FR-011": (NODES, "test_rejoined_node_is_detected_again"),
    "FR-012": (XFER, "test_source_dies_before_fetch"),
    "FR-014": (XFER, "test_transfer_past_fetch_timeout_fails_cleanly"),
    "FR-015": (XFER, "test_receive_error_reaches_caller_and_next_transfer_works"),
}
RUN_TIMEOUT_S = 900
HANG_TIMEOUT_S = 20     # the hang case lowers FR-003's hard timeout to this (a copy of the data files)
PARALLEL_RUNS = 2


@dataclass(frozen=True)
class Variant:
    name: str
    kind: str                          # "accelerator" | "transport"
    fails: tuple[str, ...]             # the checks it must fail
    passes: tuple[str, ...]            # recovery checks it does not break (run to show they pass)
    hang: bool = False                 # the hang case: FR-003's hard timeout lowered

    @property
    def checks(self) -> tuple[str, ...]:
        order = sorted(self.fails + self.passes, key=lambda c: list(TESTS).index(c))
        return tuple(order)


VARIANTS = [
    Variant("LeakOnCrash", "accelerator", fails=("FR-001", "FR-005"), passes=("FR-006",)),
    Variant("CollideAfterRestart", "accelerator", fails=("FR-003", "FR-004"), passes=("FR-001",)),
    Variant("PeerDeathCrashes", "accelerator", fails=("FR-007",), passes=("FR-011",)),
    Variant("StaleHostClaims", "accelerator", fails=("FR-011",), passes=("FR-001",)),
    Variant("DieWhenSourceGone", "transport", fails=("FR-012",), passes=("FR-015",)),
    Variant("HangWhenSourceGone", "transport", fails=("FR-012",), passes=("FR-015",)),
    Variant("AbortPoisons", "transport", fails=("FR-014",), passes=("FR-015",)),
    Variant("ConsumeOnRead", "transport", fails=("FR-015",), passes=("FR-012",)),
    Variant("FailNthReceive", "transport", fails=("FR-015",), passes=("FR-012",)),
    Variant("NoAbortSimXfer", "transport", fails=(), passes=("FR-012", "FR-014")),
]
HANG = Variant("HangAfterRestart", "accelerator", fails=("FR-003",), passes=("FR-001", "FR-005"), hang=True)
GOOD = "good"


# ------------------------------------------------------------------------------ running the suite
@dataclass
class Run:
    rc: int
    report: dict[str, Any] | None
    output: str
    wall_s: float = 0.0
    out: Path = field(default_factory=Path)

    def outcomes(self) -> dict[str, str]:
        assert self.report is not None, f"no report.json (exit {self.rc}):\n{self.output[-3000:]}"
        return {c["id"]: c["outcome"] for c in self.report["checks"] if c["area"] == "recovery"}

    def check(self, cid: str) -> dict[str, Any]:
        assert self.report is not None
        return next(c for c in self.report["checks"] if c["id"] == cid)


def data_dir() -> Path:
    return data.data_root()


def hang_data_dir(folder: Path) -> Path:
    """A copy of the suite's data files with FR-003's hard timeout lowered (the hang case)."""
    for sub in ("tiers", "schemas"):
        shutil.copytree(data_dir() / sub, folder / sub)
    path = folder / "tiers" / "checklist.yaml"
    doc = yaml.safe_load(path.read_text())
    for c in doc["checks"]:
        if c["id"] == "FR-003":
            c["timeout_s"] = HANG_TIMEOUT_S
    path.write_text(yaml.safe_dump(doc, sort_keys=False))
    return folder


def variant_manifest(v: Variant, folder: Path) -> Path:
    template = MANIFESTS / f"recovery-faulty-{v.kind}.yaml"
    doc = yaml.safe_load(template.read_text())
    doc["plugin"]["python_path"] = [str(BROKEN)]
    doc["product"] = f"SimAcc X1 faulty {v.name}"
    if v.kind == "accelerator":
        doc["accelerator"]["manager"] = f"faulty:{v.name}"
    else:
        doc["transport"]["manager"] = f"faulty:{v.name}"
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / "manifest.yaml"
    path.write_text(yaml.safe_dump(doc, sort_keys=False))
    return path


def run_suite(manifest: Path, folder: Path, tests: list[str], extra_env: dict[str, str] | None = None) -> Run:
    import time

    out = folder / "report"
    env = {k: v for k, v in os.environ.items() if k != "PYTEST_ADDOPTS"}
    env.update({"FAULTY_STATE_DIR": str(folder / "state"), "RAY_CONFORMANCE_TRANSPORT_MAX_BYTES": "8MiB"})
    env.update(extra_env or {})
    cmd = [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-q", f"--rootdir={CHECKS}", "-c", os.devnull,
           f"--conformance-manifest={manifest}", f"--conformance-out={out}", *tests]
    t0 = time.monotonic()
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=RUN_TIMEOUT_S, env=env, cwd=str(folder))
    report_path = out / "report.json"
    report = json.loads(report_path.read_text()) if report_path.exists() else None
    return Run(proc.returncode, report, proc.stdout + proc.stderr, time.monotonic() - t0, out)


def node_ids(checks: tuple[str, ...]) -> list[str]:
    return [f"{CHECKS / TESTS[c][0]}::{TESTS[c][1]}" for c in checks]


def start(key: str, base: Path) -> Run:
    folder = base / key
    folder.mkdir(parents=True, exist_ok=True)
    if key == GOOD:
        files = [str(CHECKS / f) for f in (DEV, NODES, XFER)]
        return run_suite(MANIFESTS / "recovery-simxfer.yaml", folder, files)
    v = next(x for x in VARIANTS + [HANG] if x.name == key)
    env = {"CONFORMANCE_DATA_DIR": str(hang_data_dir(folder / "data"))} if v.hang else {}
    return run_suite(variant_manifest(v, folder), folder, node_ids(v.checks), env)


class Runs:
    """Suite runs submitted up front, two at a time; tests wait for the one they need."""

    def __init__(self, keys: list[str], base: Path) -> None:
        self.pool = ThreadPoolExecutor(max_workers=PARALLEL_RUNS, thread_name_prefix="recovery-teeth")
        self.futures: dict[str, Future[Run]] = {k: self.pool.submit(start, k, base) for k in keys}

    def get(self, key: str) -> Run:
        return self.futures[key].result()

    def close(self) -> None:
        self.pool.shutdown(wait=True, cancel_futures=True)


def _key_of(item: pytest.Item) -> str | None:
    if Path(str(item.fspath)).resolve() != Path(__file__).resolve():
        return None
    callspec = getattr(item, "callspec", None)
    if callspec is not None and "variant" in callspec.params:
        return callspec.params["variant"].name
    name = getattr(item, "originalname", item.name)
    return {"test_good_plugin_passes_every_recovery_check": GOOD,
            "test_hanging_scenario_is_reported_and_the_run_goes_on": HANG.name}.get(name)


@pytest.fixture(scope="session")
def runs(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Runs]:
    keys = []
    for item in request.session.items:
        key = _key_of(item)
        if key and key not in keys:
            keys.append(key)
    # The slowest first, so that the pool's tail is short.
    keys.sort(key=lambda k: (k != GOOD, k != HANG.name))
    r = Runs(keys, tmp_path_factory.mktemp("recovery-teeth"))
    yield r
    r.close()


# ------------------------------------------------------------------------------ the cases
pytestmark = pytest.mark.slow


@pytest.mark.parametrize("variant", VARIANTS, ids=[v.name for v in VARIANTS])
def test_variant_is_caught_by_its_check(variant: Variant, runs: Runs) -> None:
    run = runs.get(variant.name)
    got = run.outcomes()
    wrong = {c: got.get(c) for c in variant.fails if got.get(c) != "fail"}
    assert not wrong, (f"{variant.name} should fail {list(variant.fails)}; got {wrong}\n"
                       + "\n".join(f"{c}: {run.check(c)['reason']}" for c in wrong) + f"\n{run.output[-2000:]}")
    broken = {c: (got.get(c), run.check(c)["reason"]) for c in variant.passes if got.get(c) != "pass"}
    assert not broken, f"{variant.name} should pass {list(variant.passes)}; got {broken}"


def test_good_plugin_passes_every_recovery_check(runs: Runs) -> None:
    run = runs.get(GOOD)
    got = run.outcomes()
    assert got.pop("FR-016") == "waived", "FR-016 fails on Ray 2.60 for every transport and must show `waived`"
    for cid in ("FR-017", "FR-018"):   # partitions need a fault driver that can make them: tests/test_hosts.py
        assert got.pop(cid) == "not_applicable", run.check(cid)
    bad = {c: (o, run.check(c)["reason"]) for c, o in got.items() if o != "pass"}
    assert not bad, f"the reference plugin must pass every recovery check: {bad}"
    waived = run.check("FR-016")
    assert waived["waiver"]["issue"].endswith("/61014") and waived["waiver"]["original_outcome"] == "fail"
    assert "Unsupported tensor transport protocol" in waived["reason"]
    section = run.report["sections"]["Recovery"]
    timed = {s["check"] for s in section["data"]["scenarios"]}
    assert timed == {f"FR-{i:03d}" for i in range(1, 17)}
    assert all(s["elapsed_s"] <= s["bound_s"] for s in section["data"]["scenarios"] if s["outcome"] == "ok")
    md = (run.out / "report.md").read_text()
    assert "## Recovery" in md and "| FR-004 |" in md and "WAIVED" in md


def test_hanging_scenario_is_reported_and_the_run_goes_on(runs: Runs) -> None:
    run = runs.get(HANG.name)
    got = run.outcomes()
    fr3 = run.check("FR-003")
    assert got["FR-003"] == "fail", fr3
    assert "crash-and-kill-restartable-holder" in fr3["reason"] and "still running after" in fr3["reason"]
    assert "treated as a hang" in fr3["reason"]
    assert got["FR-001"] == "pass" and got["FR-005"] == "pass", "the checks after the hang must still run and pass"
    rec = next(s for s in run.report["sections"]["Recovery"]["data"]["scenarios"] if s["check"] == "FR-003")
    assert rec["outcome"] == "timeout" and HANG_TIMEOUT_S <= rec["elapsed_s"] < HANG_TIMEOUT_S + 30
    assert not run.report["interrupted"], "a hang interrupted by the hard timeout must not end the run"
