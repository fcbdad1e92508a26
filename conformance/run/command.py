"""The one pytest command line that runs the suite: `ray-conformance run` and the project's tests
build it here, so an option the suite needs is added once.

What the command carries is the definition of a certification run (conformance/run/certification.py,
which `verify` judges recorded arguments by): `-c os.devnull` keeps any pytest.ini/pyproject of
the folder the run starts in out of the run; `--rootdir` at the bundled checks makes their node ids
(device/test_device_contract.py::...) the same wherever the run starts. Other pytest plugins
installed beside the suite (a vendor's environment has its own: hypothesis, randomly, timeout…)
are blocked by name: they are not part of a certification, one may reorder or time the checks,
and each costs the run its import. `-p no:logging`: the suite captures no Python logs (a check's
evidence is Ray's log files), and pytest's logging plugin walks every logger at session end: a
thread a hanging plugin left behind that creates a logger then ends the run with "dictionary
changed size during iteration" before the report is written (seen with transport/HangingRecv).
"""
from __future__ import annotations

import sys
from pathlib import Path
from typing import Sequence

from conformance.run.certification import ANSWERED_PLUGINS, CHECKS_DIR, SUITE_PLUGIN, fixed_args, foreign_plugins

__all__ = ["ANSWERED_PLUGINS", "CHECKS_DIR", "SUITE_PLUGIN", "foreign_plugins", "suite_command"]


def suite_command(manifest: Path | str, out: Path | str, args: Sequence[str] = (), *, verbose: bool = False,
                  options: dict[str, str | float | None] | None = None, python: str | None = None,
                  rootdir: Path | None = CHECKS_DIR) -> list[str]:
    """`python -m pytest` over the bundled checks (or the paths in `args`) for one manifest.

    `options`: the plugin's `--conformance-<name>` options (None values are left out), e.g.
    {"ray-address": "auto", "timeout": 60}. With no path among `args`, the bundled checks run.
    """
    cmd = [python or sys.executable, "-m", "pytest", *fixed_args(verbose=verbose),
           f"--conformance-manifest={manifest}", f"--conformance-out={out}"]
    if rootdir is not None:
        cmd.append(f"--rootdir={rootdir}")
    for name, value in (options or {}).items():
        if value is not None and value != "":
            cmd.append(f"--conformance-{name}={value}")
    has_paths = any(not a.startswith("-") and Path(a.split("::")[0]).exists() for a in args)
    return cmd + list(args) + ([] if has_paths else [str(CHECKS_DIR)])
