"""State and hooks of one conformance run inside pytest (registered by conformance.plugin)."""
from __future__ import annotations

import datetime as dt
import os
import shutil
import sys
import threading
import time
from pathlib import Path
from typing import Any

import pytest

from conformance import shapes
from conformance.cluster import ClusterManager, ClusterShape, ClusterStartError, prepare_driver
from conformance.data import SuiteData, load_suite_data
from conformance.environment import fingerprint
from conformance.errors import UserError
from conformance.exit_codes import WATCHDOG_EXIT
from conformance.manifest import Manifest, load_manifest
from conformance.report import build_report, now_iso, tier_table, validate_report, write_json, write_junit, write_markdown
from conformance.report import write_html
from conformance.results import NOT_APPLICABLE_PREFIX, TestRecord, aggregate
from conformance.selection import selection_record
from conformance.timeouts import hard_timeout
from conformance.waits import _carried_timeout

CHECKS_DIR = Path(__file__).resolve().parent / "checks"
REPORT_FILES = ("report.json", "report.md", "junit.xml", "report.intoto.json", "report.html")


def _first_line(text: str, limit: int = 600) -> str:
    for line in text.strip().splitlines():
        if line.strip():
            return line.strip()[:limit]
    return ""


def _reason_from_excinfo(excinfo: pytest.ExceptionInfo[BaseException]) -> str:
    exc = excinfo.value
    msg = str(exc).strip()
    if isinstance(exc, AssertionError) or type(exc).__name__ == "Failed":
        # `assert cond, msg` → msg first; pytest appends the introspection below it.
        return _first_line(msg) or "assertion failed"
    return f"{type(exc).__name__}: {_first_line(msg)}" if msg else type(exc).__name__


