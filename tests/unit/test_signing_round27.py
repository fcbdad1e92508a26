"""Held-out round 27 (redteam/FINDINGS.md): each rule verify gained for round 25's attacks that still
verified, held with teeth (a forged record refused, the real one accepted) on figures copied from
reports/example (a real 2-node simulated certification)."""
from __future__ import annotations

import copy
from typing import Any

# reports/example's run: its two nodes (environment.devices.nodes) and the clusters it started
NODE_A, NODE_B = "31bf8eb21a218ebe1ec89301072caa6906879052d6b33e00dab6d1e1", "7ee44d4be06f7e6cf37510d24dc65b4fb4281ad87b1b2f5790f9673a"
ENVIRONMENT: dict[str, Any] = {"cpu_count": 2, "devices": {"nodes": [
    {"node_id": NODE_A, "count": 4.0}, {"node_id": NODE_B, "count": 4.0}]}}
CLUSTER: dict[str, Any] = {"history": [
    {"shape": "shared", "also": ["recovery-devices"], "nodes": 2, "ok": True},
    {"shape": "recovery-restart", "also": ["recovery-transfers", "recovery-fetch-timeout"], "nodes": 2, "ok": True},
    {"shape": "recovery-nodes", "nodes": 3, "ok": True},
    {"shape": "host-without-device", "nodes": 2, "ok": True},
    {"shape": "preset-visible", "nodes": 1, "ok": True}]}


def _coverage_checks() -> list[dict[str, Any]]:
    """reports/example's records of DP-006 (its device counts), DP-013 (shared cluster), FR-001 (the
    recovery-devices shape, run on the shared cluster) and FR-007 (the recovery node lab)."""
    both = {"alive": 2, "mode": "sample", "nodes": ["31bf8eb2", "7ee44d4b"]}
    return [
        {"id": "DP-006", "outcome": "pass", "metrics": {"node_coverage": dict(both),
                                                        "device_counts": {"31bf8eb2": 4.0, "7ee44d4b": 4.0}}},
        {"id": "DP-013", "outcome": "pass", "metrics": {"node_coverage": {"alive": 2, "mode": "sample",
                                                                          "nodes": ["31bf8eb2"]}}},
        {"id": "FR-001", "outcome": "pass", "metrics": {"node_coverage": dict(both),
                                                        "per_node": {"31bf8eb2": {}, "7ee44d4b": {}}}},
        {"id": "FR-007", "outcome": "pass", "metrics": {"node_coverage": {
            "alive": 3, "mode": "sample", "nodes": ["2b7348c2", "330b06f7", "cfce3f35"]}}},
        {"id": "TL-001", "outcome": "pass", "metrics": {"node_coverage": dict(both),
                                                        "nodes": {NODE_A: {}, NODE_B: {}}}}]


def _shapes() -> dict[str, str]:
    """The shapes of the checklist this verifier holds (the release reports/example names has the same)."""
    from conformance.catalog.data import load_checklist
    from conformance.signing.coverage_rule import release_shapes

    return release_shapes(load_checklist())


def _coverage(checks: list[dict[str, Any]], *, remote: bool = False,
              cluster: dict[str, Any] | None = None) -> list[str]:
    from conformance.signing.coverage_rule import coverage_problems

    return coverage_problems(checks, ENVIRONMENT, CLUSTER if cluster is None else cluster, remote=remote, merged=False,
                             shapes=_shapes())


def test_the_real_coverage_agrees_with_the_runs_clusters() -> None:
    assert _coverage(_coverage_checks()) == []
    assert _coverage(_coverage_checks(), remote=True) == []


def test_the_checklist_declares_the_shapes() -> None:
    """The shapes are the checklist's `cluster:`: the recovery node lab's checks are not the run's cluster."""
    shapes = _shapes()
    assert shapes["FR-007"] == "recovery-nodes" and shapes["DP-015"] == "preset-visible"
    assert shapes["DP-006"] == "shared" and shapes["FR-001"] == "recovery-devices"
    assert "DP-001" not in shapes           # no cluster of the run: read as "shared", as when marks were read


def test_a_coverage_naming_a_node_the_run_never_had_is_refused() -> None:
    """N25_06: DP-013's and FR-001's coverage rewritten to 'deadbeef' (not a node of environment.devices)."""
    checks = _coverage_checks()
    checks[1]["metrics"]["node_coverage"]["nodes"] = ["deadbeef"]
    problems = _coverage(checks)
    assert len(problems) == 1 and "DP-013" in problems[0] and "deadbeef" in problems[0]
    checks = _coverage_checks()
    checks[2]["metrics"]["node_coverage"]["nodes"] = ["deadbeef"]
    assert any("FR-001" in p and "not the run's" in p for p in _coverage(checks))


def test_a_coverage_with_a_node_hidden_is_refused_by_the_judged_record() -> None:
    """N25_07: DP-006/TL-001 coverage says 1 alive and lists one; their judged records keep both nodes."""
    for index in (0, 4):
        checks = _coverage_checks()
        cov = checks[index]["metrics"]["node_coverage"]
        cov["alive"], cov["nodes"] = 1, cov["nodes"][:1]
        problems = _coverage(checks)
        assert any("its own record names node(s) ['7ee44d4b']" in p for p in problems), problems
        assert any("says 1 node(s) alive" in p for p in problems), problems
        checks[index]["outcome"] = "fail"          # a node lost mid-run is a failed check's to show
        assert _coverage(checks) == []


