"""The per-node coverage record (conformance.report.coverage, conformance.run.nodes): what a check
records of the nodes it used, how report.md and report.html show it, and the node mode."""
from __future__ import annotations

from typing import Any

import pytest

from conformance.report import coverage
from conformance.report.coverage import COVERAGE
from conformance.run import nodes


def test_record_merges_short_ids_and_keeps_the_largest_alive_count() -> None:
    metrics: dict = {}
    nodes.record(metrics, ["a" * 56, None, "b" * 8], 3, "sample")
    nodes.record(metrics, ["a" * 8, "c" * 40], 2, "sample")
    assert metrics[COVERAGE] == {"nodes": ["a" * 8, "b" * 8, "c" * 8], "alive": 3, "mode": "sample"}
    assert coverage.coverage_text(metrics) == "nodes: 3 of 3"


@pytest.mark.parametrize("metrics", [None, {}, {COVERAGE: "x"}, {COVERAGE: {"nodes": [1], "alive": 2}},
                                     {COVERAGE: {"nodes": ["a"], "alive": True}},
                                     {COVERAGE: {"nodes": ["a"], "alive": -1}}])
def test_a_missing_or_malformed_record_shows_nothing(metrics: object) -> None:
    assert coverage.coverage_text(metrics) == ""


def report_with(*checks: dict, selection: dict | None = None) -> dict:
    return {"checks": list(checks), "selection": selection or {}}


def test_markdown_section_only_when_a_check_records_coverage() -> None:
    old = report_with({"id": "DP-006", "metrics": {"device_counts": {}}})
    assert coverage.coverage_markdown(old) == []   # an older report's page is unchanged
    new = report_with({"id": "DP-006", "metrics": {COVERAGE: {"nodes": ["ab12cd34", "ef56ab78"], "alive": 4,
                                                                "mode": "all"}}},
                      {"id": "DP-001", "metrics": {}}, selection={"nodes": {"mode": "all"}})
    text = "\n".join(coverage.coverage_markdown(new))
    assert "## Nodes exercised" in text and "node mode: all" in text
    assert "| DP-006  | nodes: 2 of 4 | ab12cd34, ef56ab78 |" in text
    assert "DP-001" not in text


def test_markdown_rows_are_not_read_as_the_checks_table() -> None:
    """verify's companions line reads report.md's check rows (id, area, level, outcome) from the
    table under '## Checks' only: the coverage table's rows are never read as check rows."""
    from conformance.signing.companions import _checks_rows

    new = report_with({"id": "TL-001", "metrics": {COVERAGE: {"nodes": ["ab12cd34"], "alive": 1, "mode": "sample"}}})
    lines = ["## Checks", "", "| check | area | level | outcome | s | reason |", "|---|---|---|---|---|---|",
             "| TL-001 | topology | MUST | PASS | 0.1 | |", ""] + coverage.coverage_markdown(new)
    rows = _checks_rows(lines)
    assert rows is not None and [r[0] for r in rows] == ["TL-001"]


def test_parse_mode() -> None:
    assert nodes.parse_mode(None) == nodes.SAMPLE
    assert nodes.parse_mode("ALL") == nodes.ALL
    with pytest.raises(ValueError, match=r"--nodes: unknown node mode 'every'; expected one of sample, all"):
        nodes.parse_mode("every")


def test_wave_submits_everything_before_one_get() -> None:
    calls: list = []

    def submit(nid: str) -> list[str]:
        calls.append(("submit", nid))
        return [f"{nid}-1", f"{nid}-2"] if nid == "a" else [f"{nid}-1"]

    def get(refs: list[str], what: str) -> list[str]:
        calls.append(("get", tuple(refs)))
        return [r.upper() for r in refs]

    out = nodes.wave(submit, ["a", "b"], get, "probes")
    assert out == {"a": ["A-1", "A-2"], "b": ["B-1"]}
    assert calls == [("submit", "a"), ("submit", "b"), ("get", ("a-1", "a-2", "b-1"))]


def test_first_failing_picks_the_first_bad_node() -> None:
    by_node = {"a": {"ok": True}, "b": {"ok": False}, "c": {"ok": False}}
    assert nodes.first_failing(by_node, lambda ev: not ev["ok"]) == "b"
    assert nodes.first_failing({"a": {"ok": True}}, lambda ev: not ev["ok"]) is None


