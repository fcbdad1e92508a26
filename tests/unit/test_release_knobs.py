"""The knobs merge and verify judge a report by are its claimed release's (issue 48 item 1):
tiers/tiers.yaml `shards` and `nodes` (conformance/catalog/release_knobs.py), never the verifier's
run.yaml; a release whose tiers.yaml lacks them ran with LEGACY_KNOBS; a bad value is one line."""
from __future__ import annotations

import json
import shutil
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest
import yaml

from conformance.catalog import data
from conformance.catalog import shards as sh
from conformance.catalog.release_knobs import LEGACY_KNOBS
from conformance.errors import UserError
from conformance.report import merge as mg

ROOT = Path(__file__).resolve().parents[2]
EXAMPLE = ROOT / "reports" / "example" / "report.json"


def _tiers_doc() -> dict[str, Any]:
    doc: dict[str, Any] = yaml.safe_load(data.tiers_path().read_text())
    return doc


def _ladder(edit: Any = None) -> data.Ladder:
    doc = _tiers_doc()
    if edit:
        edit(doc)
    return data.parse_ladder(doc, checklist=data.load_checklist())


def _window(hours: float) -> Any:
    return lambda doc: doc["shards"].__setitem__("window_h", hours)


def _sample(size: int) -> Any:
    return lambda doc: doc["nodes"].__setitem__("sample_size", size)


def test_the_shipped_ladder_states_the_knobs_the_legacy_releases_ran_with() -> None:
    """tiers.yaml states both blocks (the schema lets an archived release lack them), today with
    the values every release before them ran with."""
    doc = _tiers_doc()
    assert "shards" in doc and "nodes" in doc
    assert data.load_ladder().knobs == LEGACY_KNOBS
    assert "shards" not in yaml.safe_load(data.run_knobs_path().read_text())


def _span(hours: float) -> dict[int, mg.ShardReport]:
    def shard(i: int, start: str, end: str) -> mg.ShardReport:
        return mg.ShardReport(f"{i}-of-2", {"started_at": start, "finished_at": end})
    end = f"2026-03-0{1 + int(hours // 24)}T{int(hours % 24):02d}:00:00+00:00"
    return {1: shard(1, "2026-03-01T00:00:00+00:00", "2026-03-01T01:00:00+00:00"),
            2: shard(2, "2026-03-01T02:00:00+00:00", end)}


def test_a_reports_window_is_its_releases_not_the_verifiers() -> None:
    """Two releases' ladders that differ only in shards.window_h judge one 98 h shard set two ways."""
    narrow, wide = _ladder(_window(72)), _ladder(_window(200))
    assert (narrow.knobs.shards.window_h, wide.knobs.shards.window_h) == (72.0, 200.0)
    found = _span(98)
    assert [p.line() for p in mg.window_problems(found, narrow.knobs.shards)] == [
        "finished_at: the shards span 98.0 h, more than the window of 72 h (the release's tiers/tiers.yaml shards.window_h)"]
    assert mg.window_problems(found, wide.knobs.shards) == []


def _nodes_line(ladder: data.Ladder | None, why: str | None = None) -> tuple[bool, str]:
    """verify's `nodes` line on the committed example, its claimed release's data being `ladder`."""
    from conformance.report.view import Report
    from conformance.signing.verify.lines import Verification
    from conformance.signing.verify.nodes import exercised_nodes_are_the_runs_choice

    report = Report.from_json(json.loads(EXAMPLE.read_text()))
    case = SimpleNamespace(report=report, release_data=((data.load_checklist(), ladder) if ladder else None, why))
    v = Verification(EXAMPLE)
    exercised_nodes_are_the_runs_choice(v, case)   # type: ignore[arg-type]  # the two fields the line reads
    line = next(x for x in v.lines if x.name == "nodes")
    return line.ok, line.detail


def test_a_reports_sample_size_is_its_releases_not_the_verifiers() -> None:
    """The example ran a sample of 1 (this verifier's file says 1 too): a release saying 2 refuses
    it, the release saying 1 passes it; without the release's data the line says why."""
    ok, said = _nodes_line(_ladder(_sample(1)))
    assert ok, said
    ok, said = _nodes_line(_ladder(_sample(2)))
    assert not ok and "the release fixes 2 (its tiers/tiers.yaml nodes.sample_size)" in said, said
    ok, said = _nodes_line(None, "this verifier lacks its tiers.yaml")
    assert not ok and "this verifier lacks its tiers.yaml" in said


