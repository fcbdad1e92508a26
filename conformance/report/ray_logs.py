"""Ray's own log files, read for the report: what a failed check left in them, and its first error.

A worker that cannot import the plugin, a raylet that dies, a transport that segfaults: Ray
writes the cause into its session's log folder (`session_*/logs/worker-*.err`, `raylet.out`,
`python-core-worker-*.log`), a file no exception message names. The run remembers how far each
file had grown when a check started, so that for a failed check it copies only what was written
during that check into `OUT/logs/<check>/` and names the first real error line in the reason.
"""
from __future__ import annotations

import re
import sys
import warnings
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterator, Protocol

from conformance.report.local_paths import shorten_paths

# The files worth reading, most telling first.
LOG_GLOBS = ("worker-*.err", "worker-*.out", "raylet.out", "raylet.err", "gcs_server.err",
             "python-core-worker-*.log", "python-core-driver-*.log")
MAX_COPY_BYTES = 64 * 1024      # per copied file (the tail is kept)
MAX_FILES = 24                  # per check
EXCERPT_LINES = 30

# A Python exception line ("ModuleNotFoundError: No module named 'x'") or a Ray C++ log line of
# level E or F ("[2026-01-01 10:00:00,000 E 123 456] file.cc:12: message").
_PY_EXC = re.compile(r"^(?:[A-Za-z_][\w.]*\.)?[A-Za-z_]\w*(?:Error|Exception|Exit|Interrupt|Warning)(?::|$)")
_CPP_ERROR = re.compile(r"^\[[^\]]* [EF] \d+ \d+\]")
_PY_LOG_ERROR = re.compile(r"^\[[^\]]*\] \S+ (?:ERROR|CRITICAL|FATAL)\b|^\S+ \S+ (?:ERROR|CRITICAL)\b| ERROR \S+\.py:\d+ -- ")
# Lines that say something went wrong but are expected while a check injects faults.
EXPECTED_FAULT_NOISE = ("Termination is unexpected", "SIGKILL by the user or system OOM killer",
                        "Raylet is terminated")


def current_logs_dir() -> Path | None:
    """The logs folder of the Ray session this process is connected to (None when not connected)."""
    worker = sys.modules.get("ray._private.worker")
    node = getattr(worker, "_global_node", None) if worker else None
    if node is None:
        return None
    try:
        return Path(node.get_logs_dir_path())
    except Exception:  # noqa: BLE001 - a half-shut-down node has no logs dir
        return None


def _log_files(folder: Path) -> list[Path]:
    seen: dict[Path, None] = {}
    for pattern in LOG_GLOBS:
        for p in sorted(folder.glob(pattern)):
            seen.setdefault(p, None)
    return list(seen)


def _size(path: Path) -> int:
    try:
        return path.stat().st_size
    except OSError:
        return 0


@dataclass
class LogCursor:
    """How far each log file of the run's Ray sessions had grown at the last `mark()`."""

    folders: list[Path] = field(default_factory=list)
    offsets: dict[Path, int] = field(default_factory=dict)

    def remember(self, folder: Path | None) -> None:
        if folder is not None and folder not in self.folders:
            self.folders.append(folder)

    def mark(self) -> None:
        self.remember(current_logs_dir())
        for folder in self.folders:
            for p in _log_files(folder):
                self.offsets[p] = _size(p)

    def new_text(self) -> dict[Path, str]:
        """What each log file gained since `mark()` (files created since: all of it)."""
        self.remember(current_logs_dir())
        out: dict[Path, str] = {}
        for folder in self.folders:
            for p in _log_files(folder):
                start, end = self.offsets.get(p, 0), _size(p)
                if end <= start:
                    continue
                start = max(start, end - MAX_COPY_BYTES)
                try:
                    with open(p, "rb") as f:
                        f.seek(start)
                        text = f.read(end - start).decode("utf-8", "replace")
                except OSError:
                    continue
                if text.strip():
                    out[p] = text
        return out


def is_error_line(line: str) -> bool:
    s = line.rstrip()
    return bool(_PY_EXC.match(s) or _CPP_ERROR.match(s) or _PY_LOG_ERROR.search(s))


