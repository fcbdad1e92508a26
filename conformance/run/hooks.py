"""The pytest hooks that help a person follow and diagnose a run (a thin layer; logic elsewhere).

* preflight before the first check (`conformance.run.preflight`): a fatal finding stops the run, the
  report still comes out and says why;
* one progress line per check with a running count and the time left (`conformance.run.progress`);
  pytest's own per-test output only with -v;
* for each failed or errored check, Ray's log excerpts copied into OUT/logs/<check>/ and the
  first real error named in the reason (`conformance.report.ray_logs`);
* Ray's expected "raylet terminated" messages of fault-injection checks kept out of the terminal;
* the report's extras: preflight, what the run left on the host, log evidence, next steps.
"""
from __future__ import annotations

import time
from collections.abc import Generator
from typing import TYPE_CHECKING, Any

import pytest

from conformance.catalog.vendor_calls import KnownHang
from conformance.report.findings import findings_terminal
from conformance.report.flakes import flakes_terminal
from conformance.report.local_paths import shorten_paths
from conformance.sanitize import terminal

if TYPE_CHECKING:
    from conformance.run.session import ConformanceRun


def area_docs() -> dict[str, str]:
    """Each area's doc link (its Area.doc): where the report's advice sends a vendor."""
    from conformance.areas import AREAS

    return {a.name: a.doc for a in AREAS}


def disrupts_cluster(area_name: str) -> bool:
    """Whether the area kills or restarts what it runs on (its Area says so): Ray's expected noise
    about dead raylets and workers is kept out of the terminal during its checks."""
    from conformance.areas import AREAS

    return any(a.name == area_name and a.disrupts_cluster for a in AREAS)