def test_a_release_before_the_knobs_moved_gets_the_legacy_knobs() -> None:
    doc = _tiers_doc()
    del doc["shards"], doc["nodes"]
    assert data.parse_ladder(doc).knobs == LEGACY_KNOBS
    from conformance.catalog.releases import default_path, load_release_data, load_releases

    version = "0.1.0+data.32"   # the last archived release before the move (data.33 moved them)
    archived = load_release_data(load_releases(default_path())[version], default_path())[1]
    assert "shards" not in yaml.safe_load(Path(archived_tiers(version)).read_text())
    assert archived.knobs == LEGACY_KNOBS


def archived_tiers(version: str) -> Path:
    from conformance.catalog.releases import default_path, load_releases, release_file

    path = release_file(load_releases(default_path())[version], "tiers_sha256", default_path())
    assert path is not None
    return path


@pytest.mark.parametrize("edit, said", [
    (_window(0), "shards.window_h"),
    (lambda d: d["shards"].__setitem__("max_count", 1), "shards.max_count"),
    (lambda d: d["shards"].__setitem__("core", []), "shards.core"),
    (lambda d: d["shards"].__setitem__("core", ["XX-001"]), "tiers: shards.core: XX-001 has no area's prefix"),
    (lambda d: d["shards"].__setitem__("core", ["DP-999"]), "tiers: shards.core: unknown check id DP-999"),
    (_sample(0), "nodes.sample_size"),
    (lambda d: d["nodes"].__setitem__("size", 1), "nodes"),
])
def test_a_bad_value_is_one_line_naming_the_field(edit: Any, said: str) -> None:
    with pytest.raises(UserError) as err:
        _ladder(edit)
    assert said in str(err.value) and "\n" not in str(err.value), str(err.value)


def test_a_cli_reading_a_bad_ladder_exits_2_naming_the_field(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                             capsys: pytest.CaptureFixture[str]) -> None:
    from conformance.cli.main import main

    shutil.copytree(ROOT / "tiers", tmp_path / "tiers")
    shutil.copytree(ROOT / "schemas", tmp_path / "schemas")
    doc = _tiers_doc()
    _window(-1)(doc)
    (tmp_path / "tiers" / "tiers.yaml").write_text(yaml.safe_dump(doc, sort_keys=False))
    monkeypatch.setenv("CONFORMANCE_DATA_DIR", str(tmp_path))
    assert main(["checklist"]) == 2
    err = capsys.readouterr().err.strip()
    assert "shards.window_h" in err and "\n" not in err, err


def _plan_shards(plan: list[list[str]], core: tuple[str, ...]) -> dict[int, mg.ShardReport]:
    return {i: mg.ShardReport(f"{i}-of-{len(plan)}",
                              {"selection": {"shard": sh.selection_shard(sh.Shard(i, len(plan)), plan, core)}})
            for i in range(1, len(plan) + 1)}


def test_the_plan_is_held_to_its_structure_not_recomputed_from_durations() -> None:
    """Any partition of the release's checks outside the core that keeps each SAME_SHARD group in
    one shard passes, whatever the durations would balance; a check unknown, of the core, twice,
    or a group split is refused."""
    checklist, core = data.load_checklist(), LEGACY_KNOBS.shards.core
    ids = set(checklist.by_id())
    rest = sorted(ids - set(core))
    ok = [[c for c in rest if c.startswith(("PF", "TR"))], [c for c in rest if not c.startswith(("PF", "TR"))]]
    assert mg.plan_problems(_plan_shards(ok, core), ids, core) == []
    for bad, said in (([ok[0] + ["DP-999"], ok[1]], "names DP-999, no check of the release"),
                      ([ok[0] + [core[0]], ok[1]], f"puts {core[0]} of the core in a slice"),
                      ([ok[0], ok[1] + [ok[0][0]]], f"names {ok[0][0]} more than once"),
                      ([[c for c in ok[0] if c != "PF-003"], ok[1] + ["PF-003"]], "splits PF-001, PF-002, PF-003 over shards 1, 2"),
                      ([[c for c in ok[0] if c != "TR-005"], ok[1] + ["TR-005"]], "splits TR-001, TR-005 over shards 1, 2")):
        got = [p.line() for p in mg.plan_problems(_plan_shards(bad, core), ids, core)]
        assert len(got) == 1 and got[0].startswith("selection.shard.plan: the shards' plan ") and said in got[0], got


def test_the_planner_never_splits_a_same_shard_group() -> None:
    """Fewer units than shards: the planner splits the largest unit, never through a group."""
    checks = {c: ("performance", "shared") for c in ("PF-001", "PF-002", "PF-003", "PF-004")}
    for count in (2, 3, 4):
        slices = sh.plan_shards(checks, count, durations={"PF-001": 50.0}, default_s=3.0)
        where = {c: i for i, part in enumerate(slices) for c in part}
        assert where["PF-001"] == where["PF-002"] == where["PF-003"], slices
        assert sorted(c for part in slices for c in part) == sorted(checks)