def is_expected_noise(line: str) -> bool:
    return any(marker in line for marker in EXPECTED_FAULT_NOISE)


def first_error(texts: dict[Path, str]) -> tuple[Path, str, int] | None:
    """(file, line, index) of the first real error: Python exceptions in worker .err files first
    (the end of a traceback names the cause), then error-level lines anywhere; expected
    fault-injection noise never counts."""
    def rank(p: Path) -> int:
        for i, pattern in enumerate(LOG_GLOBS):
            if p.match(pattern):
                return i
        return len(LOG_GLOBS)

    for p in sorted(texts, key=rank):
        lines = texts[p].splitlines()
        for i, line in enumerate(lines):
            if _PY_EXC.match(line.rstrip()) and not is_expected_noise(line):
                return p, line.strip(), i
    for p in sorted(texts, key=rank):
        lines = texts[p].splitlines()
        for i, line in enumerate(lines):
            if is_error_line(line) and not is_expected_noise(line):
                return p, line.strip(), i
    return None


RAY_MARKER_LINE = re.compile(r"^:(job_id|task_name|actor_name|task_id):")


def excerpt_around(text: str, index: int, lines: int = EXCERPT_LINES) -> str:
    """The lines that explain line `index`: its whole traceback (from "Traceback" and the log
    message before it, up to 80 lines back) or else the few lines before it; Ray's
    `:job_id:`/`:task_name:` markers left out."""
    all_lines = text.splitlines()
    start = index
    for i in range(index, max(-1, index - 80), -1):
        if all_lines[i].startswith("Traceback (most recent call last)"):
            start = i - 1 if i > 0 and all_lines[i - 1].strip() and not RAY_MARKER_LINE.match(all_lines[i - 1]) else i
            break
    else:
        start = max(0, index - 5)
    chosen = [x for x in all_lines[start:index + 1] if not RAY_MARKER_LINE.match(x)]
    if len(chosen) > lines:
        chosen = chosen[:2] + ["    …"] + chosen[-(lines - 3):]
    return "\n".join(chosen)


@dataclass
class LogEvidence:
    """What the logs say about one failed check."""

    files: list[str]            # copied files, relative to the report folder
    first_error: str | None     # "worker-….err: ModuleNotFoundError: No module named 'x'"
    excerpt: str                # the lines around it (paths shortened)


def collect_evidence(texts: dict[Path, str], out_dir: Path, check_id: str) -> LogEvidence | None:
    """Copy the new log text into OUT/logs/<check>/ and find its first error (None: nothing new)."""
    if not texts:
        return None
    found = first_error(texts)
    chosen = sorted(texts, key=lambda p: (p != (found[0] if found else None),
                                          not any(is_error_line(x) for x in texts[p].splitlines())))[:MAX_FILES]
    dest = out_dir / "logs" / check_id
    dest.mkdir(parents=True, exist_ok=True)
    files = []
    for p in chosen:
        target = dest / p.name
        target.write_text(shorten_paths(texts[p]))
        files.append(str(target.relative_to(out_dir)))
    if found is None:
        return LogEvidence(files, None, "")
    path, line, index = found
    return LogEvidence(files, shorten_paths(f"{path.name}: {line}"),
                       shorten_paths(excerpt_around(texts[path], index)))


class _StdstreamPrinter(Protocol):
    """The shape of Ray's `ray._private.worker.print_to_stdstream`, which DriverNoise wraps."""

    def __call__(self, data: dict[str, Any], ignore_prefix: bool) -> None: ...


