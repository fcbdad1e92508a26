"""State and hooks of one conformance run inside pytest (registered by conformance.plugin).

The hooks are a thin layer: the registry lint (conformance.run.registry_lint), the outcome mapping
(conformance.run.outcomes), the report writing (conformance.report.writer) and the watchdog
(conformance.run.watchdog) are plain modules with their own unit tests. The run itself is kept in
`config.stash[conformance.run.state.RUN]`; areas keep their state in the same stash.
"""
from __future__ import annotations

import datetime as dt
import os
import sys
import time
from collections.abc import Generator
from contextlib import nullcontext
from pathlib import Path
from typing import Any

import pytest

from conformance.catalog.data import SuiteData, load_suite_data, waivers_for
from conformance.catalog.manifest import Manifest, load_manifest
from conformance.catalog.selection import run_environment, selection_record
from conformance.catalog.vendor_calls import HangRecord
from conformance.cluster import shapes
from conformance.cluster.manager import ClusterManager, ClusterShape, ClusterStartError, ClusterStopHung, manifests_own, prepare_driver
from conformance.report.build import TERMINAL_BLOCKERS_WIDTH, build_report, now_iso, ran_lines, tier_table
from conformance.report.environment import fingerprint
from conformance.report.results import TestRecord, active_waiver, aggregate, should_retry
from conformance.report.writer import ReportWriter
from conformance.run.nodes import selection_nodes
from conformance.run.outcomes import apply_phase, new_record, waiver_xfail
from conformance.run.registry_lint import lint_registry
from conformance.run.state import BUDGET_KEY, METRICS_KEY
from conformance.run.watchdog import Watchdog
from conformance.sanitize import terminal
from conformance.timing.host_load import MachineryRecord
from conformance.timing.timeouts import hard_timeout

CHECKS_DIR = Path(__file__).resolve().parent.parent / "checks"


def declared_sections() -> frozenset[str]:
    """The report sections the areas declare (Area.section): the only ones `publish` accepts."""
    from conformance.areas import AREAS

    return frozenset(a.section for a in AREAS if a.section)


