"""Held-out round 34, S1 (redteam/FINDINGS.md): one real run (reports/example) cut by hand into two
"shards" with a vendor-chosen plan (shard 2: PF-002 and PF-003 alone) and PF-001's 256 MiB trials
x0.1 in shard 1, merged and verified stable. The recorded plan is now held to its structure
(report.merge.plan_problems: the checks of one measurement, catalog.shards.SAME_SHARD, in one
shard), and a merged report's evidence line holds the rules of one measurement over its checks
(signing/merged_evidence.py), on the example's own records: the real split accepted, the
forgery refused."""
from __future__ import annotations

import copy
import json
from functools import lru_cache
from pathlib import Path
from typing import Any

from conformance.catalog import shards as sh
from conformance.catalog.data import Checklist, Ladder, load_run_knobs
from conformance.report import merge as mg

EXAMPLE = Path(__file__).resolve().parents[2] / "reports" / "example" / "report.json"


@lru_cache(maxsize=1)
def _example() -> dict[str, Any]:
    return json.loads(EXAMPLE.read_text())


@lru_cache(maxsize=1)
def _release() -> tuple[Checklist, Ladder]:
    from conformance.catalog.releases import default_path, load_release_data, load_releases

    path = default_path()
    return load_release_data(load_releases(path)[_example()["suite"]["version"]], path)


def _checklist() -> Checklist:
    return _release()[0]


def _core() -> tuple[str, ...]:
    return _release()[1].knobs.shards.core


def _suites_plan(count: int = 2) -> list[list[str]]:
    ids = [c["id"] for c in _example()["checks"]]
    return sh.release_plan(ids, count, _checklist(), _core(), load_run_knobs()["durations"])


def _forged_plan() -> list[list[str]]:
    two = ["PF-002", "PF-003"]
    return [[c["id"] for c in _example()["checks"] if c["id"] not in _core() and c["id"] not in two], two]


def _shards(plan: list[list[str]]) -> dict[int, mg.ShardReport]:
    """The example as the shards of `plan` (each its slice and the core; only selection.shard matters here)."""
    out = {}
    for i in range(1, len(plan) + 1):
        report = copy.deepcopy(_example())
        report["selection"]["shard"] = sh.selection_shard(sh.Shard(i, len(plan)), plan, _core())
        out[i] = mg.ShardReport(f"{i}-of-{len(plan)}", report)
    return out


def _plan_problems(plan: list[list[str]]) -> list[str]:
    from conformance.signing.shards import plan_lines_problems

    return plan_lines_problems(_shards(plan), _release())


def test_the_suites_plan_keeps_the_sweep_and_its_copies_in_one_shard() -> None:
    for count in range(2, _release()[1].knobs.shards.max_count + 1):
        where = {c: i for i, part in enumerate(_suites_plan(count)) for c in part}
        assert where["PF-001"] == where["PF-002"] == where["PF-003"], count
        assert where["TR-001"] == where["TR-005"], count


def test_s1_a_plan_that_cuts_the_copies_from_their_sweep_is_refused() -> None:
    """The suite's plans pass; so does another partition that keeps each measurement's checks
    together (the plan is held to its structure, not to durations no release binds); S1's plan,
    PF-002 and PF-003 alone in shard 2, is refused in one line naming the group."""
    assert _plan_problems(_suites_plan()) == []
    assert _plan_problems(_suites_plan(3)) == []
    assert _plan_problems(list(reversed(_suites_plan()))) == []
    got = _plan_problems(_forged_plan())
    assert got == ["selection.shard.plan: the shards' plan splits PF-001, PF-002, PF-003 over shards 1, 2 (they "
                   "record one measurement of the run: catalog.shards.SAME_SHARD keeps them in one shard)"], got


def test_a_core_the_vendor_chose_and_a_plan_of_another_count_are_refused() -> None:
    plan = _suites_plan()
    shards = _shards(plan)
    for s in shards.values():
        s.report["selection"]["shard"]["core"] = [*_core(), "PF-001"]   # type: ignore[index]
    from conformance.signing.shards import plan_lines_problems

    got = plan_lines_problems(shards, _release())
    assert got and got[0].startswith("selection.shard.core: shard 1-of-2 records the core"), got
    shards = _shards(plan)
    for s in shards.values():
        s.report["selection"]["shard"]["plan"] = [*plan, []]   # type: ignore[index]
    assert plan_lines_problems(shards, _release())[0].endswith("a plan of 3 slice(s) for 2 shards")


def _merged(edit: Any = None) -> dict[str, Any]:
    """The example as a merged report of two shards (selection.shards: what marks one merged)."""
    report = copy.deepcopy(_example())
    report["selection"]["shards"] = [{"shard": "1-of-2", "report_sha256": "a" * 64},
                                     {"shard": "2-of-2", "report_sha256": "b" * 64}]
    if edit:
        edit(report)
    return report


def _evidence(report: dict[str, Any]) -> tuple[bool, str]:
    from conformance.report.view import Report
    from conformance.signing.evidence import evidence_lines

    line = next(x for x in evidence_lines(Report.from_json(report), _checklist()) if x[0] == "evidence")
    return line[1], line[2]


def _lower_sweep(report: dict[str, Any]) -> None:
    """S1's edit: PF-001's largest size 10x slower (PF-002 and PF-003 keep the run's trials)."""
    from conformance.rdt.config import size_key

    metrics = next(c for c in report["checks"] if c["id"] == "PF-001")["metrics"]
    row = metrics["bandwidth"][size_key(max(metrics["sizes_bytes"]))]
    row["trials_gbps"] = [x * 0.1 for x in row["trials_gbps"]]


def test_s1_a_merged_reports_evidence_holds_the_copies_to_the_sweep_of_their_shard() -> None:
    ok, said = _evidence(_merged())
    assert ok, said
    ok, said = _evidence(_merged(_lower_sweep))
    assert not ok and "are not the sweep's" in said and "PF-002 largest_size_trials_gbps" in said, said


def test_a_merged_reports_evidence_holds_tr001_and_tr005_to_one_probe() -> None:
    def drop(report: dict[str, Any]) -> None:
        tr = next(c for c in report["checks"] if c["id"] == "TR-001")["metrics"]
        for d in tr["devices"]:
            rec = tr[d] if isinstance(tr.get(d), dict) else tr
            rec["dtypes"] = rec["dtypes"][:-1]
            break
    ok, said = _evidence(_merged(drop))
    assert not ok and "TR-001 and TR-005 record different dtypes" in said, said
