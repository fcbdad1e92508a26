"""The run's pure parts, without a pytest subprocess or Ray: the registry lint, the outcome
mapping, the report writer, the watchdog, the shape ordering and where run state lives."""
from __future__ import annotations

import datetime as dt
import io
import os
import threading
import time
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

from conformance.catalog.data import Waiver
from conformance.cluster.manager import ClusterStartError
from conformance.exit_codes import WATCHDOG_EXIT
from conformance.report import writer as report_writer
from conformance.report.results import NOT_APPLICABLE_PREFIX
from conformance.report.writer import REPORT_FILES, RUN_FILES, ReportWriter, archive_previous
from conformance.run.outcomes import UNFINISHED, apply_phase, first_line, new_record, reason_from_exception, waiver_xfail
from conformance.run.registry_lint import lint_registry
from conformance.run.state import RUN, run_of, stash_of
from conformance.run.watchdog import Watchdog
from conformance.timing.timeouts import CheckTimeout


# ------------------------------------------------------------------------------ registry lint
def checklist(*checks: tuple[str, bool]) -> Any:
    """A checklist of (id, retired) items."""
    items = [SimpleNamespace(id=cid, title=f"title of {cid}", retired=retired) for cid, retired in checks]
    return SimpleNamespace(by_id=lambda: {c.id: c for c in items},
                           active=lambda: tuple(c for c in items if not c.retired))


CHECKLIST = checklist(("DP-001", False), ("DP-002", False), ("DP-009", True))


def test_lint_maps_each_test_to_its_check() -> None:
    lint = lint_registry([("a::t1", [("DP-001",)]), ("a::t2", [("DP-002",)])], CHECKLIST, whole_checklist=True)
    assert lint.problems == [] and lint.item_checks == {"a::t1": "DP-001", "a::t2": "DP-002"}


def test_lint_names_every_problem_in_the_vendor_facing_words() -> None:
    lint = lint_registry([("a::none", []), ("a::two", [("DP-001",), ("DP-002",)]), ("a::args", [("DP-001", "x")]),
                          ("a::unknown", [("ZZ-404",)]), ("a::retired", [("DP-009",)]), ("a::ok", [("DP-001",)])],
                         CHECKLIST, whole_checklist=True)
    assert lint.problems == [
        "a::none: evidences no check (add @pytest.mark.check('XX-000'))",
        "a::two: must name exactly one check",
        "a::args: must name exactly one check",
        "a::unknown: names unknown check 'ZZ-404' (not in tiers/checklist.yaml)",
        "a::retired: names retired check DP-009",
        "checklist item DP-002 (title of DP-002) has no test",
    ]
    assert lint.item_checks == {"a::ok": "DP-001"}
    assert lint.message().startswith("conformance registry is inconsistent:\n  a::none: ")


def test_a_partial_selection_need_not_cover_the_checklist() -> None:
    assert lint_registry([("a::t1", [("DP-001",)])], CHECKLIST, whole_checklist=False).problems == []


# ------------------------------------------------------------------------------ outcome mapping
def phase(when: str, outcome: str, longrepr: Any = None, duration: float = 0.5) -> Any:
    return SimpleNamespace(when=when, passed=outcome == "passed", failed=outcome == "failed",
                           skipped=outcome == "skipped", longrepr=longrepr, duration=duration)


def record_of(*phases: tuple[Any, BaseException | None]) -> Any:
    rec = new_record("a::t", "DP-001")
    for rep, exc in phases:
        apply_phase(rec, rep, exc)
    return rec


def test_a_record_starts_unfinished() -> None:
    rec = new_record("a::t", "DP-001")
    assert (rec.outcome, rec.reason) == ("error", UNFINISHED)


def test_pass_and_durations_add_up() -> None:
    rec = record_of((phase("setup", "passed", duration=1.0), None), (phase("call", "passed", duration=2.0), None),
                    (phase("teardown", "passed", duration=0.25), None))
    assert (rec.outcome, rec.reason, rec.duration_s) == ("pass", None, 3.25)


def test_skips_not_applicable_and_plain() -> None:
    na = record_of((phase("setup", "skipped", ("f.py", 1, "Skipped: " + NOT_APPLICABLE_PREFIX + "no transport")), None))
    assert (na.outcome, na.reason) == ("not_applicable", "no transport")
    skip = record_of((phase("call", "skipped", "Skipped: not today"), None))
    assert (skip.outcome, skip.reason) == ("skip", "not today")


