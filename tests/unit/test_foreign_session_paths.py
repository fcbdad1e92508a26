"""Other Ray sessions' folders, which the preflight records with their processes, reach a report
shortened like the run's own local paths (a neighbour's `/tmp/ray/session_…` reached report.json).
tests/ray/test_firsthour_runs.py runs the same beside a real foreign session."""
from __future__ import annotations

import json
import tempfile

from conformance.report.local_paths import portable_processes
from conformance.run.left_behind import left_behind
from conformance.run.preflight import PreflightResult

FOREIGN = tempfile.gettempdir() + "/ray/session_2026-12-03_12-00-00_000000_4242"
OURS = tempfile.gettempdir() + "/ray/session_2026-12-03_12-01-00_000000_4343"


def test_the_preflight_section_carries_no_foreign_session_path() -> None:
    procs = [{"pid": 4242, "kind": "raylet", "session": FOREIGN}, {"pid": 4243, "kind": "worker", "session": None}]
    result = PreflightResult(host={"available_memory_mb": 1000.0, "shm": {}, "ray_processes": procs})
    text = json.dumps(result.as_dict())
    assert FOREIGN not in text and tempfile.gettempdir() + "/" not in text
    assert result.as_dict()["host"]["ray_processes"][0]["session"] == "$TMPDIR/ray/session_2026-12-03_12-00-00_000000_4242"
    assert result.host["ray_processes"][0]["session"] == FOREIGN        # the run keeps matching on the real path


def test_what_the_run_left_names_its_sessions_without_their_path() -> None:
    after = {"ray_processes": [{"pid": 99, "kind": "raylet", "session": OURS}], "shm": {}}
    left = left_behind({"ray_processes": [], "shm": {}}, after, [OURS])
    assert [p["pid"] for p in left["ray_processes"]] == [99]
    assert tempfile.gettempdir() + "/" not in json.dumps(left)
    assert portable_processes([{"pid": 1, "kind": "gcs_server"}]) == [{"pid": 1, "kind": "gcs_server"}]


def test_on_the_vendors_cluster_its_live_processes_and_held_segments_are_its_own() -> None:
    """On 4 namespace hosts over --ray-address, a correct run printed "left on the host: 4 Ray
    process(es) of this run still alive" (a raylet the fault driver restarted, pooled workers) and
    a segment a live worker still held: the cluster keeps running after the run, so those are its
    state. A segment the run's processes held and nobody holds any more is still the run's."""
    from conformance.report.guidance import left_behind_lines

    after = {"ray_processes": [{"pid": 99, "kind": "raylet", "session": OURS}, {"pid": 98, "kind": "ray::", "session": OURS}],
             "shm": {"entries": ["simxfer-1-a", "simxfer-1-b"],
                     "detail": {"simxfer-1-a": {"held": True, "bytes": 1 << 20}, "simxfer-1-b": {"held": False, "bytes": 1 << 20}}}}
    before: dict[str, object] = {"ray_processes": [], "shm": {}}
    seen = ["simxfer-1-a", "simxfer-1-b"]
    started_here = left_behind(before, after, [OURS], seen)
    assert [p["pid"] for p in started_here["ray_processes"]] == [99, 98] and started_here["shm_entries_count"] == 2
    assert "cluster_kept" not in started_here
    vendors = left_behind(before, after, [OURS], seen, vendor_cluster=True)
    assert vendors["ray_processes"] == [] and vendors["shm_entries"] == ["simxfer-1-b"]
    kept = vendors["cluster_kept"]
    assert [p["pid"] for p in kept["ray_processes"]] == [99, 98] and kept["shm_entries_held"] == ["simxfer-1-a"]
    lines = left_behind_lines(vendors)
    assert not any("of this run still alive" in x for x in lines)
    assert any("1 segment(s) this run's processes held are still there" in x and "simxfer-1-b" in x for x in lines)
    [kept_line] = [x for x in lines if "keeps running" in x]
    assert "2 Ray process(es) started during the run (99 (raylet), 98 (ray::))" in kept_line
    assert "1 /dev/shm segment(s)" in kept_line and "simxfer-1-a (1.0 MB)" in kept_line
