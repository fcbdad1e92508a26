"""The teeth table (tests/teeth.yaml): load it, turn a run into a manifest and a pytest command,
run it, and judge its report. Pure functions except `execute`; tests/certify/test_teeth.py is the thin
pytest layer over them.
"""
from __future__ import annotations

import copy
import json
import os
import shutil
import subprocess
import sys
import threading
import time
from collections import deque
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, field
from functools import lru_cache, partial
from pathlib import Path
from typing import Any, Callable

import yaml

from conformance.catalog.check_index import check_module, tests_of_checks
from conformance.run.command import suite_command
from conformance.run.outcomes import HOST_PREFIX

ROOT = Path(__file__).resolve().parents[2]
TABLE = ROOT / "tests" / "teeth.yaml"
BROKEN = ROOT / "tests" / "broken_plugins"
CHECKS = ROOT / "conformance" / "checks"
RUN_TIMEOUT_S = 900
FAILED = ("fail", "error")
# where broken_transports.VendorFolderNoUnlink stages (its VENDOR_STAGING_DIR): files of dead sources there are removed
VENDOR_STAGING_DIR = "/dev/shm/rc-teeth-staging"
# where broken_transports.TmpDescriptorKeptOpen keeps its descriptor files (its TMP_STAGING_DIR)
TMP_STAGING_DIR = "/tmp/rc-teeth-tmpstaging"
# where faulty.FailNthReceiveKeepsStaging stages, a folder per Ray session (its KILLED_STAGING_DIR)
KILLED_STAGING_DIR = "/tmp/rc-teeth-killedstaging"


def reap_ended_sessions(root: str = KILLED_STAGING_DIR) -> int:
    """Remove the per-session folders below `root` whose Ray session has no live process: a killed
    source's file is that row's evidence while it runs (rows run side by side), litter after.
    Returns how many folders."""
    import shutil

    from conformance.cluster.process_owners import _argv, _pids, session_of

    try:
        folders = os.listdir(root)
    except OSError:
        return 0
    live = {os.path.basename(os.path.realpath(s)) for s in (session_of(_argv(p)) for p in _pids()) if s}
    ended = [f for f in folders if f not in live]
    for f in ended:
        shutil.rmtree(os.path.join(root, f), ignore_errors=True)
    try:
        os.rmdir(root)
    except OSError:
        pass
    return len(ended)


def reap_leftovers() -> int:
    """Remove what leaking variants' dead processes left in /dev/shm (at the top and in the one
    vendor folder a variant stages into) and in the temp folder a variant keeps files in;
    returns how many files."""
    from conformance.simulated.transport import reap_orphaned_segments

    reaped = (reap_orphaned_segments() + reap_orphaned_segments(VENDOR_STAGING_DIR)
              + reap_orphaned_segments(TMP_STAGING_DIR) + reap_ended_sessions())
    for folder in (VENDOR_STAGING_DIR, TMP_STAGING_DIR):
        try:
            os.rmdir(folder)        # once empty: nothing of the table's runs stays behind
        except OSError:
            pass                    # absent, or a live variant still stages there
    return reaped


@dataclass(frozen=True)
class TeethRun:
    id: str
    base: str
    set: dict[str, Any]
    env: dict[str, str]
    catches: dict[str, tuple[str, ...]]   # check id -> the phrases its failure reason must all contain
    may_fail: tuple[str, ...]
    passes: tuple[str, ...]
    not_applicable: tuple[str, ...]
    waived: tuple[str, ...]
    files: tuple[str, ...]
    phase: int
    also: tuple[str, ...]
    data: dict[str, dict[str, Any]]
    slow: bool = False
    guards: tuple[str, ...] = ()   # checks whose false alarm this good run is known to catch (`guards`)
    # check id -> the phrases its FIRST attempt's failure must contain: the row's plugin fails it
    # intermittently, the run re-runs it (tiers/tiers.yaml flakes.retries) and it must end `flaky`
    flaky: dict[str, tuple[str, ...]] = field(default_factory=dict)

    @property
    def good(self) -> bool:
        return not self.catches and not self.flaky

    @property
    def named_checks(self) -> tuple[str, ...]:
        return tuple(dict.fromkeys([*self.catches, *self.flaky, *self.may_fail, *self.passes, *self.waived]))

    @property
    def judged_checks(self) -> tuple[str, ...]:
        """The checks whose outcome the row asserts: catches must fail, passes must pass, waived
        must be waived.

        A `may_fail` check asserts nothing (any outcome but skip is fine), so a run without
        `files` does not start its tests: it would only cost time. With `files` the module
        runs whole and `may_fail` permits those failures.
        """
        return tuple(dict.fromkeys([*self.catches, *self.flaky, *self.passes, *self.waived]))