class RunHelp:
    def __init__(self, run: ConformanceRun) -> None:
        from conformance.catalog.data import load_run_knobs
        from conformance.report.ray_logs import DriverNoise, LogCursor
        from conformance.run.preflight import host_state

        self.run = run
        self.knobs = load_run_knobs()
        self.host_before = host_state()
        self.preflight: Any = None
        self.cursor = LogCursor()
        self.noise = DriverNoise(run.out_dir)
        from conformance.report.ray_logs import LibraryWarnings
        self.library_warnings = LibraryWarnings(run.out_dir)
        self.evidence: dict[str, Any] = {}
        self.progress: Any = None
        self.sessions: set[str] = set()
        from conformance.cluster.process_owners import ShmWitness
        self.shm_witness = ShmWitness()   # the /dev/shm segments this run's processes held
        from conformance.run.before_kill import BeforeKill
        self.before_kill = BeforeKill(self._witness_before_kill)   # ... read again before each ray.kill
        self.tr: Any = None

    # ------------------------------------------------------------------ helpers
    def _write(self, line: str = "") -> None:
        if self.tr is not None:
            self.tr.write_line(line)

    def _shapes_needed(self, items: list[pytest.Item]) -> set[str]:
        """The shapes the items' checks run on, as their checklist entries name them."""
        from conformance.cluster import shapes

        return shapes.shapes_needed((self.run.item_checks.get(i.nodeid) for i in items), self.run.data.checklist)

    def _probe_node_start(self, items: list[pytest.Item]) -> Any:
        """Before any cluster starts: each call Ray makes at a node start, in this process (the one
        that starts the nodes), within the call bound. A hang goes into the run's hang record, so
        the cluster starts and probes that need that call fail at once instead of each waiting out
        its own timeout; returns the finding that says so (None when nothing hung)."""
        from conformance.catalog.vendor_calls import VendorHang
        from conformance.run.preflight import PROBLEM, Finding, node_start_env, probe_node_start

        if self.run.ray_address or not self._shapes_needed(items):
            return None
        try:
            manager = self.run.prepare()
        except VendorHang as exc:   # the import itself (or get_resource_name) hung
            self.run.hangs.add(KnownHang(exc.method, "the preflight", exc.bound_s))
            return Finding(PROBLEM, "plugin", f"{exc}: no cluster is started; every check that needs one fails at once")
        except Exception:  # noqa: BLE001 - the cluster start reports an import failure itself
            return None
        hang = probe_node_start(manager, node_start_env(self.run.manifest), self.run.hangs, found_by="the preflight",
                                on_stuck=self.run.abort_stuck, machinery=self.run.machinery)
        if hang is None:
            return None
        return Finding(PROBLEM, "plugin", f"{hang.reason()}, in the process that starts the nodes: Ray calls it at "
                       "every node start, so no cluster is started and every check that needs one or this call "
                       "fails at once")

    def _remember_session(self) -> None:
        from conformance.report.ray_logs import current_logs_dir

        logs = current_logs_dir()
        if logs is not None:
            self.cursor.remember(logs)
            self.sessions.add(str(logs.parent))

    # ------------------------------------------------------------------ hooks
    def pytest_sessionstart(self, session: pytest.Session) -> None:
        self.tr = session.config.pluginmanager.get_plugin("terminalreporter")

    def pytest_collection_finish(self, session: pytest.Session) -> None:
        from conformance.run.progress import Progress

        items = [(i.nodeid, self.run.item_checks[i.nodeid]) for i in session.items if i.nodeid in self.run.item_checks]
        durations = self.knobs["durations"]
        self.progress = Progress.from_items(items, durations["checks"], float(durations["default_s"]))

    @pytest.hookimpl(tryfirst=True)
    def pytest_runtestloop(self, session: pytest.Session) -> Any:
        if session.config.option.collectonly or not session.items or session.testsfailed:
            return None
        self.run.writer.archive()   # the previous run's set leaves before this run writes logs/
        from conformance.cluster.manager import SHARED, ClusterStartError
        from conformance.run.preflight import PROBLEM, Finding, render_lines, run_preflight, write_section
        from conformance.timing.timeouts import hard_timeout

        t0 = time.monotonic()
        cluster_ready = False
        start_problem = None
        hang_problem = self._probe_node_start(session.items)
        if SHARED.name in self._shapes_needed(session.items):
            try:
                with hard_timeout(self.run.setup_timeout, "preflight: starting the cluster",
                                  on_stuck=self.run.abort_stuck, grace_s=self.run.hang_grace):
                    self.run.cluster(SHARED)
                cluster_ready = True
                self._remember_session()
            except (ClusterStartError, Exception) as exc:  # noqa: BLE001 - the checks report it too
                start_problem = Finding(PROBLEM, "cluster", f"the cluster did not start: {exc}".splitlines()[0][:500])
        try:
            self.preflight = run_preflight(self.run.manifest, cluster_ready=cluster_ready,
                                           preload_expected=not self.run.ray_address, machinery=self.run.machinery,
                                           host=self.host_before)
        except Exception as exc:  # noqa: BLE001 - a preflight bug must not cost the run
            self.preflight = run_preflight(self.run.manifest, cluster_ready=False, preload_expected=False,
                                           machinery=self.run.machinery, host=self.host_before)
            self.preflight.findings.append(Finding(PROBLEM, "preflight", f"the probe itself failed: "
                                                   f"{exc.__class__.__name__}: {exc}".splitlines()[0][:300]))
        if start_problem is not None:
            self.preflight.findings.insert(0, start_problem)
        if hang_problem is not None:
            self.preflight.findings.insert(0, hang_problem)
        self.preflight.duration_s = time.monotonic() - t0
        for line in render_lines(self.preflight):
            self._write(line)
        write_section(self.preflight, self.run.out_dir)
        try:
            self.noise.install()
        except Exception:  # noqa: BLE001 - Ray's internals moved: the messages just stay visible
            pass
        try:
            self.before_kill.install()
        except Exception:  # noqa: BLE001 - without it segments of killed actors read "creator unknown"
            pass
        if not self.preflight.ok:
            self.run.not_run_reason = f"not run: the preflight failed: {self.preflight.reason()}"
            self._host_failed(session.items, self.preflight.host_reason())
            self._write(terminal(f"conformance: the preflight failed, no check was run: {self.preflight.reason()}",
                                 limit=1500))
            return True
        self._write(f"running {len(self.progress.order) if self.progress else len(session.items)} checks "
                    f"({len(session.items)} tests)")
        return None

    def _host_failed(self, items: list[pytest.Item], reason: str | None) -> None:
        """A preflight the host failed (Ray's machinery too slow to run its probe): every selected
        check is an error the host caused, "not judged: host: ...", never a skip of the plugin's."""
        if reason is None:
            return
        from conformance.run.outcomes import new_record

        for item in items:
            cid = self.run.item_checks.get(item.nodeid)
            if cid is not None:
                rec = self.run.records.setdefault(item.nodeid, new_record(item.nodeid, cid))
                rec.outcome, rec.reason = "error", reason

    @pytest.hookimpl(tryfirst=True)
    def pytest_runtest_setup(self, item: pytest.Item) -> None:
        cid = self.run.item_checks.get(item.nodeid)
        self.cursor.mark()
        if cid:
            check = self.run.data.checklist.by_id().get(cid)
            self.noise.check_started(cid, bool(check and disrupts_cluster(check.area)))

    @pytest.hookimpl(wrapper=True)
    def pytest_runtest_call(self, item: pytest.Item) -> Generator[None, None, None]:
        with self.library_warnings.kept(self.run.item_checks.get(item.nodeid)):
            return (yield)

    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        cid = self.run.item_checks.get(report.nodeid)
        if cid is None:
            return
        self._remember_session()
        if report.failed and report.when in ("setup", "call"):
            self._collect_evidence(cid)
        if report.when == "teardown" and self.progress is not None and self.progress.finished(report.nodeid, cid):
            self._witness_shm()
            self._progress_line(cid)

    @pytest.hookimpl(wrapper=True)
    def pytest_report_teststatus(self, report: pytest.CollectReport | pytest.TestReport, config: pytest.Config) -> Generator[None, Any, Any]:
        result = yield
        if config.option.verbose <= 0 and isinstance(result, tuple) and len(result) == 3 and \
                getattr(report, "nodeid", None) in self.run.item_checks:
            return (result[0], "", "")   # the progress lines replace pytest's dots
        return result

    @pytest.hookimpl(trylast=True)
    def pytest_terminal_summary(self, terminalreporter: pytest.TerminalReporter) -> None:
        report = self.run.report
        if not report:
            return
        from conformance.report.guidance import left_behind_lines
        from conformance.report.next_steps import next_steps_terminal

        tr = terminalreporter
        from conformance.report.results import OUTCOMES
        counts = ", ".join(f"{k} {report['summary'][k]}" for k in OUTCOMES if report["summary"].get(k))
        tr.write_line(f"checks (as in report.json): {counts}  [pytest counts tests, not checks]")
        for line in next_steps_terminal(report.get("next_steps")):
            tr.write_line(line)
        for line in findings_terminal(report):
            tr.write_line(line)
        for line in flakes_terminal(report):
            tr.write_line(line)
        host = report.get("host") or {}
        for line in left_behind_lines(host.get("left_behind") or {}):
            tr.write_line(terminal(f"left on the host: {line}", limit=400))
        for summary in (self.noise.summary(), self.library_warnings.summary()):
            if summary:
                tr.write_line(summary)

    # ------------------------------------------------------------------ work
    def attempt_failed(self, cid: str) -> None:
        """A failed attempt the run re-runs (run/session.py): pytest never sees its reports, so its
        Ray log evidence is collected here (a flaky check's report then carries it)."""
        self._remember_session()
        self._collect_evidence(cid)

    def _progress_line(self, cid: str) -> None:
        from conformance.report.results import combine
        from conformance.run.progress import progress_line, shown_outcome

        recs = [r for r in self.run.records.values() if r.check_id == cid]
        outcome = shown_outcome(combine([r.final_outcome() for r in recs]), cid, self.run.waivers)
        seconds = sum(r.duration_s + sum(a["duration_s"] for a in r.earlier) for r in recs)
        elapsed = time.monotonic() - self.run.t0
        self.progress.took(seconds)
        check = self.run.data.checklist.by_id().get(cid)
        line = progress_line(len(self.progress.done), len(self.progress.order), cid, check.title if check else "",
                             outcome, seconds, elapsed, self.progress.left_s())
        if self.tr is not None:
            self.tr.ensure_newline()
        self._write(line)

    def _witness_shm(self) -> None:
        """Note the /dev/shm segments this run's processes hold now ("left on the host" later
        names only those); a failure to read /proc only loses attribution, never the run."""
        try:
            self.shm_witness.sample(self.sessions)
        except OSError:
            pass

    def _witness_before_kill(self) -> None:
        """Before the suite kills an actor: what every process of this run holds now (the session
        it is connected to included: a check's own cluster is remembered only after the check)."""
        self._remember_session()
        self._witness_shm()

    def pytest_unconfigure(self, config: pytest.Config) -> None:
        self.before_kill.uninstall()

    def _files_left(self) -> list[str]:
        """The files outside /dev/shm this run's processes held, still there and held by nobody
        (conformance.leftovers.orphans); a failure to read /proc loses only this line."""
        from conformance.leftovers import orphans

        try:
            return orphans(self.shm_witness.files, self.shm_witness.since)
        except OSError:
            return []

    def _collect_evidence(self, cid: str) -> None:
        from conformance.report.ray_logs import collect_evidence

        try:
            evidence = collect_evidence(self.cursor.new_text(), self.run.out_dir, cid)
        except OSError:
            return
        if evidence is None:
            return
        have = self.evidence.get(cid)
        if have is None or (have.first_error is None and evidence.first_error is not None):
            self.evidence[cid] = evidence
        elif have is not None:
            have.files = sorted(set(have.files) | set(evidence.files))

    def enrich(self, report: dict[str, Any]) -> None:
        """Add the extras to a freshly built report (called by ConformanceRun.build)."""
        from conformance.report.next_steps import next_steps
        from conformance.run.left_behind import left_behind
        from conformance.run.preflight import host_state

        for entry in report["checks"]:
            if entry.get("reason"):
                entry["reason"] = shorten_paths(entry["reason"])
            ev = self.evidence.get(entry["id"])
            if ev is None or entry["outcome"] not in ("fail", "error", "waived", "flaky"):
                continue
            entry["log_files"] = list(ev.files)
            entry["log_excerpt"] = ev.excerpt
            if ev.first_error and ev.first_error.split(": ", 1)[-1] not in (entry.get("reason") or ""):
                entry["reason"] = f"{entry.get('reason') or ''} [Ray log: {ev.first_error}; logs/{entry['id']}/]".strip()
        if self.preflight is not None:
            report["preflight"] = self.preflight.as_dict()
            for f in report["preflight"]["findings"]:
                f["detail"] = shorten_paths(f["detail"])
        self._witness_shm()
        after = host_state()
        report["host"] = {"before": _host_summary(self.host_before), "after": _host_summary(after),
                          "left_behind": left_behind(self.host_before, after, self.sessions, self.shm_witness.seen,
                                                     self._files_left(), vendor_cluster=bool(self.run.ray_address))}
        data = self.run.data
        report["next_steps"] = next_steps(report, data.checklist, data.ladder, area_docs())


def _host_summary(state: dict[str, Any]) -> dict[str, Any]:
    shm = state.get("shm") or {}
    return {"available_memory_mb": state.get("available_memory_mb"), "shm_used_mb": shm.get("used_mb"),
            "shm_total_mb": shm.get("total_mb"), "ray_processes": len(state.get("ray_processes") or [])}
