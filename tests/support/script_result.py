"""A test's script run in a fresh Python process, and the one JSON line it prints back.

Tests that need a process of their own (a driver that connects to Ray once and shuts down,
outside pytest's) run a script with `python -c` and read its `RESULT {json}` line: one way to
start it (the project and the given folders on PYTHONPATH, no inherited RAY_ADDRESS) and to
say, when the line is missing, what the process printed instead."""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any, Sequence

ROOT = Path(__file__).resolve().parents[2]
PREFIX = "RESULT "


def script_result(script: str, cwd: Path, *args: str, paths: Sequence[Path] = (), timeout_s: float = 300) -> Any:
    """The JSON value `script` printed after PREFIX (run with `args`, `paths` and the project
    on PYTHONPATH); an AssertionError with the end of its output when it printed none."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("RAY_ADDRESS")}
    env["PYTHONPATH"] = os.pathsep.join([*map(str, paths), str(ROOT), env.get("PYTHONPATH", "")]).rstrip(os.pathsep)
    proc = subprocess.run([sys.executable, "-c", script, *args], capture_output=True, text=True, timeout=timeout_s,
                          cwd=cwd, env=env)
    line = next((x for x in proc.stdout.splitlines() if x.startswith(PREFIX)), None)
    assert line, (proc.stdout + proc.stderr)[-3000:]
    return json.loads(line[len(PREFIX):])