@dataclass
class RunResult:
    rc: int
    report: dict[str, Any] | None
    output: str
    wall_s: float = 0.0
    out: Path = field(default_factory=Path)

    def check(self, cid: str) -> dict[str, Any]:
        assert self.report is not None
        return next(c for c in self.report["checks"] if c["id"] == cid)


# ------------------------------------------------------------------------------ the table
@lru_cache(maxsize=1)
def load_table(path: Path = TABLE) -> dict[str, Any]:
    return yaml.safe_load(path.read_text())


def runs(table: dict[str, Any] | None = None) -> list[TeethRun]:
    table = table or load_table()
    out = []
    for r in table["runs"]:
        unknown = set(r) - {"id", "base", "set", "env", "catches", "may_fail", "passes", "not_applicable",
                            "waived", "files", "phase", "also", "data", "slow", "guards", "flaky"}
        assert not unknown, f"teeth.yaml {r.get('id')}: unknown field(s) {sorted(unknown)}"
        assert r["base"] in table["bases"], f"teeth.yaml {r['id']}: unknown base {r['base']!r}"
        files: list[str] = []
        for f in r.get("files", []):
            files += table["groups"].get(f, [f])
        out.append(TeethRun(
            id=r["id"], base=r["base"], set=dict(r.get("set", {})), env={k: str(v) for k, v in r.get("env", {}).items()},
            catches={k: phrases_of(v) for k, v in (r.get("catches") or {}).items()},
            may_fail=tuple(r.get("may_fail", [])), passes=tuple(r.get("passes", [])),
            not_applicable=tuple(r.get("not_applicable", [])), waived=tuple(r.get("waived", [])),
            files=tuple(files), phase=int(r.get("phase", 1)), also=tuple(r.get("also", [])),
            data=dict(r.get("data", {})), slow=bool(r.get("slow", False)), guards=tuple(r.get("guards", [])),
            flaky={k: phrases_of(v) for k, v in (r.get("flaky") or {}).items()}))
    ids = [r.id for r in out]
    assert len(ids) == len(set(ids)), "teeth.yaml: duplicate run ids"
    return out


def phrases_of(value: Any) -> tuple[str, ...]:
    """A `catches` entry's phrases: one phrase, or a list of them when the row's plugins break
    two things one check judges (each defect named by its own phrase; all must appear)."""
    return tuple(str(v or "") for v in value) if isinstance(value, list) else (str(value or ""),)


def run_by_id(run_id: str) -> TeethRun:
    return next(r for r in runs() if r.id == run_id)


def rows_for_check(cid: str, table: dict[str, Any] | None = None) -> list[str]:
    """The rows that hold check `cid`: those whose variant it must catch (or that show it waived),
    then the good rows that guard it against a false alarm (`guards`)."""
    rows = runs(table)
    return ([r.id for r in rows if cid in r.catches or cid in r.waived]
            + [r.id for r in rows if cid in r.guards])


UNIT_TESTS = ROOT / "tests" / "unit"


def unit_tests_naming(cid: str, folder: Path = UNIT_TESTS) -> list[str]:
    """The pure tests (tests/unit) whose own text, decorators included, names check `cid`: node ids."""
    import ast

    out = []
    for path in sorted(folder.glob("test_*.py")):
        text = path.read_text()
        if cid not in text:
            continue
        for node in ast.parse(text).body:
            if isinstance(node, ast.FunctionDef) and node.name.startswith("test"):
                start = min([d.lineno for d in node.decorator_list] + [node.lineno])
                source = "\n".join(text.splitlines()[start - 1:node.end_lineno])
                if cid in source:
                    out.append(f"{path.relative_to(ROOT).as_posix()}::{node.name}")
    return out


def ids_parametrized_by(cid: str, node_ids: list[str]) -> list[str]:
    """Of the collected `node_ids`, those a parameter names check `cid` in (`test_x[FR-001]`,
    `test_y[FR-001-nan]`): the tests the checklist generates per check (its judge, its params),
    which name no check in their text, so a brand-new check has them before anyone writes one."""
    import re

    own = re.compile(rf"\[(?:.*-)?{re.escape(cid)}(?:-.*)?\]$")
    return [n for n in node_ids if own.search(n)]


def collected_unit_tests(folder: Path = UNIT_TESTS) -> list[str]:
    """The node ids pytest collects in `folder` (a collection only: seconds, nothing runs)."""
    out = subprocess.run([sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "--collect-only", "-q",
                          str(folder.relative_to(ROOT))], cwd=ROOT, capture_output=True, text=True, timeout=300)
    return [line.strip() for line in out.stdout.splitlines() if "::" in line]


