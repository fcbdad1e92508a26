"""A loaded host stretches the bounds that wait on Ray's machinery, is shown per check, and a host
that cannot start Ray is "not judged: host", never a failed check of the plugin (fake measurements)."""
from __future__ import annotations

from pathlib import Path

import pytest

from conformance.timing import host_load
from conformance.timing.host_load import CheckLoad, CpuTimes, MachineryRecord, between, load_text


def test_the_factor_follows_the_slowest_measured_machinery_or_the_run_queue() -> None:
    rec = MachineryRecord()
    assert rec.factor() == 1.0 and rec.factor(queue_per_cpu=0.4) == 1.0       # an idle host: the data's bound
    rec.note("worker_start", host_load.NOMINAL_S["worker_start"] * 6.5)        # a fresh worker took 19.5 s
    assert rec.factor("worker_start") == host_load.MAX_FACTOR                  # capped: a hang still fails
    rec2 = MachineryRecord()
    rec2.note("worker_start", host_load.NOMINAL_S["worker_start"] * 2)
    rec2.note("worker_start", 0.1)                                             # the slowest is kept
    assert rec2.factor("worker_start") == pytest.approx(2.0)
    assert rec2.factor("fetch") == 1.0 and rec2.factor() == pytest.approx(2.0)
    assert rec2.factor("fetch", queue_per_cpu=3.0) == pytest.approx(3.0)        # load 6 on 2 CPUs
    with pytest.raises(ValueError, match="unknown machinery kind"):
        rec2.note("coffee", 1)


def test_the_report_shows_the_factors_the_bounds_used(monkeypatch: pytest.MonkeyPatch) -> None:
    """A busy run queue stretches only the import bound: the report's machinery factor must not
    show a stretch no machinery wait had (it read 6.0 with nothing measured, at load 12 on 2 CPUs)."""
    monkeypatch.setattr(host_load, "load_per_cpu", lambda: 6.0)
    rec = MachineryRecord()
    shown = rec.as_json()
    assert shown["factor"] == 1.0 and shown["import_factor"] == host_load.MAX_FACTOR
    rec.note("worker_start", host_load.NOMINAL_S["worker_start"] * 2)
    assert rec.as_json()["factor"] == pytest.approx(2.0)


def test_a_bound_is_only_ever_stretched(monkeypatch: pytest.MonkeyPatch) -> None:
    rec = MachineryRecord()
    monkeypatch.setattr(host_load, "load_per_cpu", lambda: 0.1)
    assert 20 * rec.bound_factor("worker_start") == 20
    rec.note("worker_start", 19.4)          # the case seen: TL-009 waited 20 s
    assert 20 * rec.bound_factor("worker_start") > 19.4 * 6
    monkeypatch.setattr(host_load, "load_per_cpu", lambda: 5.0)       # a busy queue alone stretches no Ray bound
    assert 20 * rec.bound_factor("worker_start") == 20 * host_load.MAX_FACTOR
    fresh = MachineryRecord()
    assert 20 * fresh.bound_factor("fetch") == 20 and 20 * fresh.bound_factor("import") == 100


def test_the_load_between_two_readings(tmp_path: Path) -> None:
    stat = tmp_path / "stat"
    stat.write_text("cpu  100 0 100 700 50 0 0 50 0 0\ncpu0 1 2 3 4\n")
    t0 = host_load.read_cpu_times(stat)
    assert t0 == CpuTimes(busy=200, steal=50, total=1000)
    load = between(t0, CpuTimes(busy=380, steal=70, total=1200), 3.9, 2)
    assert load == CheckLoad(3.9, 2, 90.0, 10.0)
    assert load_text(load.as_json()) == "load 3.9/2 CPUs, 90% busy, 10% steal"
    assert between(t0, None, None, 2).busy_pct is None and load_text(None) == ""
    assert host_load.read_cpu_times(tmp_path / "missing") is None


