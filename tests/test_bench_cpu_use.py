"""The benchmark's CPU accounting (benchmarks/cpu_use.py): process kinds and what a sample counts."""
from __future__ import annotations

import subprocess
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "benchmarks"))

from cpu_use import CpuUse, describe, process_kind  # noqa: E402


def test_process_kinds_from_command_lines() -> None:
    py = "/venv/bin/python"
    assert process_kind(f"{py} /venv/lib/python3.11/site-packages/ray/_private/workers/default_worker.py --x") == "Ray workers"
    assert process_kind("/venv/lib/python3.11/site-packages/ray/core/src/ray/raylet/raylet --x") == "raylets"
    assert process_kind(f"{py} -u /venv/.../ray/dashboard/agent.py --raylet-name=/tmp/ray/s/sockets/raylet") \
        == "dashboard agents"
    assert process_kind(f"{py} -m pytest -q tests") == "the suite (pytest)"
    assert process_kind("ray::UsagePeer.receive") == "Ray workers"     # the title Ray gives a busy worker
    assert process_kind("sleep 1") == "other"


def test_a_child_process_cpu_is_counted_and_sets_the_floor() -> None:
    burn = "import time\nt = time.process_time()\nwhile time.process_time() - t < 0.6: pass\ntime.sleep(0.5)"
    with CpuUse(interval_s=0.05) as use:
        subprocess.run([sys.executable, "-c", burn], check=True)
    assert use.by_kind["other"] >= 0.4          # sampled during its sleep: nearly all of its 0.6 s
    assert use.busy_s >= use.by_kind["other"] * 0.9
    assert use.floor_s(cores=2) == use.busy_s / 2
    lines = describe(use, wall_s=1.0, target_s=0.01)
    assert "is below that floor" in lines[0] and "other" in lines[1]