def check_selection(cid: str) -> list[str]:
    """What `make test-check ID=cid` runs: the check's unit tests (those naming it, and those the
    checklist parametrizes with it) and its teeth rows, as pytest node ids."""
    named = unit_tests_naming(cid)
    unit = named + [n for n in ids_parametrized_by(cid, collected_unit_tests()) if n.partition("[")[0] not in named]
    return unit + [f"tests/certify/test_teeth.py::test_teeth[{row}]" for row in rows_for_check(cid)]


def selection(run: TeethRun) -> list[str]:
    """The pytest arguments that select what the run needs (modules, or the judged checks' tests)."""
    if run.files:
        return [str(check_module(f)) for f in run.files]
    index = tests_of_checks()
    missing = [c for c in run.judged_checks if c not in index]
    assert not missing, f"{run.id}: no test is marked with {missing}"
    return list(dict.fromkeys(str(CHECKS / t) for c in run.judged_checks for t in index[c]))


def set_path(doc: dict[str, Any], dotted: str, value: Any) -> None:
    keys = dotted.split(".")
    node = doc
    for k in keys[:-1]:
        node = node.setdefault(k, {})
    node[keys[-1]] = value


def manifest_for(run: TeethRun, table: dict[str, Any] | None = None) -> dict[str, Any]:
    table = table or load_table()
    doc = copy.deepcopy(yaml.safe_load((ROOT / table["bases"][run.base]).read_text()))
    doc["plugin"] = {**doc.get("plugin", {}), "python_path": [str(BROKEN)]}
    doc["product"] = f"{doc.get('product', 'plugin')} [{run.id}]"
    for dotted, value in run.set.items():
        set_path(doc, dotted, value)
    return doc


def data_dir_for(run: TeethRun, folder: Path) -> Path:
    """A copy of the suite's data files with the run's checklist overrides; a row that catches
    defects runs with no re-runs (tiers.yaml flakes.retries 0): its twin fails every attempt alike,
    so a re-run would only double the time of each failure it shows (and its reason is the first
    attempt's, the one its `catches` phrase names)."""
    from conformance.catalog import datafiles

    for sub in ("tiers", "schemas"):
        shutil.copytree(datafiles.data_root() / sub, folder / sub, dirs_exist_ok=True)
    if no_retries(run):
        tiers = folder / "tiers" / "tiers.yaml"
        ladder = yaml.safe_load(tiers.read_text())
        ladder["flakes"] = {**(ladder.get("flakes") or {}), "retries": 0}
        tiers.write_text(yaml.safe_dump(ladder, sort_keys=False))
    path = folder / "tiers" / "checklist.yaml"
    doc = yaml.safe_load(path.read_text())
    for c in doc["checks"]:
        override = dict(run.data.get(c["id"], {}))
        if "params" in override:   # params merge, one by one
            c["params"] = {**c.get("params", {}), **override.pop("params")}
        c.update(override)
    path.write_text(yaml.safe_dump(doc, sort_keys=False))
    return folder


def no_retries(run: TeethRun) -> bool:
    """Whether the row runs without re-runs of failed checks: it catches defects and shows no flake."""
    return bool(run.catches) and not run.flaky


# ------------------------------------------------------------------------------ running
def bounded_process(cmd: list[str], env: dict[str, str], cwd: Path, what: str) -> tuple[int, str]:
    """(exit code, stdout + stderr) of `cmd`, at most RUN_TIMEOUT_S; -1 and a line naming `what`
    when it ran past that."""
    try:
        proc = subprocess.run(cmd, capture_output=True, text=True, timeout=RUN_TIMEOUT_S, env=env, cwd=str(cwd))
        return proc.returncode, proc.stdout + proc.stderr
    except subprocess.TimeoutExpired as exc:
        return -1, f"{what} did not finish within {RUN_TIMEOUT_S}s: {exc}"


def execute(run: TeethRun, base: Path, environ: dict[str, str] | None = None,
            once: Callable[[TeethRun, Path, dict[str, str] | None], RunResult] | None = None) -> RunResult:
    """One run in a fresh pytest process. `environ`: the environment to start from (default: this
    process's now); Runs passes the one it saw at its start, because tests running beside the table
    change os.environ for a while (monkeypatch.setenv) and a run must not inherit that.

    A check the row must catch that ended "not judged: host" gave no verdict on the twin: the host
    ran out of what a reference needed (TR-019's same wave through the suite's transport, beside
    the table's other lane and the main thread's tests: make test s32c). The row runs once more, in
    its own folder; the second run's verdict is the row's, the first one's named in its output.
    `once`: what one run does (the table's own tests pass a fake)."""
    once = once or _execute_once
    first = once(run, base / run.id.replace("/", "__"), environ)
    unjudged = host_unjudged(run, first.report)
    if not unjudged:
        return first
    again = once(run, base / (run.id.replace("/", "__") + "__again"), environ)
    note = f"[teeth] first run: {'; '.join(unjudged)}: ran again\n"
    return RunResult(again.rc, again.report, note + again.output, first.wall_s + again.wall_s, again.out)