def test_a_failed_call_is_a_fail_with_the_assertion_message_first() -> None:
    rec = record_of((phase("setup", "passed"), None),
                    (phase("call", "failed"), AssertionError("devices leaked\nassert 3 == 4")))
    assert (rec.outcome, rec.reason) == ("fail", "devices leaked")
    assert reason_from_exception(AssertionError("")) == "assertion failed"
    assert reason_from_exception(ValueError("bad\nmore")) == "ValueError: bad"
    assert reason_from_exception(KeyError()) == "KeyError"
    # a Ray task error: the error it carries and its message, not Ray's frame header (make test-load's
    # TR-019 said only "RayTaskError(RuntimeError): ray::AsyncPeer.receive() (pid=13536, ...)")
    from ray.exceptions import RayTaskError

    carried = RuntimeError("the transfer's segment is gone")
    wrapped = RayTaskError("receive", "Traceback ...", carried, proctitle="ray::AsyncPeer.receive()").as_instanceof_cause()
    assert reason_from_exception(wrapped) == "RuntimeError: the transfer's segment is gone"


def test_setup_errors_and_cluster_start_errors_are_errors_not_verdicts() -> None:
    rec = record_of((phase("setup", "failed"), RuntimeError("no cluster")))
    assert (rec.outcome, rec.reason) == ("error", "RuntimeError: no cluster")
    rec = record_of((phase("call", "failed"), ClusterStartError("raylet died")))
    assert (rec.outcome, rec.reason) == ("error", "ClusterStartError: raylet died")


def test_teardown_failure_is_an_error_unless_the_call_failed() -> None:
    rec = record_of((phase("call", "passed"), None), (phase("teardown", "failed"), AssertionError("not released")))
    assert (rec.outcome, rec.reason) == ("error", "teardown: not released")
    rec = record_of((phase("call", "failed"), AssertionError("wrong")),
                    (phase("teardown", "failed"), AssertionError("not released")))
    assert (rec.outcome, rec.reason) == ("fail", "wrong")


def test_time_left_is_the_enclosing_hard_timeouts() -> None:
    from conformance.timing.timeouts import hard_timeout, time_left

    assert time_left() is None
    with hard_timeout(30, "t"):
        left = time_left()
        assert left is not None and 29 < left <= 30
        with hard_timeout(5, "inner"):
            inner = time_left()
            assert inner is not None and inner <= 5
    assert time_left() is None


def test_a_carried_hard_timeout_gives_its_own_text() -> None:
    try:
        try:
            raise CheckTimeout("DP-001: no result within the hard timeout of 5s")
        except CheckTimeout as inner:
            raise SystemError("ray get failed") from inner
    except SystemError as exc:
        wrapped = exc
    rec = record_of((phase("call", "failed"), wrapped))
    assert (rec.outcome, rec.reason) == ("fail", "DP-001: no result within the hard timeout of 5s")


def test_a_failure_without_an_exception_uses_the_report_text() -> None:
    rec = record_of((phase("setup", "failed", "\n  fixture 'x' not found\nmore"), None))
    assert (rec.outcome, rec.reason) == ("error", "fixture 'x' not found")
    assert first_line("  \n" + "y" * 700) == "y" * 600


def test_a_waived_failure_is_shown_as_xfail_never_as_a_pass() -> None:
    today = dt.date(2026, 1, 1)
    waivers = [Waiver(check="DP-001", issue="ray#1", reason="upstream", expires="2026-06-01")]
    rec = record_of((phase("call", "failed"), AssertionError("upstream bug")))
    assert waiver_xfail(rec, "call", waivers, today) == "waived (ray#1): upstream bug"
    assert rec.outcome == "fail"
    assert waiver_xfail(rec, "teardown", waivers, today) is None
    assert waiver_xfail(rec, "call", waivers, dt.date(2026, 6, 2)) is None     # expired
    passed = record_of((phase("call", "passed"), None))
    assert waiver_xfail(passed, "call", waivers, today) is None


