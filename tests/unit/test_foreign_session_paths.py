"""Other Ray sessions' folders, which the preflight records with their processes, reach a report
shortened like the run's own local paths (a neighbour's `/tmp/ray/session_…` reached report.json).
tests/ray/test_firsthour_runs.py runs the same beside a real foreign session."""
from __future__ import annotations

import json
import tempfile

from conformance.report.local_paths import portable_processes
from conformance.run.preflight import PreflightResult, left_behind

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