class DriverNoise:
    """Keeps Ray's "Raylet is terminated … unexpected … SIGKILL" messages out of the terminal while
    fault-injection checks run (they kill raylets on purpose), writing them to the check's logs.

    Ray's driver prints such messages from a background thread (`listen_error_messages` →
    `print_to_stdstream`), often after the check has returned; so the filter stays on from the
    start of a fault-injection check until the next check has finished too.
    """

    def __init__(self, out_dir: Path) -> None:
        self.out_dir = out_dir
        self.count = 0
        self.checks: list[str] = []
        self._current: str | None = None
        self._active = [False, False]          # previous check, current check
        self._original: _StdstreamPrinter | None = None  # Ray's printer, while ours is installed

    def install(self) -> None:
        import ray._private.worker as worker

        if self._original is not None:
            return
        original = worker.print_to_stdstream
        self._original = original

        def print_to_stdstream(data: dict[str, Any], ignore_prefix: bool) -> None:
            if any(self._active) and self._current and any(is_expected_noise(x) for x in data.get("lines", [])):
                self._keep(data.get("lines", []))
                return
            original(data, ignore_prefix)

        worker.print_to_stdstream = print_to_stdstream

    def uninstall(self) -> None:
        if self._original is not None:
            import ray._private.worker as worker
            worker.print_to_stdstream = self._original
            self._original = None

    def check_started(self, check_id: str, fault_injection: bool) -> None:
        self._active = [self._active[1], fault_injection]
        if fault_injection or not self._active[0]:
            self._current = check_id

    def _keep(self, lines: list[str]) -> None:
        assert self._current is not None
        dest = self.out_dir / "logs" / self._current
        dest.mkdir(parents=True, exist_ok=True)
        with open(dest / "ray-driver-messages.log", "a") as f:
            f.write(shorten_paths("\n".join(lines)) + "\n")
        self.count += 1
        if self._current not in self.checks:
            self.checks.append(self._current)

    def summary(self) -> str | None:
        if not self.count:
            return None
        return (f"{self.count} Ray message(s) about raylets killed on purpose by fault-injection checks "
                f"({', '.join(self.checks)}) were kept out of the terminal: logs/<check>/ray-driver-messages.log")


# Deprecation warnings Ray's own libraries raise when imported with the Pydantic this environment
# has (Ray Serve's config models use Pydantic V1 idioms: 18 warnings, ~50 terminal lines when
# WL-012 imports ray.serve): neither the plugin's nor the run's. Matched narrowly, by the warning's
# category name and the file it is attributed to; every other warning reaches pytest as before.
LIBRARY_WARNINGS = (("PydanticDeprecated", "/ray/serve/"),)   # (category name prefix, path fragment)


def is_library_noise(category_name: str, filename: str) -> bool:
    """A warning from LIBRARY_WARNINGS (pure)."""
    path = filename.replace("\\", "/")
    return any(category_name.startswith(prefix) and fragment in path for prefix, fragment in LIBRARY_WARNINGS)


class LibraryWarnings:
    """Keeps LIBRARY_WARNINGS raised during a check out of pytest's warnings summary (the run's
    terminal), writing them to the check's logs/<check>/python-warnings.log instead; any other
    warning caught on the way is handed back to pytest unchanged."""

    def __init__(self, out_dir: Path) -> None:
        self.out_dir = out_dir
        self.count = 0
        self.checks: list[str] = []

    @contextmanager
    def kept(self, check_id: str | None) -> Iterator[None]:
        if check_id is None:
            yield
            return
        with warnings.catch_warnings(record=True) as caught:   # pytest's filters stay in force
            try:
                yield
            finally:
                rest = self._keep(check_id, caught)
        for w in rest:   # outside our catch: pytest records them as if we had not looked
            warnings.warn_explicit(w.message, w.category, w.filename, w.lineno, source=w.source)

    def _keep(self, check_id: str, caught: list[warnings.WarningMessage]) -> list[warnings.WarningMessage]:
        noise = [w for w in caught if is_library_noise(w.category.__name__, str(w.filename))]
        if noise:
            try:
                dest = self.out_dir / "logs" / check_id
                dest.mkdir(parents=True, exist_ok=True)
                with open(dest / "python-warnings.log", "a") as f:
                    for w in noise:
                        f.write(shorten_paths(warnings.formatwarning(w.message, w.category, w.filename, w.lineno,
                                                                     w.line)))
            except OSError:
                return list(caught)   # not kept anywhere: pytest shows them after all
            self.count += len(noise)
            if check_id not in self.checks:
                self.checks.append(check_id)
        return [w for w in caught if w not in noise]

    def summary(self) -> str | None:
        if not self.count:
            return None
        return (f"{self.count} deprecation warning(s) Ray's libraries raise with this Pydantic "
                f"({', '.join(self.checks)}) were kept out of the terminal: logs/<check>/python-warnings.log")
