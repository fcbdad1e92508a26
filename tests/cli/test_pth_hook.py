"""The .pth hook (conformance/cluster/inject_pth_hook.py) in a process that imports Ray through it.

While a test installs the hook into this environment (test_remote_cluster, test_hosts), every
process of the teeth runs beside it that sets RAY_CONFORMANCE_ACCELERATORS gets the hook too: Ray's
Worker() then asks for the accelerator managers while ray._private.worker is still importing, and
the hook imports the vendor's module right there. Neither the hook nor a manager that looks at
ray._private.worker at import may fail then (the race that failed four device rows once).
"""
from __future__ import annotations

import os
import subprocess
import sys

from suite_runner import BROKEN, ROOT

PROGRAM = """
import conformance.cluster.inject_pth_hook            # what the .pth line runs at start-up
import ray._private.accelerators.accelerator          # the contract probe's first import
from conformance.imports import import_ref
import ray._private.accelerators as acc
manager = import_ref("broken_device:RaisesWithoutDriver")
print("installed" if manager in acc.get_all_accelerator_managers() else "missing")
"""


def test_a_manager_imported_through_the_hook_while_ray_imports_is_installed() -> None:
    env = {**os.environ, "RAY_CONFORMANCE_ACCELERATORS": "broken_device:RaisesWithoutDriver",
           "PYTHONPATH": os.pathsep.join([str(BROKEN), str(ROOT)])}
    out = subprocess.run([sys.executable, "-c", PROGRAM], capture_output=True, text=True, timeout=120, env=env, cwd="/")
    assert out.returncode == 0, out.stderr[-2000:]
    assert out.stdout.strip().splitlines()[-1] == "installed"


LEAK_PROGRAM = """
import os
import conformance.cluster.inject_pth_hook
import ray._private.worker                            # Worker() resolves the manager through the hook
print("leaked" if "SIMACC_VISIBLE_DEVICES" in os.environ else "clean")
"""


def test_a_broken_variant_misbehaves_in_a_worker_that_imports_it_through_the_hook(tmp_path) -> None:
    """DP-012's variant leaks at import in a worker; through the hook that import comes before
    global_worker exists, so the variant must know a worker by its argv (it once passed DP-012)."""
    worker = tmp_path / "default_worker.py"  # what Ray's worker processes run
    worker.write_text(LEAK_PROGRAM)
    env = {**os.environ, "RAY_CONFORMANCE_ACCELERATORS": "broken_device:LeakVisibilityInWorkers",
           "SIMACC_FAULT": "leak", "PYTHONPATH": os.pathsep.join([str(BROKEN), str(ROOT)])}
    env.pop("SIMACC_VISIBLE_DEVICES", None)
    out = subprocess.run([sys.executable, str(worker)], capture_output=True, text=True, timeout=120, env=env, cwd="/")
    assert out.returncode == 0, out.stderr[-2000:]
    assert out.stdout.strip().splitlines()[-1] == "leaked"
