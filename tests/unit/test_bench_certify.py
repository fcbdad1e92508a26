"""The certification benchmark (benchmarks/certify.py) ends a stuck run instead of waiting on it."""
from __future__ import annotations

import sys
import time
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "benchmarks"))

import certify as bench

STUCK = "import time; print('[ 1/99] DP-001 Devices are detected', flush=True); time.sleep(600)"


def test_a_stuck_run_is_ended_and_named_with_the_last_check_that_ended(tmp_path: Path,
                                                                        monkeypatch: pytest.MonkeyPatch) -> None:
    """A run that prints one check's line and then hangs: the benchmark ends it (SIGTERM, the
    process it started) after its timeout and says which check ended last, rather than waiting for
    output that never comes (session 21's benchmark waited until the run's output closed)."""
    monkeypatch.setattr(bench, "REPORT_GRACE_S", 5)
    t0 = time.monotonic()
    with pytest.raises(bench.StuckRun, match="within 3 s .*last check ended: DP-001"):
        bench.certify("builtin:simulated", tmp_path / "out", timeout_s=3, command=[sys.executable, "-u", "-c", STUCK])
    assert time.monotonic() - t0 < 60


def test_the_warm_pool_tally_sums_every_checks_record_per_device_type() -> None:
    """What the usage checks record of the actors they were lent or had born (UsageCtx._started),
    one record per device type when the transport declares several, summed over the report."""
    report = {"checks": [
        {"id": "TR-017", "metrics": {"devices": ["simacc", "cpu"], "simacc": {"warm_pool": {"lent": 2, "born": 0}},
                                     "cpu": {"warm_pool": {"lent": 1, "born": 1}}}},
        {"id": "TR-018", "metrics": {"warm_pool": {"lent": 0, "born": 3}}},
        {"id": "DP-001", "metrics": {}},
    ]}
    assert bench.warm_pool_tally(report) == (3, 4)