def host_unjudged(run: TeethRun, report: dict[str, Any] | None) -> list[str]:
    """The checks the row must catch that its run left "not judged: host" (none: a verdict on each)."""
    if report is None:
        return []
    return [f"{c['id']} {(c.get('reason') or '')[:160]}" for c in report["checks"]
            if c["id"] in run.catches and c["outcome"] == "error" and (c.get("reason") or "").startswith(HOST_PREFIX)]


def _execute_once(run: TeethRun, folder: Path, environ: dict[str, str] | None) -> RunResult:
    folder.mkdir(parents=True, exist_ok=True)
    manifest = folder / "manifest.yaml"
    manifest.write_text(yaml.safe_dump(manifest_for(run), sort_keys=False))
    out = folder / "report"
    env = {k: v for k, v in (os.environ if environ is None else environ).items() if k != "PYTEST_ADDOPTS"}
    env["FAULTY_STATE_DIR"] = str(folder / "state")
    # The reference collective backend's group folders (conformance.simulated.collective.ROOT_ENV_VAR;
    # by default under /dev/shm/simcoll, shared by every run on the machine): each run's own, so no
    # run meets another's leftovers and none shows up in a quiet-host module's /dev/shm accounting
    # (tests/certify/test_hosts.py runs beside the table's first runs).
    env["SIMCOLL_DIR"] = str(folder / "simcoll")
    env.update(run.env)
    if run.data or no_retries(run):
        env["CONFORMANCE_DATA_DIR"] = str(data_dir_for(run, folder / "data"))
    cmd = suite_command(manifest, out, selection(run))
    t0 = time.monotonic()
    rc, output = bounded_process(cmd, env, folder, "the run")
    report_path = out / "report.json"
    report = json.loads(report_path.read_text()) if report_path.exists() else None
    return RunResult(rc, report, output, time.monotonic() - t0, out)


@dataclass(frozen=True)
class BesideJob:
    """Tests of the project's own run as one pytest process in a lane of the table, instead of in
    the session's main thread (tests/conftest.py: the unit lane). The main thread's serial tests
    are make test's critical path once the table's phases end (docs/test-time.md): a lane of the
    table, used from its busy middle, gives them back to the two cores while the main thread does
    the rest."""
    id: str
    nodeids: tuple[str, ...]


