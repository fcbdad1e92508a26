"""What the suite says about a run tells the truth: a waived check reads WAIVED while it runs,
titles say where a check measures, and the ceiling and SHOULD slack count what this run's
environment cannot do (pure functions over the shipped data; no Ray)."""
from __future__ import annotations

import datetime as dt

from conformance.catalog.data import Waiver, load_suite_data
from conformance.run.hooks import area_docs


def _report(outcomes: dict[str, str], shape: dict, nodes: int = 2, mode: str | None = "local") -> dict:
    from conformance.catalog.ladder import RunContext, compute_tiers

    data = load_suite_data()
    checks = [{"id": c.id, "area": c.area, "level": c.level, "outcome": outcomes.get(c.id, "pass"),
               "reason": None if outcomes.get(c.id, "pass") == "pass" else "r"} for c in data.checklist.active()]
    tier, tiers = compute_tiers(checks, data.checklist, data.ladder, RunContext(True, nodes, shape))
    return {"checks": checks, "tier": tier, "tiers": tiers, "shape": shape,
            "cluster": {"nodes": nodes, "mode": mode}, "manifest": {"transport": {"name": "X"}}}


def test_progress_prints_waived_for_a_failed_check_under_an_active_waiver() -> None:
    from conformance.run.progress import progress_line, shown_outcome

    waivers = [Waiver("FR-016", "https://x/1", "upstream", "2030-01-01", False)]
    today = dt.date(2029, 1, 1)
    assert shown_outcome("fail", "FR-016", waivers, today) == "waived"
    assert shown_outcome("pass", "FR-016", waivers, today) == "pass"
    assert shown_outcome("error", "FR-016", waivers, today) == "error"     # an error is never waivable
    assert shown_outcome("fail", "FR-015", waivers, today) == "fail"
    assert shown_outcome("fail", "FR-016", waivers, dt.date(2031, 1, 1)) == "fail"  # expired
    line = progress_line(3, 9, "FR-016", "restart", shown_outcome("fail", "FR-016", waivers, today), 1.0, 2.0, 3.0)
    assert "WAIVED" in line and "FAIL" not in line


def test_the_shipped_waivers_read_waived_in_progress() -> None:
    from conformance.run.progress import shown_outcome

    data = load_suite_data()
    for w in data.waivers:
        assert shown_outcome("fail", w.check, data.waivers, dt.date.fromisoformat(w.expires)) == "waived"


def test_pf003_title_says_where_it_measures() -> None:
    title = load_suite_data().checklist.by_id()["PF-003"].title
    assert "baseline fits" in title and not title.endswith("at the largest size")


def test_suite_started_cluster_rules_out_partition_checks_and_says_the_slack() -> None:
    from conformance.report.next_steps import next_steps

    data = load_suite_data()
    docs = area_docs()
    shoulds = [c.id for c in data.checklist.active() if c.level == "SHOULD" and not c.provisional]   # counted ones
    shape = {"nodes": 2, "devices_per_node": 4, "domain_labels": True}
    na = {"FR-017": "not_applicable", "FR-018": "not_applicable"}
    steps = next_steps(_report(na, shape), data.checklist, data.ladder, docs)
    ceiling = steps["shape_ceiling"]
    slack = ceiling["slack"]
    assert ceiling["tier"] == "stable" and slack["tier"] == "stable"
    assert slack["total"] == len(shoulds) and slack["possible"] == len(shoulds) - 2
    assert slack["misses_allowed"] == slack["possible"] - slack["needed"] >= 0
    assert f"{slack['misses_allowed']} more SHOULD miss" in ceiling["reason"]
    assert "every tier" in ceiling["reason"]
    # the same checks on a --ray-address cluster: the environment is not judged, both may pass
    remote = next_steps(_report(na, shape, mode="remote"), data.checklist, data.ladder, docs)
    assert remote["shape_ceiling"]["slack"]["possible"] == len(shoulds)
    # where FR-017/018 block (stable not reached through them), the action names the environment
    fail_shoulds = {cid: "fail" for cid in shoulds if cid not in na}
    blocked = next_steps(_report({**na, **fail_shoulds}, shape), data.checklist, data.ladder, docs)
    by_id = {b["id"]: b for b in blocked["blocking"]}
    assert by_id["FR-017"]["action"].startswith("this run's environment: needs a fault driver that can partition")


def test_shape_and_environment_together_can_exhaust_the_share() -> None:
    """No domain labels (TL-008, TL-014) plus a suite-started cluster (FR-017, FR-018): stable's
    SHOULD share is out of reach, and the ceiling says so instead of "allows every tier"."""
    from conformance.catalog.ladder import context_from_report, shape_ceiling

    data = load_suite_data()
    shape = {"nodes": 2, "devices_per_node": 4, "domain_labels": False}
    ceiling = shape_ceiling(data.checklist, data.ladder, context_from_report(_report({}, shape)))
    assert ceiling["tier"] == "beta" and "SHOULD" in ceiling["reason"]
    assert all(cid in ceiling["reason"] for cid in ("TL-008", "TL-014", "FR-017", "FR-018"))
    # each check beside its own reason: FR-017/FR-018 need a partitioning fault driver, not devices
    from conformance.catalog.ladder import shape_limits
    limits = shape_limits(data.ladder.shape_policy, context_from_report(_report({}, shape)).shape,
                          context_from_report(_report({}, shape)).environment)
    fr = f"FR-017, FR-018 cannot: {limits['FR-017']}"
    assert fr in ceiling["reason"] and limits["FR-017"] != limits["TL-008"], ceiling["reason"]
    assert f"TL-008, TL-014 cannot: {limits['TL-008']}" in ceiling["reason"]


def test_no_cluster_started_rules_nothing_out_by_node_count() -> None:
    """A run that started no cluster (a partial run, a failed preflight) observed 0 nodes: the
    ceiling must not claim the hardware tops out for want of nodes."""
    from conformance.report.next_steps import next_steps, next_steps_markdown

    data = load_suite_data()
    docs = area_docs()
    shape = {"nodes": None, "devices_per_node": None, "domain_labels": None}
    steps = next_steps(_report({"DP-001": "skip"}, shape, nodes=0, mode=None), data.checklist, data.ladder, docs)
    text = "\n".join(next_steps_markdown(steps))
    assert "0 nodes" not in text and "this run has 0" not in text
    assert steps["shape_ceiling"]["tier"] == data.ladder.names()[-1]


def test_a_run_without_ray_address_is_suite_started_even_before_its_cluster_starts() -> None:
    from conformance.catalog.ladder import environment_facts

    assert environment_facts({"mode": None, "address": None, "nodes": 0}) == {"partition_faults": False}
    assert environment_facts({"mode": "remote", "address": "10.0.0.1:6379"}) == {"partition_faults": None}
    assert environment_facts({}) == {"partition_faults": None}      # unknown: nothing ruled out