class ConformanceRun:
    """One run: manifest, suite data, clusters, per-test records, report writing."""

    def __init__(self, config: pytest.Config, manifest: Manifest, data: SuiteData, out_dir: Path) -> None:
        self.config = config
        self.manifest = manifest
        self.data = data
        self.out_dir = out_dir
        self.checks_dir = CHECKS_DIR
        self.ray_address: str | None = config.getoption("conformance_ray_address")
        self.default_timeout: float = config.getoption("conformance_timeout")
        self.setup_timeout: float = config.getoption("conformance_setup_timeout")
        self.hang_grace: float = config.getoption("conformance_hang_grace")
        self.clusters = ClusterManager(manifest, self.ray_address)
        self.records: dict[str, TestRecord] = {}
        self.item_checks: dict[str, str] = {}
        self.started_at = now_iso()
        self.t0 = time.monotonic()
        self.devices: dict[str, Any] = {}
        self.sections: dict[str, Any] = {}
        self.report: dict[str, Any] | None = None
        self.written = False
        self._write_lock = threading.Lock()
        self.manager_cls: type | None = None
        self.area_timings: dict[str, float] = {}
        self.deselected: list[str] = []
        self.collected_whole = False
        self.not_run_reason: str | None = None   # set when the preflight stops the run
        self.report_extras: Any = None           # conformance.run_hooks.RunHelp: adds preflight, logs, next steps
        self._fault_driver: Any = None

    @classmethod
    def from_config(cls, config: pytest.Config) -> "ConformanceRun":
        manifest = load_manifest(config.getoption("conformance_manifest"))
        data = load_suite_data()
        out = config.getoption("conformance_out")
        out_dir = Path(out) if out else Path("reports") / manifest.product_slug
        return cls(config, manifest, data, out_dir.resolve())

    # ------------------------------------------------------------------ driver set-up
    def prepare(self) -> type:
        """Inject the manager in this process (once); idempotent."""
        if self.manager_cls is None:
            self.manager_cls = prepare_driver(self.manifest)
            self.clusters.manager = self.manager_cls
        return self.manager_cls

    def fault_driver(self) -> Any:
        """The configured fault driver (CLI over manifest; None if none): conformance.recovery.faults."""
        if self._fault_driver is None:
            from conformance.recovery.faults import driver_spec, load_driver
            spec = driver_spec(self.manifest, self.config.getoption("conformance_fault_driver"),
                               self.config.getoption("conformance_fault_driver_options"))
            self._fault_driver = load_driver(spec) if spec else False
        return self._fault_driver or None

    def cluster(self, shape: ClusterShape, fresh: bool = False) -> Any:
        self.prepare()
        handle = self.clusters.ensure(shape, fresh=fresh)
        if shape.name == "shared" and not self.devices:
            self.devices = self._detect_devices()
        return handle

    def _detect_devices(self) -> dict[str, Any]:
        import ray

        name = self.manifest.resource_name
        nodes = []
        for n in ray.nodes():
            if not n.get("Alive"):
                continue
            res = n.get("Resources", {})
            nodes.append({"node_id": n["NodeID"], "count": res.get(name, 0),
                          "accelerator_type": (n.get("Labels") or {}).get("ray.io/accelerator-type"),
                          "labels": n.get("Labels") or {}})
        return {"resource": name, "nodes": nodes, "total": sum(x["count"] for x in nodes)}

    # ------------------------------------------------------------------ collection
    @pytest.hookimpl(tryfirst=True)
    def pytest_collection_modifyitems(self, session: pytest.Session, config: pytest.Config,
                                      items: list[pytest.Item]) -> None:
        known = self.data.checklist.by_id()
        problems = []
        for item in items:
            marks = list(item.iter_markers("check"))
            if not marks:
                problems.append(f"{item.nodeid}: evidences no check (add @pytest.mark.check('XX-000'))")
                continue
            if len(marks) > 1 or len(marks[0].args) != 1:
                problems.append(f"{item.nodeid}: must name exactly one check")
                continue
            cid = marks[0].args[0]
            if cid not in known:
                problems.append(f"{item.nodeid}: names unknown check {cid!r} (not in tiers/checklist.yaml)")
                continue
            if known[cid].retired:
                problems.append(f"{item.nodeid}: names retired check {cid}")
                continue
            self.item_checks[item.nodeid] = cid
        collected_whole = any(Path(str(a).split("::")[0]).resolve() == self.checks_dir for a in config.args)
        self.collected_whole = collected_whole
        if collected_whole:
            covered = set(self.item_checks.values())
            for c in self.data.checklist.active():
                if c.id not in covered:
                    problems.append(f"checklist item {c.id} ({c.title}) has no test")
        problems += shapes.mark_problems(items)
        if problems:
            raise pytest.UsageError("conformance registry is inconsistent:\n  " + "\n  ".join(problems))
        items.sort(key=shapes.run_order)  # by shape rank, so equal shapes reuse one cluster; stable in a shape

    def pytest_deselected(self, items: list[pytest.Item]) -> None:
        self.deselected += [item.nodeid for item in items]

    # ------------------------------------------------------------------ execution
    def timeout_for(self, item: pytest.Item) -> float:
        cid = self.item_checks.get(item.nodeid)
        check = self.data.checklist.by_id().get(cid or "")
        return float(check.timeout_s) if check and check.timeout_s else self.default_timeout

    @pytest.hookimpl(wrapper=True)
    def pytest_runtest_setup(self, item: pytest.Item):  # type: ignore[no-untyped-def]
        with hard_timeout(self.setup_timeout, f"setup of {item.nodeid}", on_stuck=self.abort_stuck,
                          grace_s=self.hang_grace):
            return (yield)

    @pytest.hookimpl(wrapper=True)
    def pytest_runtest_call(self, item: pytest.Item):  # type: ignore[no-untyped-def]
        with hard_timeout(self.timeout_for(item), self.item_checks.get(item.nodeid, item.nodeid),
                          on_stuck=self.abort_stuck, grace_s=self.hang_grace):
            return (yield)

    @pytest.hookimpl(wrapper=True)
    def pytest_runtest_makereport(self, item: pytest.Item, call: pytest.CallInfo[None]):  # type: ignore[no-untyped-def]
        rep = yield
        cid = self.item_checks.get(item.nodeid)
        if cid is None:
            return rep
        rec = self.records.setdefault(item.nodeid, TestRecord(item.nodeid, cid, "error",
                                                               "the check did not finish (run interrupted)"))
        rec.duration_s += rep.duration
        from conformance.fixtures import METRICS_KEY
        rec.metrics.update(item.stash.get(METRICS_KEY, {}))
        if rep.skipped:
            text = rep.longrepr[2] if isinstance(rep.longrepr, tuple) else str(rep.longrepr)
            text = text.removeprefix("Skipped: ")
            if text.startswith(NOT_APPLICABLE_PREFIX):
                rec.outcome, rec.reason = "not_applicable", text[len(NOT_APPLICABLE_PREFIX):]
            else:
                rec.outcome, rec.reason = "skip", text
        elif rep.failed:
            exc = call.excinfo.value if call.excinfo is not None else None
            reason = _reason_from_excinfo(call.excinfo) if call.excinfo is not None else _first_line(str(rep.longrepr))
            carried = _carried_timeout(exc) if exc is not None else None
            if carried is not None:
                reason = str(carried)
            if rep.when == "call" and not isinstance(exc, ClusterStartError):
                rec.outcome, rec.reason = "fail", reason
            elif rec.outcome != "fail":
                rec.outcome = "error"
                rec.reason = reason if rep.when != "teardown" else f"teardown: {reason}"
        elif rep.when == "call" and rep.passed:
            rec.outcome, rec.reason = "pass", None
        if rep.when == "call" and rec.outcome == "fail":
            from conformance.results import active_waiver
            import datetime as _dt
            waiver = active_waiver(self.data.waivers, cid, _dt.date.today())
            if waiver is not None:  # shown as xfail: a known upstream limitation, never a pass
                rep.outcome = "skipped"
                rep.wasxfail = f"waived ({waiver.issue}): {rec.reason}"
        return rep

    # ------------------------------------------------------------------ reporting
    def build(self, *, interrupted: bool, reason: str | None, unfinished: str | None = None) -> dict[str, Any]:
        records = list(self.records.values())
        if unfinished:
            records.append(TestRecord(unfinished, self.item_checks.get(unfinished, ""), "fail",
                                      reason or "hung"))
        not_run = self.not_run_reason or ("not run: the run was interrupted" if interrupted else "no test for this check ran")
        checks = aggregate(records, self.data.checklist, self.data.waivers, not_run_reason=not_run)
        cluster = {"mode": self.clusters.last_mode, "nodes": self.clusters.last_nodes,
                   "address": self.ray_address, "notes": list(self.clusters.notes),
                   "history": list(self.clusters.history)}
        if cluster["mode"] is None:
            cluster["nodes"] = 0
        sections = dict(self.sections)
        from conformance.local_paths import display_path, portable_arg
        from conformance.next_steps import verified_shape
        report = build_report(
            data=self.data, manifest=self.manifest.data, manifest_sha256=self.manifest.sha256,
            manifest_path=display_path(self.manifest.path), environment=fingerprint(self.devices), cluster=cluster,
            started_at=self.started_at, finished_at=now_iso(), duration_s=time.monotonic() - self.t0,
            checks=checks, interrupted=interrupted, interrupted_reason=reason if interrupted else None,
            sections=sections, plugin_artifact=self._plugin_artifact(),
            selection=selection_record(checks, args=[portable_arg(a) for a in self.config.invocation_params.args], deselected=self.deselected,
                                       collect_only=bool(self.config.getoption("collectonly", False)),
                                       whole_checklist_collected=self.collected_whole),
            shape=verified_shape(self.devices, cluster["nodes"]))
        if self.report_extras is not None:
            self.report_extras.enrich(report)
        return report

    def _plugin_artifact(self) -> dict[str, str] | None:
        artifact = self.manifest.data.get("plugin", {}).get("artifact")
        if not artifact:
            return None
        from conformance.data import sha256_file
        path = self.manifest.base_dir / artifact
        return {"name": path.name, "sha256": sha256_file(path)} if path.is_file() else None

    def _archive_previous(self) -> None:
        """Never lose a previous run: move its files into previous/<timestamp>/."""
        existing = [self.out_dir / f for f in REPORT_FILES if (self.out_dir / f).exists()]
        if not existing:
            return
        stamp = dt.datetime.fromtimestamp((self.out_dir / existing[0].name).stat().st_mtime).strftime("%Y%m%dT%H%M%S")
        dest = self.out_dir / "previous" / stamp
        n = 1
        while dest.exists():
            dest = self.out_dir / "previous" / f"{stamp}-{n}"
            n += 1
        dest.mkdir(parents=True)
        for f in existing:
            shutil.move(str(f), dest / f.name)

    def write_reports(self, *, interrupted: bool, reason: str | None = None, unfinished: str | None = None) -> None:
        with self._write_lock:
            if self.written:
                return
            self.out_dir.mkdir(parents=True, exist_ok=True)
            self._archive_previous()
            report = self.build(interrupted=interrupted, reason=reason, unfinished=unfinished)
            validate_report(report)
            write_json(report, self.out_dir)
            write_markdown(report, self.out_dir)
            write_junit(report, self.records.values(), self.out_dir)
            write_html(report, self.out_dir)
            self.report = report
            self.written = True

    def abort_stuck(self, reason: str) -> None:
        """Watchdog: a check hung uninterruptibly. Write the report, then end the process."""
        current = getattr(self, "_current_nodeid", None)
        try:
            self.write_reports(interrupted=True, reason=reason, unfinished=current)
            sys.stderr.write(f"\nconformance: {reason}; report written to {self.out_dir}\n")
        finally:
            os._exit(WATCHDOG_EXIT)

    def pytest_runtest_logstart(self, nodeid: str, location: Any) -> None:
        self._current_nodeid = nodeid

    @pytest.hookimpl(trylast=True)
    def pytest_sessionfinish(self, session: pytest.Session, exitstatus: int) -> None:
        try:
            self.clusters.shutdown()
        except Exception as exc:  # noqa: BLE001 - the report matters more than a clean shutdown
            self.clusters.notes.append(f"cluster shutdown failed: {exc.__class__.__name__}")
        interrupted = exitstatus == pytest.ExitCode.INTERRUPTED
        self.write_reports(interrupted=interrupted, reason="interrupted (KeyboardInterrupt or stop)" if interrupted else None)

    def pytest_terminal_summary(self, terminalreporter: Any) -> None:
        if not self.report:
            return
        tr = terminalreporter
        tr.section("conformance tiers")
        tr.write_line(tier_table(self.report))
        tr.write_line("")
        tr.write_line(f"tier achieved: {self.report['tier'] or 'none'}")
        if self.report.get("partial"):
            tr.write_line(f"partial run ({len(self.report['selection']['not_run'])} check(s) not run): "
                          "not a certification run")
        tr.write_line(f"reports: {self.out_dir}/report.json, report.md, junit.xml, report.html")