# ------------------------------------------------------------------------------ report writer
def test_archive_never_loses_earlier_reports(tmp_path: Path) -> None:
    assert archive_previous(tmp_path) is None
    (tmp_path / "report.json").write_text("first")
    (tmp_path / "report.md").write_text("first md")
    (tmp_path / "notes.txt").write_text("the user's own file")
    stamp = time.mktime((2026, 3, 4, 5, 6, 7, 0, 0, -1))
    os.utime(tmp_path / "report.json", (stamp, stamp))
    first = archive_previous(tmp_path)
    assert first == tmp_path / "previous" / "20260304T050607"
    assert sorted(p.name for p in first.iterdir()) == ["report.json", "report.md"]
    (tmp_path / "report.json").write_text("second")
    os.utime(tmp_path / "report.json", (stamp, stamp))
    second = archive_previous(tmp_path)
    assert second == tmp_path / "previous" / "20260304T050607-1" and (second / "report.json").read_text() == "second"
    assert (tmp_path / "notes.txt").read_text() == "the user's own file"
    assert not any((tmp_path / f).exists() for f in REPORT_FILES)


def test_archive_moves_the_whole_previous_run_together(tmp_path: Path) -> None:
    """Signature, bundle and logs/ leave with the reports: one folder per run, nothing left behind
    for a reviewer to mistake for this run's, nothing overwritten."""
    from conformance.signing.attestation import BUNDLE_NAME, ENVELOPE_NAME

    assert {ENVELOPE_NAME, BUNDLE_NAME, "logs"} <= set(RUN_FILES)
    for name in ("report.json", ENVELOPE_NAME, BUNDLE_NAME, "logs/preflight.txt", "logs/TR-015/raylet.err"):
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text(name)
    (tmp_path / "previous" / "x").mkdir(parents=True)
    dest = archive_previous(tmp_path)
    assert dest is not None and dest.parent == tmp_path / "previous"
    assert sorted(p.relative_to(dest).as_posix() for p in dest.rglob("*") if p.is_file()) == sorted(
        ["report.json", ENVELOPE_NAME, BUNDLE_NAME, "logs/preflight.txt", "logs/TR-015/raylet.err"])
    assert sorted(p.name for p in tmp_path.iterdir()) == ["previous"]
    assert (tmp_path / "previous" / "x").is_dir()


def test_the_writer_archives_once_before_the_runs_first_file(tmp_path: Path,
                                                             monkeypatch: pytest.MonkeyPatch) -> None:
    """archive() at the run's start; the logs this run writes afterwards stay with its report."""
    monkeypatch.setattr(report_writer, "write_all", lambda report, records, out_dir: (out_dir / "report.json")
                        .write_text("new"))
    (tmp_path / "logs").mkdir()
    (tmp_path / "logs" / "preflight.txt").write_text("old")
    writer = ReportWriter(tmp_path)
    first = writer.archive()
    assert first is not None and (first / "logs" / "preflight.txt").read_text() == "old"
    (tmp_path / "logs").mkdir()
    (tmp_path / "logs" / "preflight.txt").write_text("this run's")
    assert writer.archive() == first
    writer.write(lambda: {}, lambda: [])
    assert (tmp_path / "logs" / "preflight.txt").read_text() == "this run's"
    assert [p.parent for p in (tmp_path / "previous").glob("*/*")] == [first]


def test_reports_are_written_once_whichever_thread_asks_first(tmp_path: Path,
                                                              monkeypatch: pytest.MonkeyPatch) -> None:
    writes: list[dict[str, Any]] = []
    builds: list[int] = []
    gate = threading.Event()

    def fake_write_all(report: dict[str, Any], records: Any, out_dir: Path) -> None:
        gate.wait(5)
        writes.append(report)
        (out_dir / "report.json").write_text("new")

    monkeypatch.setattr(report_writer, "write_all", fake_write_all)
    (tmp_path / "report.json").write_text("old")
    writer = ReportWriter(tmp_path / "out")
    (tmp_path / "out").mkdir()
    (tmp_path / "out" / "report.json").write_text("old")

    def build() -> dict[str, Any]:
        builds.append(1)
        assert not (tmp_path / "out" / "report.json").exists()   # archived before building
        return {"n": len(builds)}

    results: list[Any] = []
    threads = [threading.Thread(target=lambda: results.append(writer.write(build, lambda: []))) for _ in range(4)]
    for t in threads:
        t.start()
    gate.set()
    for t in threads:
        t.join(5)
    assert builds == [1] and writes == [{"n": 1}] and writer.written and writer.report == {"n": 1}
    assert sorted(results, key=lambda r: r is not None) == [None, None, None, {"n": 1}]
    assert [p.read_text() for p in (tmp_path / "out" / "previous").glob("*/report.json")] == ["old"]


# ------------------------------------------------------------------------------ watchdog
class Exited(Exception):
    pass


