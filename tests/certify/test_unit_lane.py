"""The unit lane's tests, run in a lane of the teeth table when the session runs the table
(tests/conftest.py takes them out of the main thread, which is make test's critical path once the
table's phases end): one test here, after the main thread's others, passes when they all passed
and shows pytest's own report of the ones that did not."""
from __future__ import annotations

import pytest
from conftest import BESIDE_JOBS, TEETH_RUNS


def test_the_unit_lane_passed_beside_the_table(request: pytest.FixtureRequest) -> None:
    runs_ = request.config.stash.get(TEETH_RUNS, None)
    jobs = request.config.stash.get(BESIDE_JOBS, ())
    if runs_ is None or not jobs:
        pytest.skip("no teeth table in this session: the unit lane's tests ran in its own thread")
    for job_id in jobs:
        result = runs_.get(job_id)
        summary = result.output.strip().splitlines()[-1:] or ["(no output)"]
        print(f"{job_id}: {summary[0]} ({result.wall_s:.0f}s in a lane of the table)")
        assert result.rc == 0, f"{job_id}: pytest exited {result.rc}:\n{result.output[-8000:]}"