def test_a_lab_cluster_is_held_to_its_recorded_start() -> None:
    """A check of a cluster the suite started for it alone: its shape recorded, its alive count at most the start's."""
    checks = _coverage_checks()
    checks[3]["metrics"]["node_coverage"]["alive"] = 9
    assert any("FR-007" in p and "started with 3" in p for p in _coverage(checks))
    unrecorded = copy.deepcopy(CLUSTER)
    unrecorded["history"] = [h for h in unrecorded["history"] if h["shape"] != "recovery-nodes"]
    assert any("FR-007" in p and "does not record starting" in p for p in _coverage(_coverage_checks(),
                                                                                      cluster=unrecorded))


# ------------------------------------------------------------------ N25_13: a host verdict carries its measurements
MACHINERY_CLUSTER: dict[str, Any] = dict(CLUSTER, machinery={"factor": 1.0, "nominal_s": {"worker_start": 3.0},
                                                             "slowest_s": {"worker_start": 9.14}})
HOST_WAIT = {"bound_s": 120.0, "factor": 1.0, "granted_s": 120.0, "owner": "ray", "took_s": 121.3, "verdict": "host",
             "what": "starting the member actors"}
HOST_REASON = ("not judged: host: starting the member actors: Ray's machinery did not do it within 121s (the 120s bound "
               "stretched x1.0 by this run's measured worker start, slowest 9.1s); a bare worker took 9.1s to start "
               "just now; the host was too slow for Ray, the plugin was not judged")


def _host(entry: dict[str, Any], cluster: dict[str, Any] | None = None,
          preflight: dict[str, Any] | None = None) -> list[str]:
    from conformance.signing.host_verdict import host_verdict_problems

    return host_verdict_problems([entry], MACHINERY_CLUSTER if cluster is None else cluster, preflight or {"ok": True},
                                 shapes=_shapes())


def test_a_host_verdict_with_its_measurements_is_accepted() -> None:
    """The forms the run writes: the wait that ran out, the reason's grant and fresh sample the
    machinery record holds, Ray's registration in a start the history records failing, the preflight."""
    assert _host({"id": "CC-009", "outcome": "error", "reason": HOST_REASON, "metrics": {"waits": {"each": [HOST_WAIT]}}}) == []
    assert _host({"id": "CC-009", "outcome": "error", "reason": HOST_REASON, "metrics": {}}) == []
    failed = copy.deepcopy(MACHINERY_CLUSTER)
    failed["history"].append({"shape": "shared", "ok": False, "reason": "cluster 'shared' not started"})
    start = ("not judged: host: Ray's node did not register within Ray's own fixed 30 s startup wait (a loaded host; "
             "the plugin was not judged; rerun on a less loaded host): ...")
    assert _host({"id": "CC-009", "outcome": "error", "reason": start, "metrics": {}}, cluster=failed) == []
    # CC-003's hook job quotes its own machinery (a sample the run never noted), then budget.host_failed
    # the run's: the run's own sample is what the record holds
    hook = ("not judged: host: starting the hook job's members: Ray's machinery did not do it within 121s (the 120s "
            "bound stretched x1.0 by this run's measured worker start, slowest 25.0s); a bare worker took 25.0s to "
            "start just now; the host was too slow for Ray, the plugin was not judged (the slowest worker start "
            "before: 9.1s; a bare worker took 9.1s to start just now)")
    assert _host({"id": "CC-003", "outcome": "error", "reason": hook, "metrics": {}}) == []
    preflight = {"ok": False, "findings": [{"level": "error", "message": "not judged: host: node n1: the preflight task"}]}
    assert _host({"id": "CC-009", "outcome": "error", "reason": "not judged: host: the preflight: node n1: ...",
                  "metrics": {}}, preflight=preflight) == []


def test_a_failure_rewritten_to_a_host_verdict_is_refused() -> None:
    """N25_13: CC-009 failed; its error rewritten 'not judged: host: ...', metrics emptied."""
    forged = {"id": "CC-009", "outcome": "error", "metrics": {},
              "reason": "not judged: host: Ray's node did not register within 30 s"}
    assert "without the host's measurements" in _host(forged)[0]
    suite_text = dict(forged, reason=("not judged: host: Ray's node did not register within Ray's own fixed 30 s "
                                      "startup wait"))
    assert _host(suite_text) != []          # the run recorded no failed start of the shared cluster
    sample_only = dict(forged, reason="not judged: host: a bare worker took 0.2s to start just now")
    assert _host(sample_only) != []         # the fresh sample without what the wait was granted
    beyond = dict(forged, reason=HOST_REASON.replace("took 9.1s", "took 30.0s"))
    assert _host(beyond) != []              # a sample the machinery record never noted
    short = dict(forged, metrics={"waits": {"each": [dict(HOST_WAIT, took_s=3.0)]}}, reason="not judged: host: x")
    assert _host(short) != []               # a "host" wait that did not run out its grant
    attempt = {"id": "TR-018", "outcome": "pass", "metrics": {},
               "attempts": [{"outcome": "error", "reason": "not judged: host: hung"}, {"outcome": "pass"}]}
    assert "(attempt 1)" in _host(attempt)[0]