def test_the_watchdog_writes_the_report_blaming_the_running_check_then_exits(tmp_path: Path) -> None:
    calls: list[dict[str, Any]] = []
    codes: list[int] = []

    def exit_fn(code: int) -> None:
        codes.append(code)
        raise Exited()

    err = io.StringIO()
    dog = Watchdog(lambda **kw: calls.append(kw), tmp_path, exit_fn=exit_fn, stderr=err)
    dog.started("checks/test_x.py::test_hangs")
    with pytest.raises(Exited):
        dog.abort("DP-001 hung past its grace")
    assert calls == [{"interrupted": True, "reason": "DP-001 hung past its grace",
                      "unfinished": "checks/test_x.py::test_hangs"}]
    assert codes == [WATCHDOG_EXIT] and f"report written to {tmp_path}" in err.getvalue()


def test_the_watchdog_exits_even_when_writing_fails(tmp_path: Path) -> None:
    codes: list[int] = []

    def broken_write(**kw: Any) -> None:
        raise OSError("disk full")

    def exit_fn(code: int) -> None:
        codes.append(code)

    dog = Watchdog(broken_write, tmp_path, exit_fn=exit_fn, stderr=io.StringIO())
    with pytest.raises(OSError):
        dog.abort("hung")
    assert codes == [WATCHDOG_EXIT]


# ------------------------------------------------------------------------------ run state
def test_run_state_lives_in_the_config_stash() -> None:
    config = SimpleNamespace(stash=pytest.Stash())
    assert run_of(config) is None   # type: ignore[arg-type]
    run = SimpleNamespace(config=config)
    config.stash[RUN] = run
    assert run_of(config) is run    # type: ignore[arg-type]
    assert stash_of(run) is config.stash
    from conformance.areas.recovery.area import STATE
    from conformance.areas.recovery.nodes import known_nodes
    assert known_nodes(run) is config.stash[STATE].known_nodes
    assert known_nodes(SimpleNamespace(config=SimpleNamespace(stash=pytest.Stash()))) is not known_nodes(run)


def test_the_suite_command_blocks_every_other_installed_pytest_plugin() -> None:
    """hypothesis is in the dev extra: a certification must not load it (nor a
    vendor's own randomly or timeout), while the suite's own entry point stays loaded."""
    from importlib.metadata import entry_points

    from conformance.run.command import ANSWERED_PLUGINS, SUITE_PLUGIN, suite_command

    cmd = suite_command("m.yaml", "out")
    blocked = {cmd[i + 1].removeprefix("no:") for i, a in enumerate(cmd) if a == "-p" and cmd[i + 1].startswith("no:")}
    installed = {ep.name for ep in entry_points(group="pytest11")}
    assert SUITE_PLUGIN in installed and SUITE_PLUGIN not in blocked
    assert "hypothesispytest" in blocked
    assert "xdist" not in blocked        # its -n is refused by the suite, with the suite's reason
    assert installed - {SUITE_PLUGIN} - ANSWERED_PLUGINS <= blocked


# ------------------------------------------------------------------------------ calls no signal can cut
def test_call_on_thread_returns_the_value_or_raises_the_calls_own_error() -> None:
    from conformance.timing.waits import call_on_thread

    assert call_on_thread(lambda: 42, 5, "answer") == 42
    with pytest.raises(KeyError, match="missing"):
        call_on_thread(lambda: {}["missing"], 5, "lookup")


def test_call_on_thread_says_where_a_call_is_stuck_when_its_bound_runs_out() -> None:
    from conformance.timing.waits import StillRunning, call_on_thread

    release = threading.Event()

    def waits_for_good() -> None:
        release.wait(30)

    t0 = time.monotonic()
    with pytest.raises(StillRunning) as caught:
        call_on_thread(waits_for_good, 0.3, "ray.shutdown()")
    release.set()
    assert time.monotonic() - t0 < 5
    assert str(caught.value).startswith("ray.shutdown(): did not return within 0s (stuck in ")
    assert "waits_for_good" in caught.value.where


