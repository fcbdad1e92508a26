"""Which process a broken variant runs in: its faults show only inside Ray workers, as bugs in
per-process state do, so the contract probe and the node-starting process see a good plugin."""
from __future__ import annotations

import os
import sys


def in_ray_worker() -> bool:
    """True inside a Ray worker process (not the driver, not the contract probe, not `ray start`).

    The process's argv says so at any moment. global_worker's mode says so only once
    ray._private.worker has finished importing, and the .pth hook (which test_hosts installs in the
    shared venv) imports a vendor's module before that: a variant that misbehaves at import then
    behaved, and DP-012 once passed its leaking variant."""
    if sys.argv and os.path.basename(sys.argv[0]) == "default_worker.py":
        return True
    worker = sys.modules.get("ray._private.worker")
    # getattr: ray._private.worker may itself still be importing (its Worker() asks for the managers)
    return worker is not None and getattr(getattr(worker, "global_worker", None), "mode", None) == getattr(
        worker, "WORKER_MODE", 1)