# ------------------------------------------------------------------ N25_15: host_load is one host's reading
def test_host_load_readings_of_one_host_are_accepted_and_impossible_ones_refused() -> None:
    """reports/example's readings (2 CPUs, 96-100 % busy) pass; a share past 100 %, a CPU count the
    host does not have or that changes between checks is refused. An idle reading is not (N25_15:
    nothing else in the report measures the CPUs' load; conformance/signing/host_load_rule.py)."""
    from conformance.signing.host_load_rule import host_load_problems

    real = [{"id": "TR-018", "host_load": {"busy_pct": 95.9, "cpus": 2, "load1": 3.1, "steal_pct": 0.0}},
            {"id": "PF-001", "host_load": {"busy_pct": 96.0, "cpus": 2, "load1": 3.12, "steal_pct": 0.1}}]
    assert host_load_problems(real, ENVIRONMENT) == []
    idle = copy.deepcopy(real)
    for c in idle:
        c["host_load"].update(busy_pct=0.0, load1=0.0, steal_pct=0.0)
    assert host_load_problems(idle, ENVIRONMENT) == []      # the vendor's word: see the module's docstring
    over = copy.deepcopy(real)
    over[0]["host_load"].update(busy_pct=90.0, steal_pct=40.0)
    assert "not shares" in host_load_problems(over, ENVIRONMENT)[0]
    more = copy.deepcopy(real)
    more[1]["host_load"]["cpus"] = 64
    problems = host_load_problems(more, ENVIRONMENT)
    assert any("the host has 2" in p for p in problems) and any("different checks" in p for p in problems)


# ------------------------------------------------------------------ N25_16: diff never passes an untestable regression silently
def test_a_figure_without_spread_that_regressed_is_unconfirmed_and_exits_3() -> None:
    """N25_16 on reports/example: PF-004's slowest cross-node link at 0.4 of its class median (was
    0.83) with one run a side and every reference unchanged: not a counted regression (one run
    cannot test it) but UNCONFIRMED, exit 3 with --fail-unconfirmed; the report against itself exits 0."""
    import json
    import statistics
    from pathlib import Path

    from conformance.catalog.data import load_suite_data
    from conformance.signing.diff import EXIT_UNCONFIRMED, diff_reports, exit_code

    example = json.loads((Path(__file__).resolve().parents[2] / "reports" / "example" / "report.json").read_text())
    suite = load_suite_data()
    assert exit_code(diff_reports(example, example, suite)) == 0
    new = copy.deepcopy(example)
    m = next(c for c in new["checks"] if c["id"] == "PF-004")["metrics"]
    ends = [e.split(":")[0] for e in m["endpoints"]]
    cells = [(i, j) for i in range(len(ends)) for j in range(len(ends))
             if i != j and ends[i] != ends[j] and m["matrix_gbps"][i][j] is not None]
    i, j = min(cells, key=lambda ij: m["matrix_gbps"][ij[0]][ij[1]])
    m["matrix_gbps"][i][j] = 0.4 * m["links"]["cross_node"]["median_gbps"]
    values = [m["matrix_gbps"][a][b] for a, b in cells]
    m["links"]["cross_node"] = {"median_gbps": statistics.median(values), "min_gbps": min(values),
                                "min_fraction": min(values) / statistics.median(values)}
    found = diff_reports(example, new, suite)
    pf = [f for f in found if f.check == "PF-004"]
    assert [(f.kind, f.regression) for f in pf] == [("unconfirmed", False)], found
    assert exit_code(found) == 0 and exit_code(found, fail_unconfirmed=True) == EXIT_UNCONFIRMED
    assert exit_code(diff_reports(new, example, suite), fail_unconfirmed=True) == 0   # it got better: untested


def test_an_earlier_host_attempt_in_the_suites_words_is_accepted() -> None:
    """An earlier attempt keeps only its reason: the topology groups' pending text (its grant) and
    machinery.host_reason's text (grant and fresh sample) are the run's own forms; a bare claim is not."""
    pending = ("not judged: host: a group of 2 bundles (pinned to 31bf8eb2) was not placed by Ray within 60s although "
               "the labels of 31bf8eb2 match it and their devices and description say so too")
    for reason in (pending, HOST_REASON):
        entry = {"id": "TL-013", "outcome": "pass", "metrics": {},
                 "attempts": [{"outcome": "error", "reason": reason, "duration_s": 70.0}]}
        assert _host(entry) == [], reason
    bare = {"id": "TL-013", "outcome": "pass", "metrics": {},
            "attempts": [{"outcome": "error", "reason": "not judged: host: the group hung", "duration_s": 70.0}]}
    assert "(attempt 1)" in _host(bare)[0]