def test_the_call_bound_stretches_with_load_and_the_environment_sets_it(monkeypatch: pytest.MonkeyPatch) -> None:
    from conformance.catalog import vendor_calls
    from conformance.errors import UserError
    monkeypatch.delenv(vendor_calls.CALL_BOUND_ENV, raising=False)
    monkeypatch.setattr(host_load, "load_per_cpu", lambda: 0.2)
    idle = vendor_calls.knobs()["call_bound_s"]
    monkeypatch.setattr(host_load, "load_per_cpu", lambda: 2.5)     # an import of torch took 20.6 s here
    assert vendor_calls.knobs()["call_bound_s"] == pytest.approx(idle * 2.5)
    measured = MachineryRecord()                                      # a run's record: its measurement counts too
    measured.note("import", host_load.NOMINAL_S["import"] * 4)
    assert vendor_calls.knobs(measured)["call_bound_s"] == pytest.approx(idle * 4)
    assert vendor_calls.knobs(MachineryRecord())["call_bound_s"] == vendor_calls.knobs()["call_bound_s"]
    monkeypatch.setenv(vendor_calls.CALL_BOUND_ENV, "90")
    k = vendor_calls.knobs()
    assert k["call_bound_s"] == 90 and k["probe_timeout_s"] >= 90
    monkeypatch.setenv(vendor_calls.CALL_BOUND_ENV, "soon")
    with pytest.raises(UserError, match="RAY_CONFORMANCE_CALL_BOUND_S: expected a number of seconds above 0"):
        vendor_calls.knobs()


class _Rep:
    def __init__(self, when: str) -> None:
        self.when, self.passed, self.failed, self.skipped, self.longrepr, self.duration = when, False, True, False, "", 1.0


def test_a_node_that_cannot_register_in_time_is_the_hosts_failure_not_the_plugins() -> None:
    from conformance.cluster.manager import ClusterStartError
    from conformance.report.next_steps import action_for
    from conformance.run.outcomes import HOST_PREFIX, apply_phase, new_record
    ray_text = ("The current node timed out during startup. This could happen because some of the raylet "
                "failed to startup or the GCS has become overloaded.")
    for exc in (Exception(ray_text), ClusterStartError(f"cluster 'shared' failed to start: {ray_text}"),
                AssertionError(f"FR-006: the restarted node: {ray_text}")):
        rec = new_record("t::x", "FR-006")
        apply_phase(rec, _Rep("call"), exc)
        assert rec.outcome == "error" and rec.reason is not None and rec.reason.startswith(HOST_PREFIX), rec.reason
        assert "the plugin was not judged" in rec.reason
        action = action_for({"outcome": rec.outcome, "reason": rec.reason}, None)
        assert "nothing to fix in the plugin" in action and "fix the plugin so" not in action
    from conformance.timing.host_load import HostNotReady
    pending = new_record("t::p", "TL-009")
    apply_phase(pending, _Rep("call"), HostNotReady("selector X (spread) was not placed by Ray within 120s although "
                                                    "the labels of {a} match it"))
    assert pending.outcome == "error" and pending.reason is not None
    assert pending.reason.startswith(HOST_PREFIX + "selector X") and "wrong node" not in pending.reason
    plugin = new_record("t::y", "TL-009")
    apply_phase(plugin, _Rep("call"), AssertionError("placed work on the wrong node"))
    assert plugin.outcome == "fail"                                     # the control: a real failure stays one
    apply_phase(plugin, _Rep("teardown"), Exception(ray_text))
    assert plugin.outcome == "fail" and plugin.reason == "placed work on the wrong node"


def test_the_report_shows_each_checks_load_and_counts_the_hosts_errors() -> None:
    from conformance.catalog.data import load_checklist
    from conformance.report.build import checks_table, host_note
    from conformance.report.results import TestRecord, aggregate
    checklist = load_checklist()
    cid = checklist.active()[0].id
    quiet = TestRecord("a::q", cid, "pass", host_load={"load1": 0.5, "cpus": 2, "busy_pct": 20.0, "steal_pct": 0.0})
    busy = TestRecord("a::b", cid, "pass", host_load={"load1": 7.8, "cpus": 2, "busy_pct": 99.0, "steal_pct": 3.0})
    entry = aggregate([quiet, busy], checklist)[0]
    assert entry["host_load"]["load1"] == 7.8                           # a check shows its most loaded test
    table = checks_table({"checks": [entry]})
    assert "host load" in table.splitlines()[0] and "load 7.8/2 CPUs, 99% busy, 3% steal" in table
    host = {"outcome": "error", "reason": "not judged: host: Ray's node did not register"}
    assert "1 not judged: host" in host_note({"checks": [entry, host]}) and host_note({"checks": [entry]}) == ""


