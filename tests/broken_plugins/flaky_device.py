"""An intermittently broken variant of the simulated accelerator: the flaky twin (issue 48).

It breaks DP-019's promise one time in three, deterministically: each host probe of the
"overcommit" kind (conformance.areas.device.host_detection.overcommit, run in a fresh process by
the check) takes the next number of a counter kept in a file (in the teeth row's state folder,
$FAULTY_STATE_DIR; else in the temp folder, one per suite process: the probe's parent), and the probes numbered 1, 4, 7, ... ignore the
visible-devices variable at node start (as broken_device.VisibleIgnoredAtStart always does). So
the check's first attempt fails, the suite runs it again (tiers/tiers.yaml flakes.retries) and the
second passes: the report must say `flaky`, with both attempts, and count it for nothing.
"""
from __future__ import annotations

import fcntl
import json
import os
import sys
import tempfile
from pathlib import Path
from typing import List, Optional

from worker_process import in_ray_worker

from conformance.simulated.manager import SimAccManager

FAILS_ONE_IN = 3
_TAKEN: list[int] = []   # this process's number, taken once


def _overcommit_probe() -> bool:
    """True in the host probe process DP-019 starts (its config, the last argument, says the mode)."""
    if in_ray_worker() or len(sys.argv) < 2 or not sys.argv[0].endswith("contract_probe.py"):
        return False
    try:
        return bool(json.loads(sys.argv[-1]).get("mode") == "overcommit")
    except (ValueError, AttributeError):
        return False


def probe_number() -> int:
    """This probe's number in its suite process's run: the counter file, incremented under a lock."""
    if not _TAKEN:
        folder = os.environ.get("FAULTY_STATE_DIR")   # the teeth table's per-row folder
        path = Path(folder) / "flaky-device-twin.count" if folder else \
            Path(tempfile.gettempdir()) / f"flaky-device-twin-{os.getppid()}.count"
        path.parent.mkdir(parents=True, exist_ok=True)
        with open(path, "a+", encoding="utf-8") as f:
            fcntl.flock(f, fcntl.LOCK_EX)
            f.seek(0)
            n = int(f.read().strip() or 0) + 1
            f.seek(0)
            f.truncate()
            f.write(str(n))
        _TAKEN.append(n)
    return _TAKEN[0]


class FlakyVisibleAtStart(SimAccManager):
    """DP-019, one time in three: at node start the visible-devices variable is ignored (None),
    so Ray accepts a node asked for more devices than the operator made visible."""

    @staticmethod
    def get_current_process_visible_accelerator_ids() -> Optional[List[str]]:
        if _overcommit_probe() and probe_number() % FAILS_ONE_IN == 1:
            return None
        return SimAccManager.get_current_process_visible_accelerator_ids()