def run_beside(job: BesideJob, base: Path, environ: dict[str, str]) -> RunResult:
    """`job`'s tests in a fresh pytest process from the project's root (its node ids in an
    arguments file); the result's `output` is pytest's."""
    folder = base / job.id.replace("/", "__").replace(":", "_")
    folder.mkdir(parents=True, exist_ok=True)
    listed = folder / "tests.txt"
    listed.write_text("\n".join(job.nodeids) + "\n")
    cmd = [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-q", f"@{listed}"]
    env = {k: v for k, v in environ.items() if k != "PYTEST_ADDOPTS"}
    t0 = time.monotonic()
    rc, output = bounded_process(cmd, env, ROOT, "the tests")
    return RunResult(rc, None, output, time.monotonic() - t0, folder)


# ------------------------------------------------------------------------------ judging
def ran(report: dict[str, Any]) -> dict[str, dict[str, Any]]:
    """The checks whose tests ran in this run."""
    return {c["id"]: c for c in report["checks"] if c["tests"]}


def problems(run: TeethRun, result: RunResult) -> list[str]:
    """What is wrong with a run's outcomes against its row of the table (empty: nothing)."""
    if result.report is None:
        return [f"no report.json (exit {result.rc}):\n{result.output[-3000:]}"]
    got = ran(result.report)
    out = []
    for cid in (run.named_checks if run.files else run.judged_checks):
        if cid not in got:
            out.append(f"{cid} did not run")
    for cid, phrases in run.catches.items():
        c = got.get(cid)
        if c is None:
            continue
        if not phrases or not all(p.strip() for p in phrases):
            out.append(f"{cid}: {run.id} names no reason it expects (catches wants a phrase of the failure)")
        elif c["outcome"] != "fail":
            out.append(f"{cid} did not catch {run.id}: {c['outcome']} ({c['reason']})")
        else:
            for phrase in phrases:
                if phrase not in (c["reason"] or ""):
                    out.append(f"{cid} failed for another reason than {run.id} (wanted {phrase!r}): {c['reason']}")
    for cid, phrases in run.flaky.items():
        if cid in got:
            out += flaky_problems(run.id, cid, got[cid], phrases, result)
    allowed_fail = set(run.catches) | set(run.may_fail)
    for cid, c in got.items():
        o = c["outcome"]
        if cid in run.catches or cid in run.flaky:
            continue
        if o in FAILED and cid in allowed_fail:
            continue
        if o == "not_applicable" and cid in run.not_applicable:
            continue
        if cid in run.waived:
            if o != "waived":
                out.append(f"{cid} must be waived in {run.id}: {o} ({c['reason']})")
            continue
        if o != "pass":
            out.append(f"{cid} must pass in {run.id}: {o} ({(c['reason'] or '')[:500]})")
    if run.good:
        out += [f"verify would refuse this good run's evidence: {p}" for p in evidence_refusals(result.report)]
    out += unrecomputed_failures(run, got, result.report.get("manifest") or {})
    return out


def flaky_problems(row: str, cid: str, entry: dict[str, Any], phrases: tuple[str, ...],
                   result: RunResult) -> list[str]:
    """Issue 48: a check the row's plugin fails one time in three ends `flaky` with both attempts
    recorded (the first failed for the phrases' reason, the last passed), counts for nothing (every
    tier and capability profile that requires it names it blocking; none achieved rests on it),
    and report.md lists it for the SIG with its attempts."""
    report = result.report
    assert report is not None
    attempts = entry.get("attempts") or []
    if entry["outcome"] != "flaky":
        return [f"{cid} must be flaky in {row}: {entry['outcome']} ({entry['reason']}); attempts {attempts}"]
    out = [] if result.rc == 1 else [f"a run with a flaky check must exit 1 (it fell short), got {result.rc}"]
    if len(attempts) < 2 or attempts[0]["outcome"] not in FAILED or attempts[-1]["outcome"] != "pass":
        out.append(f"{cid}: flaky, but its attempts are not a failure then a pass: {attempts}")
    elif not all(p in (attempts[0]["reason"] or "") for p in phrases):
        out.append(f"{cid}: its first attempt failed for another reason than {row} (wanted {phrases}): "
                   f"{attempts[0]['reason']}")
    counted = [t["name"] for t in report["tiers"] if t["achieved"] and cid in (t.get("required_checks") or [])]
    counted += [p["name"] for p in report.get("capabilities") or []
                if p["state"] == "certified" and cid in (p.get("required_checks") or [])]
    if counted:
        out.append(f"{cid} is flaky, yet {', '.join(counted)} counted it")
    holders = [t for t in report["tiers"] if cid in (t.get("required_checks") or [])]
    holders += [p for p in report.get("capabilities") or [] if p.get("declared") and cid in (p.get("required_checks") or [])]
    for h in holders:
        if {"id": cid, "outcome": "flaky"} not in [{"id": b.get("id"), "outcome": b.get("outcome")}
                                                   for b in h.get("blocking") or []]:
            out.append(f"{h['name']} requires {cid} but does not name it blocking as flaky: {h.get('blocking')}")
    if not holders:
        out.append(f"{cid}: no tier or profile requires it; pick a counted check for a flaky row")
    md = (result.out / "report.md").read_text()
    listed = md.partition("## Flaky checks for the SIG")[2]
    if f"### {cid}:" not in listed or not all(f"- attempt {n} of " in listed for n in (1, 2)):
        out.append(f"report.md does not list {cid} for the SIG with both attempts")
    if (report.get("summary") or {}).get("flaky") != sum(c["outcome"] == "flaky" for c in report["checks"]):
        out.append(f"the summary's flaky count is not the checks': {report.get('summary')}")
    return out


def unrecomputed_failures(run: TeethRun, got: dict[str, dict[str, Any]], manifest: dict[str, Any]) -> list[str]:
    """Issue 43: a failure the row catches is one `verify` also recomputes: the judge of a check
    whose evidence is its whole verdict gives no pass on the evidence the failing run recorded
    (so a vendor re-signing the failure as a pass is refused)."""
    from conformance.catalog import data
    from conformance.report import judges

    released = data.load_checklist().by_id()
    out = []
    for cid in run.catches:
        entry, check = got.get(cid), released.get(cid)
        if entry is None or check is None or entry.get("outcome") != "fail":
            continue
        judge = judges.judge_for(check)
        if judge is None or not judge.decides_all:
            continue
        params = entry.get("params") if isinstance(entry.get("params"), dict) else None
        verdict = judges.judge(check, entry.get("metrics") or {}, manifest, params=params)
        if verdict.outcome == "pass":
            out.append(f"{cid} failed in {run.id} but its judge passes the evidence it recorded "
                       f"({verdict.reason}): verify could not recompute the failure")
    return out


def evidence_refusals(report: dict[str, Any]) -> list[str]:
    """What verify's evidence judging (conformance/signing/evidence.py) refuses in a run's own
    report, judged under the params the run used (a row's `data:` overrides them): a good plugin's
    real run must never be refused by our own verifier, whatever area its checks are in."""
    import dataclasses

    from conformance.catalog import data
    from conformance.signing.evidence import evidence_problems

    recorded = {c["id"]: c.get("params") for c in report["checks"]}
    checklist = data.load_checklist()
    checklist = dataclasses.replace(checklist, checks=tuple(
        dataclasses.replace(c, params=recorded[c.id]) if isinstance(recorded.get(c.id), dict) else c
        for c in checklist.checks))
    problems, _ = evidence_problems(report["checks"], checklist, report.get("manifest") or {})
    return problems


def schedule(selected: list[TeethRun], table: dict[str, Any] | None = None) -> list[tuple[int, list[TeethRun]]]:
    """(lanes, runs) per phase, ascending; within a phase the longest-known runs go first: the
    good runs and the `slow` ones, then those with whole modules, then the rest, so the phase
    does not end on one long run while the other lanes stand idle."""
    table = table or load_table()
    lanes = {int(k): int(v) for k, v in table["phases"].items()}
    phases: dict[int, list[TeethRun]] = {}
    for r in selected:
        phases.setdefault(r.phase, []).append(r)
    return [(lanes.get(p, 1), sorted(rs, key=lambda r: (not (r.good or r.slow), not r.files))) for p, rs in sorted(phases.items())]


class IdleMeter:
    """The machine's idle share of its CPU over about the last `window_s` seconds (/proc/stat).

    Read on demand: each call adds a sample, and the share is taken between the newest sample and
    the oldest one still inside the window. Until a window's worth of samples exists it says 0
    (not idle), so a spare lane never opens on the first glance at a machine.
    """

    def __init__(self, window_s: float = 5.0) -> None:
        self.window_s = window_s
        self.samples: deque[tuple[float, int, int]] = deque()

    @staticmethod
    def _read() -> tuple[int, int]:
        with open("/proc/stat") as f:
            ticks = [int(v) for v in f.readline().split()[1:9]]
        return ticks[3] + ticks[4], sum(ticks)      # idle + iowait, all

    def idle_fraction(self) -> float:
        now = time.monotonic()
        idle, total = self._read()
        self.samples.append((now, idle, total))
        while len(self.samples) > 2 and now - self.samples[1][0] >= self.window_s:
            self.samples.popleft()
        t0, idle0, total0 = self.samples[0]
        if now - t0 < self.window_s * 0.8 or total == total0:
            return 0.0
        return (idle - idle0) / (total - total0)


class Runs:
    """The selected runs, phase by phase on a background thread; tests wait for the one they judge.

    Started when collection ends (tests/conftest.py), so the table's runs overlap the project's
    other tests instead of waiting for test_teeth.py's turn. A phase of one lane (the runs that
    measure performance) runs alone: it waits for `quiet`, set when the session's other tests are
    done. `pause` waits for the runs in progress and starts no new one until `resume` (tests that
    assert on the host's state); `narrow(n)` lets at most n run at once (tests that can share the
    machine with one run but not two). `close` lets the runs in progress finish and starts no
    further one (an `-x` stop or Ctrl-C does not wait for the whole table).
    """

    def __init__(self, selected: list[TeethRun], base: Path, paused: bool = False, *,
                 execute_run: Callable[[TeethRun, Path, dict[str, str]], RunResult] | None = None,
                 table: dict[str, Any] | None = None, reap: Callable[[], int] | None = None,
                 idle: Callable[[], float] | None = None, beside: tuple[BesideJob, ...] = (),
                 run_job: Callable[[BesideJob, Path, dict[str, str]], RunResult] | None = None) -> None:
        # execute_run / table / reap / idle: what a run does, the phases' lanes, the clean-up after
        # a phase, the machine's idle share. The table's own tests pass fakes here: patching this
        # module's globals instead would hand the fakes to the real table, whose runs go on beside
        # those tests.
        table = table or load_table()
        phases = schedule(selected, table)
        self.execute_run = execute_run or execute
        self.run_job = run_job or run_beside
        self.beside = beside    # jobs of the project's own tests, first in the table's main phase (beside_phase)
        self.beside_phase = next((rs[0].phase for lanes, rs in phases if lanes > 1 and rs[0].phase >= 1),
                                 phases[0][1][0].phase if phases else None)
        self.reap = reap
        spare = table.get("spare_lane") or {}
        self.spare_idle: float | None = float(spare["idle_fraction"]) if spare else None
        self.idle = idle or IdleMeter(float(spare.get("window_s", 5))).idle_fraction
        self.spare_starts: list[str] = []    # runs that started in the spare lane
        self.waiting: list[int] = []         # tickets of the runs waiting to start, in order
        self.futures: dict[str, Future[RunResult]] = {r.id: Future() for _, rs in phases for r in rs}
        self.futures.update({job.id: Future() for job in beside})
        self.environ = dict(os.environ)      # before any test changed it
        self.stopping = threading.Event()
        self.quiet = threading.Event()
        self.state = threading.Condition()
        self.lane_limit: int | None = 0 if paused else None   # None: the phase's lanes
        self.in_flight = 0
        self.walls: dict[str, float] = {}    # run id -> seconds, in the order they finished
        self.spans: dict[str, tuple[float, float]] = {}   # run id -> (start, end), seconds after self.started
        self.phase_spans: list[tuple[int, int, float, float, float]] = []   # (phase, lanes, waited from, start, end)
        self.started = time.monotonic()
        self.finished: float | None = None
        self.pool = ThreadPoolExecutor(max_workers=1, thread_name_prefix="teeth-phases")
        self.driver = self.pool.submit(self._drive, phases, base)

    def _admit(self, job_id: str, lanes: int, ticket: int) -> None:
        """Wait for this run's turn (runs start in the phase's order) and a free lane.

        A phase of two or more lanes has one spare lane (`spare_lane` in the table): it opens
        while the machine has been idle for at least `idle_fraction` of its CPU, which is what the
        runs that mostly wait (hang bounds, node deaths, heartbeats) leave, and what a quiet-host
        module that narrowed the table to one lane leaves (test_hosts mostly waits too). Never
        while the table is paused.
        """
        with self.state:
            self.waiting.append(ticket)
            try:
                while True:
                    if self.stopping.is_set():
                        raise RuntimeError(f"{job_id}: not run, the session is ending")
                    if ticket == min(self.waiting):
                        limit = lanes if self.lane_limit is None else min(lanes, self.lane_limit)
                        if self.in_flight < limit:
                            break
                        if (self.spare_idle is not None and lanes > 1 and limit > 0
                                and self.in_flight == min(limit, lanes) and self.idle() >= self.spare_idle):
                            self.spare_starts.append(job_id)
                            break
                    self.state.wait(timeout=1.0)
            finally:
                self.waiting.remove(ticket)
            self.in_flight += 1
            self.state.notify_all()

    def _run(self, run: TeethRun, base: Path, lanes: int = 1, ticket: int = 0) -> RunResult:
        return self._lane(run.id, lambda: self.execute_run(run, base, self.environ), lanes, ticket)

    def _lane(self, job_id: str, call: Callable[[], RunResult], lanes: int, ticket: int) -> RunResult:
        self._admit(job_id, lanes, ticket)
        t0 = time.monotonic() - self.started
        try:
            return call()
        finally:
            self.spans[job_id] = (t0, time.monotonic() - self.started)
            with self.state:
                self.in_flight -= 1
                self.state.notify_all()

    def pause(self) -> None:
        """Start no new run, and return once the runs in progress have ended."""
        self.narrow(0)

    def narrow(self, lanes: int) -> None:
        """At most `lanes` runs at once from now on; returns once no more than that are in progress."""
        with self.state:
            self.lane_limit = lanes
            self.state.notify_all()
            self.state.wait_for(lambda: self.in_flight <= lanes)

    def resume(self) -> None:
        with self.state:
            self.lane_limit = None
            self.state.notify_all()

    def _drive(self, phases: list[tuple[int, list[TeethRun]]], base: Path) -> None:
        reap = self.reap
        if reap is None:
            reap = reap_leftovers
        for lanes, rs in phases:
            waited = time.monotonic() - self.started
            if lanes == 1:
                self.quiet.wait()
            begun = time.monotonic() - self.started
            spare = 1 if self.spare_idle is not None and lanes > 1 else 0
            jobs = list(self.beside) if rs and rs[0].phase == self.beside_phase else []
            with ThreadPoolExecutor(lanes + spare + len(jobs), thread_name_prefix="teeth") as pool:
                submitted = [(job.id, pool.submit(self._lane, job.id, partial(self.run_job, job, base, self.environ),
                                                  lanes, k - len(jobs))) for k, job in enumerate(jobs)]
                submitted += [(r.id, pool.submit(self._run, r, base, lanes, i)) for i, r in enumerate(rs)]
                for job_id, fut in submitted:
                    try:
                        result = fut.result()
                    except BaseException as exc:  # noqa: BLE001 - hand it to the test that waits
                        self.futures[job_id].set_exception(exc)
                        continue
                    self.walls[job_id] = result.wall_s
                    self.futures[job_id].set_result(result)
            reap()   # leaking variants' segments, once their processes are gone
            self.phase_spans.append((rs[0].phase if rs else 0, lanes, waited, begun, time.monotonic() - self.started))
        self.finished = time.monotonic()

    def get(self, run_id: str) -> RunResult:
        if run_id not in self.futures:
            raise KeyError(f"{run_id}: not among the runs this session started")
        return self.futures[run_id].result()

    def summary(self, slowest: int = 8) -> list[str]:
        """Where the table's time went: its wall time, the sum of its runs' times, the slowest runs."""
        if not self.walls:
            return []
        span = (self.finished or time.monotonic()) - self.started
        lines = [f"teeth: {len(self.walls)} runs in {span:.0f}s (runs' own times add up to "
                 f"{sum(self.walls.values()):.0f}s; {len(self.spare_starts)} started in the spare lane); slowest:"]
        lines += [f"  {w:5.0f}s  {rid}" for rid, w in sorted(self.walls.items(), key=lambda kv: -kv[1])[:slowest]]
        return lines + self.timeline()

    def timeline(self, every_run: bool = True) -> list[str]:
        """When each phase ran (a lone phase first waits for the project's other tests), the runs
        each phase ended on (what a phase's tail waited for while lanes stood idle), and with
        `every_run` every run's start and end: where the table's wall time went, not only its sum."""
        lines = []
        for phase, lanes, waited, begun, ended in self.phase_spans:
            inside = sorted(((rid, span) for rid, span in self.spans.items()
                             if begun - 1e-6 <= span[0] <= ended + 1e-6), key=lambda kv: -kv[1][1])
            wait = f", waited for the other tests {waited:.0f}-{begun:.0f}s" if lanes == 1 else ""
            last = ", ".join(f"{rid} {s:.0f}-{e:.0f}s" for rid, (s, e) in inside[:3])
            lines.append(f"teeth phase {phase} ({lanes} lane{'s' if lanes > 1 else ''}){wait}: "
                         f"{begun:.0f}-{ended:.0f}s, {len(inside)} runs; ended on {last}")
        if every_run:
            lines += [f"  {s:5.0f}-{e:5.0f}s  {rid}" for rid, (s, e) in sorted(self.spans.items(), key=lambda kv: kv[1])]
        return lines

    def close(self) -> None:
        self.stopping.set()
        self.quiet.set()
        with self.state:
            self.state.notify_all()
        self.pool.shutdown(wait=True)


# ------------------------------------------------------------------------------ one row by hand
def describe(run: TeethRun, result: RunResult) -> list[str]:
    """Per check the row names, its outcome and reason in this result, then what the table would
    say about it: what you read to pick a `catches` phrase or to see why a row went red."""
    lines = [f"{run.id}: exit {result.rc}, {result.wall_s:.0f}s, report in {result.out}"]
    got = ran(result.report) if result.report is not None else {}
    for cid in run.named_checks if run.files else run.judged_checks:   # may_fail runs only with files
        c = got.get(cid)
        wanted = f" (catches {' and '.join(map(repr, run.catches[cid]))})" if cid in run.catches else ""
        lines.append(f"  {cid}{wanted}: " + (f"{c['outcome']}: {c['reason']}" if c else "did not run"))
    lines += [f"  PROBLEM {p}" for p in problems(run, result)] or ["  as the table wants"]
    return lines


if __name__ == "__main__":
    # python tests/support/teeth.py ROW_ID ...: run those rows one at a time and print what each check said
    import argparse
    import tempfile

    parser = argparse.ArgumentParser(description="Run teeth rows one at a time; print each named check's "
                                                 "outcome and reason, and the row's problems.")
    parser.add_argument("rows", nargs="*", help="row ids of tests/teeth.yaml")
    parser.add_argument("--out", type=Path, help="where the runs' folders go (default: a new temporary folder)")
    parser.add_argument("--for-check", metavar="ID", help="print the pytest node ids of check ID's unit tests and "
                                                          "teeth rows (what `make test-check ID=...` runs), and exit")
    args = parser.parse_args()
    if args.for_check:
        from conformance.catalog.data import load_suite_data
        if args.for_check not in {c.id for c in load_suite_data().checklist.active()}:
            print(f"error: --for-check: {args.for_check!r} is not an active check id of tiers/checklist.yaml",
                  file=sys.stderr)
            sys.exit(2)
        print("\n".join(check_selection(args.for_check)))
        sys.exit(0)
    if not args.rows:
        parser.error("name at least one row id, or --for-check ID")
    known = {r.id: r for r in runs()}
    unknown = [r for r in args.rows if r not in known]
    if unknown:
        print(f"error: rows: unknown id(s) {unknown}; expected ids of tests/teeth.yaml", file=sys.stderr)
        sys.exit(2)
    base = args.out or Path(tempfile.mkdtemp(prefix="teeth-"))
    failed = 0
    for rid in args.rows:
        res = execute(known[rid], base)
        failed += bool(problems(known[rid], res))
        print("\n".join(describe(known[rid], res)), flush=True)
        reap_leftovers()   # a leaking variant's segments, once its processes are gone
    sys.exit(1 if failed else 0)