def test_a_partial_runs_terminal_shows_what_ran_and_counts_what_did_not() -> None:
    """88 (SKIP) ids around the line that matters hid it: a partial run lists its own checks and
    the ladder counts the ones it did not run."""
    from conformance.report.build import ran_lines, tier_table
    not_run = [f"DP-{i:03d}" for i in range(1, 89)]
    report = {
        "selection": {"not_run": not_run},
        "checks": [{"id": "CC-004", "outcome": "fail", "reason": "an op did not give its right result (CC-004: ...)"},
                   {"id": "CC-005", "outcome": "pass", "reason": None}]
                  + [{"id": cid, "outcome": "skip", "reason": "not selected"} for cid in not_run],
        "tiers": [{"name": "experimental", "achieved": False, "conditions": [], "below": None,
                   "blocking": [{"id": "CC-004", "outcome": "fail"}] + [{"id": cid, "outcome": "skip"} for cid in not_run]}],
    }
    table = tier_table(report, ran_only=True)
    assert "CC-004(FAIL), +88 not run" in table and "(SKIP)" not in table
    assert tier_table(report).count("(SKIP)") == 88                    # report.md keeps the whole ladder
    lines = ran_lines(report)
    assert lines[0] == "this run's checks (2):" and lines[1].startswith("  CC-004 FAIL: an op did not give")
    assert lines[2] == "  CC-005 PASS"


def test_the_lowered_fetch_timeout_is_stretched_once_and_the_same_everywhere() -> None:
    """FR-015 saw Ray's fetch timeout (5 s) instead of the injected error on a loaded host: the
    run's factor stretches it, fixed at first use in the run's own record, so nodes, driver and
    bounds agree; another run in the same process fixes its own."""
    from types import SimpleNamespace

    from conformance.areas.recovery import transfers
    rec = MachineryRecord()
    rec.note("fetch", host_load.NOMINAL_S["fetch"] * 3)            # measured before the cluster starts
    manifest = SimpleNamespace(view=SimpleNamespace(cluster=SimpleNamespace(nodes=2, node_env=({"A": "1"},))))
    shape = transfers.transfer_shape(manifest, rec)
    rec.note("fetch", host_load.NOMINAL_S["fetch"] * 5)            # slower later: the fixed value holds
    want_ms = str(int(transfers.shape_fetch_timeout_s() * 3.0 * 1000))
    assert [e[transfers.TIMEOUT_ENV] for e in shape.node_env] == [want_ms, want_ms] and shape.node_env[0]["A"] == "1"
    assert transfers.run_fetch_timeout_s(transfers.shape_fetch_timeout_s(), rec) * 1000 == pytest.approx(float(want_ms), abs=1)
    other = MachineryRecord()                                       # a second run: nothing of the first one's
    assert transfers.fetch_scale(other) == 1.0 and transfers.fetch_scale(rec) == 3.0
    assert rec.as_json() == {**rec.as_json(), "factor": 5.0}       # the report still shows what was measured


def test_the_matrix_rechecks_exactly_the_links_under_their_class_bar() -> None:
    """PF-004 judged one same-node link slow on a loaded host (0.0168 against a 0.0699 median): the
    links under the bar are timed again alone; the others are not."""
    from conformance.areas.performance.bench import slow_links
    gbps = [[None, 0.0699, 0.01, 0.011], [0.0168, None, 0.01, 0.011], [0.0105, 0.01, None, 0.07],
            [0.01, 0.0102, 0.072, None]]
    same = [[i // 2 == j // 2 for j in range(4)] for i in range(4)]      # nodes {0, 1} and {2, 3}
    assert slow_links(gbps, same, 0.25) == [(1, 0)]
    assert slow_links(gbps, same, 0.0) == []


def test_the_terminals_blocking_checks_column_is_bounded_with_a_count() -> None:
    """A 1-node run blocks stable on dozens of checks: the terminal's column stays within its
    width and counts the rest; report.md's table lists them all."""
    from conformance.report.build import TERMINAL_BLOCKERS_WIDTH, bounded_join, tier_table
    ids = [f"TR-{i:03d}" for i in range(1, 41)]
    report = {"tiers": [{"name": "stable", "achieved": False, "conditions": [], "below": None,
                         "blocking": [{"id": cid, "outcome": "fail"} for cid in ids]}]}
    row = tier_table(report, blockers_width=TERMINAL_BLOCKERS_WIDTH).splitlines()[2]
    cell = row.split("|")[3].strip()
    assert len(cell) <= TERMINAL_BLOCKERS_WIDTH and cell.startswith("TR-001(FAIL), TR-002(FAIL)")
    shown = cell.count("(FAIL)")
    assert cell.endswith(f"+{len(ids) - shown} more")
    assert tier_table(report).count("(FAIL)") == len(ids)
    assert bounded_join(["a", "b"], 4) == "a, b" and bounded_join(["aaa", "bbb", "ccc"], 12) == "aaa, +2 more"
    assert bounded_join([], 10) == "" and bounded_join(["x"], None) == "x"