def test_run_mode_of_a_stand_in_is_sample() -> None:
    assert nodes.run_mode(object()) == nodes.SAMPLE


# ------------------------------------------------------------------ the selection record

def test_selection_records_the_node_mode() -> None:
    from conformance.catalog.selection import selection_record

    assert "nodes" not in selection_record([])            # a caller that passes none (merge, older code)
    assert selection_record([], nodes=nodes.selection_nodes("all"))["nodes"] == {"mode": "all"}


@pytest.mark.parametrize("selection, wanted", [
    ({"args": []}, []),                                                              # an older report: no record
    ({"args": [], "nodes": {"mode": "sample"}}, []),                                 # the default, no option
    ({"args": ["--conformance-nodes=all"], "nodes": {"mode": "all"}}, []),
    ({"args": ["--conformance-nodes=ALL"], "nodes": {"mode": "all"}}, []),
    ({"args": [], "nodes": {"mode": "all"}}, ["but the recorded command line says none (sample)"]),
    ({"args": ["--conformance-nodes=all"], "nodes": {"mode": "sample"}},
     ["selection.nodes.mode is 'sample' but the recorded command line says --conformance-nodes=all"]),
    ({"args": [], "nodes": {"mode": "every"}}, ["selection.nodes.mode is 'every'; expected one of sample, all"]),
    ({"args": [], "nodes": "all"}, ["selection.nodes.mode is 'None'; expected one of sample, all"]),
])
def test_an_edited_node_record_is_not_a_certification_run(selection: dict, wanted: list[str]) -> None:
    from conformance.catalog.selection import nodes_reasons

    got = nodes_reasons(selection)
    assert len(got) == len(wanted) and all(w in g for w, g in zip(wanted, got)), got


def test_the_node_option_is_part_of_a_certification_run() -> None:
    from conformance.run.certification import arg_problems, classify_option

    assert classify_option("--conformance-nodes") == "definition"
    args = ["-p", "no:cacheprovider", "-q", "-c", "/dev/null", "--conformance-manifest=m.yaml",
            "--conformance-nodes=all", "$SUITE/checks"]
    assert arg_problems(args) == []


# ------------------------------------------------------------------ a check run on every node

def _dp008_ctx() -> Any:
    from types import SimpleNamespace

    from conformance.catalog.data import load_suite_data
    from conformance.catalog.manifest import load_manifest
    from conformance.run.budget import Budget
    from conformance.run.check_context import CheckContext
    from conformance.timing.host_load import MachineryRecord

    check = load_suite_data().checklist.by_id()["DP-008"]
    run = SimpleNamespace(manifest=load_manifest("builtin:simulated"), ray_address=None, nodes="all")
    metrics: dict = {}
    return CheckContext(run=run, check=check, metrics=metrics, shape_name="shared",
                        budget=Budget(check, metrics, MachineryRecord()))


def _tasks(n: int, good: bool = True) -> dict:
    seen = {"env_set": True, "env_value": "1", "assigned": ["1"] if good else ["2"]}
    return {"tasks_run": n, "tasks": [seen] * n}


def test_per_node_decision_records_every_node_and_judges_the_worst() -> None:
    ctx = _dp008_ctx()
    n = int(ctx.param("tasks"))
    ctx.decide_per_node({"a" * 20: _tasks(n), "b" * 20: _tasks(n)}, alive=3, resource="SIMACC")
    m = ctx.metrics
    assert set(m["per_node"]) == {"a" * 8, "b" * 8} and m["tasks_run"] == n
    assert m[COVERAGE] == {"nodes": ["a" * 8, "b" * 8], "alive": 3, "mode": "all"}

    bad = _dp008_ctx()
    with pytest.raises(AssertionError, match=r"sees '1' but Ray assigned \['2'\].*\(node bbbbbbbb, of 2 node\(s\) run\)"):
        bad.decide_per_node({"a" * 20: _tasks(n), "b" * 20: _tasks(n, good=False)}, alive=2,
                            resource="SIMACC")
    # what the judge reads (and verify re-judges) is the failing node's record
    assert bad.metrics["tasks"] == _tasks(n, good=False)["tasks"]