def test_after_a_hung_cluster_stop_no_cluster_starts_again(monkeypatch: pytest.MonkeyPatch) -> None:
    """ray.shutdown() hung holds Ray's connect lock: a new ray.init would wait on it for good, so
    every later shape fails at once with the reason, and the stop's note says where it hung."""
    from conformance.catalog.manifest import load_manifest
    from conformance.cluster import manager as cluster_manager
    from conformance.cluster.manager import ClusterHandle, ClusterManager, ClusterShape, ClusterStopHung

    def hung_stop(_handle: Any, bound_s: float | None = None) -> None:
        raise ClusterStopHung("ray.shutdown(): did not return within 60s (stuck in worker.py:2144 shutdown)")

    monkeypatch.setattr(cluster_manager, "stop_cluster", hung_stop)
    clusters = ClusterManager(load_manifest("builtin:simulated"))
    clusters.current = ClusterHandle(ClusterShape("shared", nodes=1), "local", "addr", 1)
    clusters.history.append({"shape": "shared", "ok": True})
    with pytest.raises(ClusterStopHung):
        clusters.shutdown()
    assert clusters.current is None and clusters.history[-1]["stop_hung"].startswith("ray.shutdown()")
    assert clusters.notes == ["cluster 'shared': stopping it hung: ray.shutdown(): did not return within 60s "
                              "(stuck in worker.py:2144 shutdown)"]
    with pytest.raises(ClusterStartError, match="stopping the previous cluster hung .*Ray cannot connect again"):
        clusters.ensure(ClusterShape("partition", nodes=2))


# ------------------------------------------------------------------------------ library warnings
def test_ray_serves_pydantic_deprecations_go_to_the_checks_log_and_nothing_else_does(tmp_path: Path) -> None:
    """WL-012's import of ray.serve raises 18 Pydantic deprecation warnings: kept in
    logs/WL-012/python-warnings.log, out of pytest's summary; any other warning reaches pytest."""
    import warnings

    from conformance.report.ray_logs import LibraryWarnings, is_library_noise

    PydanticDeprecatedSince20 = type("PydanticDeprecatedSince20", (DeprecationWarning,), {})
    serve = "/x/site-packages/ray/serve/_private/config.py"
    assert is_library_noise("PydanticDeprecatedSince20", serve)
    assert not is_library_noise("PydanticDeprecatedSince20", "/x/site-packages/vendor/models.py")
    assert not is_library_noise("DeprecationWarning", serve)
    keeper = LibraryWarnings(tmp_path)
    with warnings.catch_warnings(record=True) as seen:      # what pytest would record
        warnings.simplefilter("always")
        with keeper.kept("WL-012"):
            for line in (177, 180):
                warnings.warn_explicit("Using extra keyword arguments on `Field` is deprecated",
                                       PydanticDeprecatedSince20, serve, line)
            warnings.warn_explicit("the vendor's own deprecation", DeprecationWarning, "/x/vendor/m.py", 3)
    assert [str(w.message) for w in seen] == ["the vendor's own deprecation"]
    log = (tmp_path / "logs" / "WL-012" / "python-warnings.log").read_text()
    assert log.count("PydanticDeprecatedSince20") == 2 and "vendor" not in log
    assert keeper.summary() is not None and "2 deprecation warning(s)" in keeper.summary() and "WL-012" in keeper.summary()
    with keeper.kept(None):   # not a check: nothing is caught
        pass


def test_a_waiver_scoped_to_transports_applies_to_their_runs_only() -> None:
    """RDT's refusal of views (ray-project/ray#64376) is NIXL's and GLOO's: their TR-002/006/011
    waivers apply to a run of those transports only; a vendor transport's TR-002 failure is its own."""
    from conformance.catalog.data import load_waivers, waivers_for

    scoped = Waiver("TR-002", "https://github.com/ray-project/ray/issues/64376", "views refused", "2027-05-31",
                    True, ("NIXL", "GLOO"))
    every = Waiver("FR-016", "https://github.com/ray-project/ray/issues/61014", "restarts", "2027-05-31")
    assert waivers_for([scoped, every], "nixl") == [scoped, every]
    assert waivers_for([scoped, every], "SIMXFER") == [every] and waivers_for([scoped, every], None) == [every]
    failed = record_of((phase("call", "failed"), None))
    failed.check_id = "TR-002"
    today = dt.date(2026, 12, 5)
    assert waiver_xfail(failed, "call", waivers_for([scoped], "GLOO"), today) is not None
    assert waiver_xfail(failed, "call", waivers_for([scoped], "ACMEXFER"), today) is None
    shipped, _ = load_waivers()                         # the data file: each cites ray#64376, scoped, blocking
    views = [w for w in shipped if w.issue.endswith("/64376")]
    assert {w.check for w in views} == {"TR-002", "TR-006", "TR-011"}
    assert all(w.transports == ("NIXL", "GLOO") and w.blocks_tier for w in views)
