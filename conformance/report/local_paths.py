"""Keeping the vendor's local paths out of reports meant to be shared.

A report is signed and sent to the SIG; the manifest's absolute path and Ray's log lines name
the vendor's home folder, user name and temp folders. Reports record paths relative to where
the run started, and log text with the home and temp folders shortened to `~` and `$TMPDIR`.
"""
from __future__ import annotations

import os
import re
import tempfile
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any


def display_path(path: str | Path, start: str | Path | None = None) -> str:
    """`path` as a report may show it: relative to `start` (default: the working directory).

    Outside `start`: `~/…` under the home folder, else only the file name (never a full
    absolute path).
    """
    p = Path(path).resolve()
    base = Path(start).resolve() if start is not None else Path.cwd()
    try:
        return str(p.relative_to(base))
    except ValueError:
        pass
    home = Path.home().resolve()
    try:
        return str(Path("~") / p.relative_to(home))
    except ValueError:
        return p.name


def portable_arg(arg: str) -> str:
    """A command-line argument as a report may record it: absolute paths shown as by display_path
    (`--conformance-out=/home/alice/x` -> `--conformance-out=x` when run from /home/alice)."""
    text = str(arg)
    if text == os.devnull:
        return text  # a device every machine has, no local path (its file name alone, `null`, would say nothing)
    if text.startswith("--") and "=" in text:
        option, _, value = text.partition("=")
        return f"{option}={display_path(value)}" if value.startswith("/") else text
    return display_path(text) if text.startswith("/") else text


def _prefixes() -> list[tuple[str, str]]:
    """(absolute folder, replacement), longest first so that nested folders win."""
    pairs: dict[str, str] = {}
    for folder, short in ((tempfile.gettempdir(), "$TMPDIR"), ("/tmp", "$TMPDIR"), ("/dev/shm", "/dev/shm"),
                          (str(Path.home()), "~")):
        for variant in {folder, os.path.realpath(folder)}:
            if variant and variant != "/" and variant not in pairs:
                pairs[variant] = short
    return sorted(pairs.items(), key=lambda kv: -len(kv[0]))


def _literally(replacement: str) -> Callable[[re.Match[str]], str]:
    """A `re.sub` replacement that inserts `replacement` as is (a backslash in it is not read
    as an escape or a group reference)."""
    return lambda _match: replacement


def shorten_paths(text: str) -> str:
    """Replace the home and temp folders inside free text (log lines, reasons) with `~` / `$TMPDIR`.

    The user name also appears alone in some lines (`/home/alice` is covered; `user alice` is
    not a path and is left alone).
    """
    for folder, short in _prefixes():
        if short == folder:
            continue
        text = re.sub(re.escape(folder) + r"(?=/|\b|$)", _literally(short), text)
    return text


def portable_processes(procs: Iterable[dict[str, Any]]) -> list[dict[str, Any]]:
    """Records of Ray processes (pid, kind, session folder) as a report may carry them: each
    session folder shortened as by shorten_paths, this run's and any other Ray session's on the
    host alike (a neighbour's `/tmp/ray/session_…` is a local path too)."""
    return [{**p, "session": shorten_paths(p["session"])} if isinstance(p.get("session"), str) else dict(p)
            for p in procs]