class ConformanceRun:
    """One run: manifest, suite data, clusters, per-test records, report writing."""

    def __init__(self, config: pytest.Config, manifest: Manifest, data: SuiteData, out_dir: Path) -> None:
        self.config = config
        self.manifest = manifest
        self.data = data
        # the waivers that apply to this run: a waiver scoped to some transports only for theirs
        self.waivers = waivers_for(data.waivers, manifest.view.transport.name if manifest.view.transport else None)
        self.out_dir = out_dir
        self.checks_dir = CHECKS_DIR
        self.ray_address: str | None = config.getoption("conformance_ray_address")
        self.default_timeout: float = config.getoption("conformance_timeout")
        self.setup_timeout: float = config.getoption("conformance_setup_timeout")
        self.hang_grace: float = config.getoption("conformance_hang_grace")
        self.hangs = HangRecord()                # vendor calls known to hang: later probes and starts fail at once
        # what this run measured of Ray's machinery (conformance.timing.host_load): every bound on it
        # stretches by this record, handed to each check's budget, the preflight and the shapes
        self.machinery = MachineryRecord()
        self.clusters = ClusterManager(manifest, self.ray_address, hangs=self.hangs)
        self.records: dict[str, TestRecord] = {}
        self.loads: dict[str, dict[str, Any]] = {}   # nodeid -> the host's load while its call ran (host_load)
        self.item_checks: dict[str, str] = {}
        self.started_at = now_iso()
        self.t0 = time.monotonic()
        self.devices: dict[str, Any] = {}
        self.sections: dict[str, Any] = {}
        self.writer = ReportWriter(out_dir)
        self.watchdog = Watchdog(self.write_reports, out_dir)
        self.manager_cls: type | None = None
        self.deselected: list[str] = []
        self.collected_whole = False
        self.shard: dict[str, Any] | None = None   # selection.shard of a `--conformance-shard` run
        self.nodes = node_mode(config)             # which nodes the per-node checks cover (conformance.run.nodes)
        self.node_seed, self.node_sample_size = node_sample(config, data)   # the seed (sample and recovery) and size
        self.not_run_reason: str | None = None   # set when the preflight stops the run
        self.report_extras: Any = None           # conformance.run.hooks.RunHelp: adds preflight, logs, next steps
        self._fault_driver: Any = None
        self.exitstatus = int(pytest.ExitCode.INTERNAL_ERROR)   # pytest's, once the session finished

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
            known = self.hangs.blocking(("get_resource_name",))   # an import that hung blocks it too
            if known is not None:
                raise ClusterStartError(f"the plugin is not loaded: {known.reason()}")
            self.manager_cls = prepare_driver(self.manifest)
            self.clusters.manager = self.manager_cls
        return self.manager_cls

    def fault_driver(self) -> Any:
        """The configured fault driver (CLI over manifest; None if none): conformance.cluster.faults."""
        if self._fault_driver is None:
            from conformance.cluster.faults import driver_spec, load_driver
            spec = driver_spec(self.manifest, self.config.getoption("conformance_fault_driver"),
                               self.config.getoption("conformance_fault_driver_options"))
            self._fault_driver = load_driver(spec) if spec else False
        return self._fault_driver or None

    def cluster(self, shape: ClusterShape, fresh: bool = False) -> Any:
        if self.ray_address or self.hangs.blocks_node_start() is None:
            self.prepare()      # else the start fails at once with the known hang: no import again
        handle = self.clusters.ensure(shape, fresh=fresh)
        if not self.devices and manifests_own(shape, self.manifest):
            self.devices = self._detect_devices()   # the first cluster of the manifest's own nodes, whichever shape named it
        return handle

    def publish(self, section: str, value: dict[str, Any]) -> None:
        """Set one area's section of the report (its Area.section): {"markdown": ..., "data": ...}.

        The one door through which an area writes into the run's report; a section no area
        declares is a programming error (ValueError), never a new key in report.json."""
        if section not in declared_sections():
            raise ValueError(f"publish({section!r}): no area declares that section "
                             f"(Area.section: {', '.join(sorted(declared_sections()))})")
        self.sections[section] = value

    def published(self, section: str) -> dict[str, Any] | None:
        """What has been published under `section` so far (None: nothing yet)."""
        return self.sections.get(section)

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
        self.collected_whole = any(Path(str(a).split("::")[0]).resolve() == self.checks_dir for a in config.args)
        lint = lint_registry(((item.nodeid, [m.args for m in item.iter_markers("check")]) for item in items),
                             self.data.checklist, whole_checklist=self.collected_whole)
        lint.problems += shapes.mark_problems(items)
        lint.problems += self._area_problems(items, lint.item_checks)
        self.item_checks.update(lint.item_checks)
        if lint.problems:
            raise pytest.UsageError(lint.message())
        self._keep_selected(config, items)
        # by shape rank, so equal shapes reuse one cluster; stable in a shape
        items.sort(key=lambda i: shapes.run_order(shapes.shape_of(self.item_checks.get(i.nodeid), self.data.checklist)))

    def _area_problems(self, items: list[pytest.Item], item_checks: dict[str, str]) -> list[str]:
        from conformance.areas import AREAS
        from conformance.catalog.data import load_vocabulary
        from conformance.run.registry_lint import area_problems

        def rel(item: pytest.Item) -> str:
            path = Path(str(item.path)).resolve()
            return path.relative_to(self.checks_dir).as_posix() if path.is_relative_to(self.checks_dir) else ""

        return area_problems(((i.nodeid, item_checks[i.nodeid], rel(i)) for i in items if i.nodeid in item_checks),
                             AREAS, load_vocabulary().area_prefix)

    def _keep_selected(self, config: pytest.Config, items: list[pytest.Item]) -> None:
        """--conformance-select: deselect every test of another check (recorded, so the report
        is partial); the folder was collected whole, so the lint above still judged it all."""
        chosen = config.getoption("conformance_select")
        if config.getoption("conformance_shard"):
            return self._keep_shard(config, items, chosen)
        if not chosen:
            return
        wanted = {c.strip() for c in chosen.split(",") if c.strip()}
        unknown = sorted(wanted - set(self.data.checklist.by_id()))
        if unknown:
            raise pytest.UsageError(f"--conformance-select: unknown check id(s) {', '.join(unknown)}")
        keep = [i for i in items if self.item_checks.get(i.nodeid) in wanted]
        drop = [i for i in items if self.item_checks.get(i.nodeid) not in wanted]
        if drop:
            config.hook.pytest_deselected(items=drop)
            items[:] = keep

    def _keep_shard(self, config: pytest.Config, items: list[pytest.Item], chosen: str | None) -> None:
        """--conformance-shard=I/N: keep this shard's slice of the (selected) checks and the core
        (conformance.catalog.shards); every other test is deselected and recorded, and the plan goes
        into the report (selection.shard) for the merge."""
        from conformance.catalog import shards as sh
        from conformance.catalog.data import load_run_knobs

        policy = self.data.ladder.knobs.shards   # the release's (tiers/tiers.yaml shards)
        try:
            shard = sh.parse_shard(config.getoption("conformance_shard"), policy.max_count, "--conformance-shard")
        except ValueError as exc:
            raise pytest.UsageError(str(exc)) from None
        by_id = self.data.checklist.by_id()
        wanted = {c.strip() for c in (chosen or "").split(",") if c.strip()} or set(by_id)
        unknown = sorted(wanted - set(by_id))
        if unknown:
            raise pytest.UsageError(f"--conformance-select: unknown check id(s) {', '.join(unknown)}")
        placed = {cid for item in items if (cid := self.item_checks.get(item.nodeid)) in wanted}
        # balanced by the run's typical durations (tiers/run.yaml); merge and verify hold its structure
        plan = sh.release_plan(sorted(placed), shard.count, self.data.checklist, policy.core, load_run_knobs()["durations"])
        self.shard = sh.selection_shard(shard, plan, policy.core)
        keep_ids = sh.shard_checks(self.shard)
        keep = [i for i in items if self.item_checks.get(i.nodeid) in keep_ids]
        drop = [i for i in items if self.item_checks.get(i.nodeid) not in keep_ids]
        if drop:
            config.hook.pytest_deselected(items=drop)
            items[:] = keep

    def pytest_deselected(self, items: list[pytest.Item]) -> None:
        self.deselected += [item.nodeid for item in items]

    # ------------------------------------------------------------------ execution
    @pytest.hookimpl(tryfirst=True)
    def pytest_runtest_protocol(self, item: pytest.Item, nextitem: pytest.Item | None) -> bool | None:
        """Run a check's test, and again while it failed or errored and the release's `retries`
        (tiers/tiers.yaml `flakes`) allow (never a check under an active waiver: its failure is known): pytest's own runtest protocol once per attempt (a fresh
        setup, call and teardown; the item's metrics and budget start empty), its record keeping
        every earlier attempt (report/results.py makes a pass after a failure `flaky`). pytest and
        the run's other hooks see the last attempt's reports only; the terminal names each re-run."""
        retries = self.retries()
        cid = self.item_checks.get(item.nodeid)
        if cid is None or retries <= 0:
            return None     # pytest's own protocol
        from _pytest.runner import runtestprotocol

        item.ihook.pytest_runtest_logstart(nodeid=item.nodeid, location=item.location)
        waived = active_waiver(self.waivers, cid, dt.date.today()) is not None   # a known failure: never re-run
        while True:
            reports = runtestprotocol(item, nextitem=nextitem, log=False)
            rec = self.records.get(item.nodeid)
            if rec is None or waived or not should_retry(rec, retries) or item.session.shouldstop \
                    or item.session.shouldfail:
                break
            self._next_attempt(item, rec, retries)
        for report in reports:
            item.ihook.pytest_runtest_logreport(report=report)
        item.ihook.pytest_runtest_logfinish(nodeid=item.nodeid, location=item.location)
        return True

    def retries(self) -> int:
        """The release's re-runs of a failed test, or fewer when --conformance-retries asks (never more:
        fewer re-runs can only turn a flake into the failure it showed, so the option is part of a
        certification run, schemas/report.trust.yaml)."""
        asked = self.config.getoption("conformance_retries", None)
        release = self.data.ladder.retries
        return release if asked is None else max(0, min(int(asked), release))

    def _next_attempt(self, item: pytest.Item, rec: TestRecord, retries: int) -> None:
        """Keep `rec` as an earlier attempt and start the test's next one from a clean slate."""
        if self.report_extras is not None:   # Ray's logs of the failed attempt, before the next one's
            self.report_extras.attempt_failed(rec.check_id)
        nxt = new_record(rec.nodeid, rec.check_id)
        nxt.earlier = [*rec.earlier, rec.attempt()]
        self.records[rec.nodeid] = nxt
        self.loads.pop(rec.nodeid, None)
        if METRICS_KEY in item.stash:   # the next attempt's check context starts them afresh
            del item.stash[METRICS_KEY]
        if BUDGET_KEY in item.stash:
            del item.stash[BUDGET_KEY]
        tr = self.config.pluginmanager.get_plugin("terminalreporter")
        if tr is not None:
            tr.ensure_newline()
            tr.write_line(terminal(f"{rec.check_id}: {rec.outcome} on attempt {len(nxt.earlier)} "
                                   f"({rec.reason or 'no reason'}); running {item.name} again "
                                   f"(re-run {len(nxt.earlier)} of at most {retries}; a pass now is flaky, "
                                   "never pass)", limit=400))

    def timeout_for(self, item: pytest.Item, factor: float) -> float:
        """The check's hard timeout, stretched by `factor` as its inner bounds are
        (conformance.timing.host_load): a bound a check widened for a loaded host must not meet an
        unstretched outer one first. A stretch granted later, inside the check (a fresh sample
        says the host got slower: conformance.run.machinery), moves the deadline on by itself
        (conformance.timing.timeouts.granted)."""
        cid = self.item_checks.get(item.nodeid)
        check = self.data.checklist.by_id().get(cid or "")
        base = float(check.timeout_s) if check and check.timeout_s else self.default_timeout
        return base * factor

    @pytest.hookimpl(wrapper=True)
    def pytest_runtest_setup(self, item: pytest.Item) -> Generator[None, None, None]:
        with hard_timeout(self.setup_timeout, f"setup of {item.nodeid}", on_stuck=self.abort_stuck,
                          grace_s=self.hang_grace):
            return (yield)

    @pytest.hookimpl(wrapper=True)
    def pytest_runtest_call(self, item: pytest.Item) -> Generator[None, None, None]:
        from conformance.timing import host_load

        start = host_load.read_cpu_times()
        try:
            factor = self.machinery.bound_factor()
            budget = item.stash.get(BUDGET_KEY, None)
            with hard_timeout(self.timeout_for(item, factor), self.item_checks.get(item.nodeid, item.nodeid),
                              on_stuck=self.abort_stuck, grace_s=self.hang_grace, stretched_by=factor), \
                    (budget.active() if budget is not None else nullcontext()):
                return (yield)
        finally:   # the host's load while the check ran: shown beside its outcome
            load1 = host_load.load_per_cpu()
            cpus = host_load.cpu_count()
            self.loads[item.nodeid] = host_load.between(start, host_load.read_cpu_times(),
                                                         None if load1 is None else load1 * cpus, cpus).as_json()

    @pytest.hookimpl(wrapper=True)
    def pytest_runtest_teardown(self, item: pytest.Item, nextitem: pytest.Item | None) -> Generator[None, None, None]:
        """The check's budget records the waits its teardown makes (a module's harness freeing its
        devices at the module's end: conformance.run.release), as its body's."""
        budget = item.stash.get(BUDGET_KEY, None)
        with budget.active() if budget is not None else nullcontext():
            return (yield)

    @pytest.hookimpl(wrapper=True)
    def pytest_runtest_makereport(self, item: pytest.Item, call: pytest.CallInfo[None]
                                  ) -> Generator[None, pytest.TestReport, pytest.TestReport]:
        rep = yield
        cid = self.item_checks.get(item.nodeid)
        if cid is None:
            return rep
        rec = self.records.setdefault(item.nodeid, new_record(item.nodeid, cid))
        metrics: dict[str, Any] = item.stash.get(METRICS_KEY, {})
        rec.metrics.update(metrics)
        apply_phase(rec, rep, call.excinfo.value if call.excinfo is not None else None)
        if rep.when == "call" and item.nodeid in self.loads:
            rec.host_load = self.loads[item.nodeid]
        xfail = waiver_xfail(rec, rep.when, self.waivers, dt.date.today())
        if xfail is not None:  # shown as xfail: a known upstream limitation, never a pass
            rep.outcome = "skipped"
            rep.wasxfail = xfail
        return rep

    # ------------------------------------------------------------------ reporting
    def build(self, *, interrupted: bool, reason: str | None, unfinished: str | None = None) -> dict[str, Any]:
        records = list(self.records.values())
        if unfinished:
            records.append(TestRecord(unfinished, self.item_checks.get(unfinished, ""), "fail",
                                      reason or "hung"))
        not_run = self.not_run_reason or ("not run: the run was interrupted" if interrupted else
                                          f"not in this shard ({self.shard['index']}-of-{self.shard['count']}): "
                                          "another shard runs it (ray-conformance merge)" if self.shard else
                                          "not selected: this run was limited to other checks (partial)"
                                          if self.config.getoption("conformance_select") else
                                          "no test for this check ran")
        checks = aggregate(records, self.data.checklist, self.waivers, not_run_reason=not_run,
                           manifest=self.manifest.data, remote=bool(self.ray_address))
        cluster: dict[str, Any] = {"mode": self.clusters.last_mode, "nodes": self.clusters.last_nodes,
                   "address": self.ray_address, "notes": list(self.clusters.notes),
                   "history": list(self.clusters.history)}
        if cluster["mode"] is None:
            cluster["nodes"] = 0
        cluster["machinery"] = self.machinery.as_json()   # what the run measured of Ray's machinery, and the factor
        sections = dict(self.sections)
        from conformance.report.local_paths import display_path
        from conformance.report.next_steps import verified_shape
        from conformance.run.certification import recorded_args
        report = build_report(
            data=self.data, manifest=self.manifest.data, manifest_sha256=self.manifest.sha256,
            manifest_path=display_path(self.manifest.path), environment=fingerprint(self.devices), cluster=cluster,
            started_at=self.started_at, finished_at=now_iso(), duration_s=time.monotonic() - self.t0,
            checks=checks, interrupted=interrupted, interrupted_reason=reason if interrupted else None,
            sections=sections, plugin_artifact=self._plugin_artifact(),
            selection=selection_record(checks, args=recorded_args(self.config, self.checks_dir), deselected=self.deselected,
                                       collect_only=bool(self.config.getoption("collectonly", False)),
                                       whole_checklist_collected=self.collected_whole, shard=self.shard,
                                       environment=run_environment(), nodes=selection_nodes(self.nodes, self.node_seed,
                                                                                self.node_sample_size)),
            shape=verified_shape(self.devices, cluster["nodes"]))
        if self.report_extras is not None:
            self.report_extras.enrich(report)
        return report

    def _plugin_artifact(self) -> dict[str, str] | None:
        artifact = self.manifest.view.plugin.artifact
        if not artifact:
            return None
        from conformance.catalog.datafiles import sha256_file
        path = self.manifest.base_dir / artifact
        return {"name": path.name, "sha256": sha256_file(path)} if path.is_file() else None

    @property
    def report(self) -> dict[str, Any] | None:
        """The written report (None until written)."""
        return self.writer.report

    @property
    def written(self) -> bool:
        return self.writer.written

    def write_reports(self, *, interrupted: bool, reason: str | None = None, unfinished: str | None = None) -> None:
        """Write every report format once (the session's end or the watchdog, whichever is first)."""
        self.writer.write(lambda: self.build(interrupted=interrupted, reason=reason, unfinished=unfinished),
                          lambda: self.records.values())

    def abort_stuck(self, reason: str) -> None:
        """Watchdog: a check hung uninterruptibly. Write the report, then end the process."""
        self.watchdog.abort(reason)

    def pytest_runtest_logstart(self, nodeid: str, location: tuple[str, int | None, str]) -> None:
        self.watchdog.started(nodeid)

    @pytest.hookimpl(trylast=True)
    def pytest_sessionfinish(self, session: pytest.Session, exitstatus: int) -> None:
        self.exitstatus = int(exitstatus)
        try:
            self.clusters.shutdown()
        except ClusterStopHung:
            pass                # noted by the manager, with where it is stuck; the process ends at unconfigure
        except Exception as exc:  # noqa: BLE001 - the report matters more than a clean shutdown
            self.clusters.notes.append(f"cluster shutdown failed: {exc.__class__.__name__}")
        interrupted = exitstatus == pytest.ExitCode.INTERRUPTED
        self.write_reports(interrupted=interrupted, reason="interrupted (KeyboardInterrupt or stop)" if interrupted else None)
        if exitstatus == pytest.ExitCode.OK and self.report and (self.report.get("summary") or {}).get("flaky"):
            # every test's last attempt passed, but a flaky check fell short: exit as a failed run
            session.exitstatus = self.exitstatus = int(pytest.ExitCode.TESTS_FAILED)

    @pytest.hookimpl(trylast=True)
    def pytest_unconfigure(self, config: pytest.Config) -> None:
        """After a hung ray.shutdown() the process ends here, its reports and summary written: a
        normal exit would wait forever in Ray's own atexit shutdown, on the lock the hung one holds."""
        if self.clusters.stop_hung is not None:
            sys.stdout.flush()
            sys.stderr.write(f"\nconformance: {terminal(self.clusters.stop_hung)}; report written to {self.out_dir}\n")
            sys.stderr.flush()
            os._exit(self.exitstatus)

    def pytest_terminal_summary(self, terminalreporter: pytest.TerminalReporter) -> None:
        if not self.report:
            return
        tr = terminalreporter
        tr.section("conformance tiers")
        partial = bool(self.report.get("partial"))
        if partial:   # what this run judged first; the ladder below counts the checks it did not run
            for line in ran_lines(self.report):
                tr.write_line(line)
            tr.write_line("")
        tr.write_line(tier_table(self.report, ran_only=partial, blockers_width=TERMINAL_BLOCKERS_WIDTH))
        tr.write_line("")
        tr.write_line(f"tier achieved: {self.report['tier'] or 'none'}")
        if self.report.get("partial"):
            tr.write_line(f"partial run ({len(self.report['selection']['not_run'])} check(s) not run): "
                          "not a certification run")
        tr.write_line(f"reports: {self.out_dir}/report.json, report.md, junit.xml, report.html")


def node_mode(config: pytest.Config) -> str:
    """--conformance-nodes, checked (a usage error naming the option and the choices otherwise)."""
    from conformance.run.nodes import OPTION, parse_mode

    try:
        return parse_mode(config.getoption("conformance_nodes", None), OPTION)
    except ValueError as exc:
        raise pytest.UsageError(str(exc)) from None


def node_sample(config: pytest.Config, data: SuiteData) -> tuple[int, int]:
    """The seed (--conformance-node-seed, else drawn) and size (the release's tiers.yaml
    nodes.sample_size, which verify holds the report to) of the per-node checks' sample
    (conformance.catalog.node_sample); under `all` the seed chooses the recovery scenarios' nodes
    per failure domain."""
    from conformance.catalog.node_sample import new_seed, parse_seed

    size = data.ladder.knobs.nodes.sample_size
    try:
        given = parse_seed(config.getoption("conformance_node_seed", None), "--conformance-node-seed")
    except ValueError as exc:
        raise pytest.UsageError(str(exc)) from None
    return (given if given is not None else new_seed()), size
