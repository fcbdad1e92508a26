"""Where a certification's CPU goes, and the wall time no schedule can beat on this machine.

A certification on the 2-core machine keeps its cores busy most of the time, so its wall time is
bounded below by its CPU: `busy CPU-seconds / cores`, whatever runs in parallel. `CpuUse`
measures both while a command runs (Linux /proc only):

* the machine's busy CPU-seconds (/proc/stat, every process: what the cores actually did);
* per kind of process started meanwhile (Ray workers, raylets, agents, the suite's own
  processes), the CPU each used, sampled from /proc/<pid>/stat every `interval_s`. A process that
  ends between two samples loses at most one interval of its CPU, so the per-kind figures are a
  slight undercount; the machine figure is exact.
"""
from __future__ import annotations

import bisect
import os
import re
import threading
from collections import Counter
from dataclasses import dataclass, field

# Ray's C++ servers, by program name: their arguments name the worker command and the sockets.
PROGRAMS: dict[str, str] = {"raylet": "raylets", "gcs_server": "GCS servers"}
# Titles Ray gives its Python processes once running (setproctitle rewrites the command line),
# by prefix, first match wins; any other "ray::…" is a worker ("ray::IDLE", "ray::Peer.method").
TITLES: tuple[tuple[str, str], ...] = (
    ("ray::DashboardAgent", "dashboard agents"),
    ("ray::RuntimeEnvAgent", "runtime-env agents"),
    ("ray::", "Ray workers"),
)
# Substrings of the rest (a process seen before it took its title), first match wins.
KINDS: tuple[tuple[str, str], ...] = (
    ("default_worker.py", "Ray workers"),
    ("dashboard/agent.py", "dashboard agents"),
    ("runtime_env/agent", "runtime-env agents"),
    ("dashboard/dashboard.py", "dashboard heads"),
    ("log_monitor.py", "log monitors"),
    ("autoscaler/_private/monitor.py", "autoscaler monitors"),
    ("-m pytest", "the suite (pytest)"),
    ("conformance.areas.device.contract_probe", "contract probes"),
    ("conformance.cli.main", "the CLI"),
)


def process_kind(cmdline: str) -> str:
    """The kind of a process, from its command line (arguments joined by spaces; `other` when
    nothing matches)."""
    program = os.path.basename(cmdline.split(" ", 1)[0])
    if program in PROGRAMS:
        return PROGRAMS[program]
    title = next((kind for prefix, kind in TITLES if cmdline.startswith(prefix)), None)
    return title or next((kind for needle, kind in KINDS if needle in cmdline), "other")


TORCH_WORKERS = "Ray workers with torch"   # a worker that has imported torch (2-3 s of CPU alone)


def has_torch(pid: int) -> bool:
    """Whether the process has torch's library mapped (it imported torch)."""
    try:
        with open(f"/proc/{pid}/maps") as f:
            return any("libtorch" in line for line in f)
    except OSError:
        return False


def program_label(cmdline: str) -> str:
    """What an `other` process ran, for the breakdown of that bucket: the program, and for an
    interpreter its module (`-m x`) or script (`python3 setup.py` -> "python3 setup.py")."""
    args = cmdline.split()
    if not args:
        return "?"
    program = os.path.basename(args[0])
    if not program.startswith("python"):
        return program
    rest = iter(args[1:])
    for arg in rest:
        if arg == "-m":
            return f"{program} -m {next(rest, '?')}"
        if arg == "-c":
            return f"{program} -c"
        if not arg.startswith("-"):
            return f"{program} {os.path.basename(arg)}"
    return program


# the teeth table runs each row in its own folder (tests/support/teeth.py execute: <basetemp>/teeth0/<row>);
# the row's suite process, its cluster's daemons and workers all inherit that working folder
TEETH_ROW = re.compile(r"/teeth\d*/([^/]+)")


def teeth_row(pid: int) -> str:
    """The teeth row a process works for (by its working folder), "" for any other process."""
    try:
        found = TEETH_ROW.search(os.readlink(f"/proc/{pid}/cwd"))
    except OSError:
        return ""
    return found.group(1).replace("__", "/") if found else ""


def machine_busy_ticks() -> int:
    """Clock ticks all cores spent on anything but idle and I/O wait since boot."""
    with open("/proc/stat") as f:
        user, nice, system, _idle, _iowait, irq, softirq, steal = (int(v) for v in f.readline().split()[1:9])
    return user + nice + system + irq + softirq + steal


@dataclass
class CpuUse:
    """Samples while a `with` block runs; read the figures after it."""

    interval_s: float = 0.2
    busy_s: float = 0.0
    by_kind: Counter[str] = field(default_factory=Counter)
    processes: Counter[str] = field(default_factory=Counter)
    other: Counter[str] = field(default_factory=Counter)   # the `other` bucket, by program_label
    by_row: Counter[str] = field(default_factory=Counter)  # the teeth table's rows (teeth_row), when it runs
    births: list[tuple[float, str]] = field(default_factory=list)  # (seconds since boot it started, kind)
    sweeps: int = 0           # passes over /proc so far

    def __enter__(self) -> CpuUse:
        self._hz = os.sysconf("SC_CLK_TCK")
        with open("/proc/uptime") as f:
            # whole ticks, rounded down: a process started in the same tick counts (a float product
            # such as 36987.45 * 100 lands a hair above that tick's number)
            self._since_ticks = int(float(f.read().split()[0]) * self._hz + 1e-6) - 1
        self._last: dict[tuple[int, int], tuple[str, float, str, str]] = {}
        self._stop = threading.Event()
        self._busy0 = machine_busy_ticks()
        self._thread = threading.Thread(target=self._sample_until_stopped, daemon=True)
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join()
        self.busy_s = (machine_busy_ticks() - self._busy0) / self._hz
        for (_pid, started), (kind, cpu, label, row) in self._last.items():
            self.births.append((started / self._hz, kind))
            self.by_kind[kind] += cpu
            if row:
                self.by_row[row] += cpu
            self.processes[kind] += 1
            if kind == "other":
                self.other[label] += cpu

    def floor_s(self, cores: int | None = None) -> float:
        """The least wall time these CPU-seconds need on `cores` cores (default: this machine's)."""
        return self.busy_s / (cores or os.cpu_count() or 1)

    def _sample_until_stopped(self) -> None:
        me = os.getpid()
        while not self._stop.is_set():
            for entry in os.listdir("/proc"):
                if entry.isdigit() and int(entry) != me:
                    self._sample(int(entry))
            self.sweeps += 1
            self._stop.wait(self.interval_s)

    def _sample(self, pid: int) -> None:
        try:
            with open(f"/proc/{pid}/stat") as f:
                stat = f.read()
            fields = stat[stat.rindex(")") + 2:].split()
            started, cpu = int(fields[19]), (int(fields[11]) + int(fields[12])) / self._hz
            if started < self._since_ticks:
                return          # not started by what is measured
            # read every time: a child seen between fork and exec still shows its parent's command
            with open(f"/proc/{pid}/cmdline", "rb") as f:
                cmdline = f.read().replace(b"\0", b" ").decode(errors="replace").strip()
            seen = self._last.get((pid, started))
            if not cmdline and seen is not None:
                # an ended process not yet reaped (a zombie) has no command line: it keeps the kind
                # it was seen with, or every dying Ray worker's CPU would land in "other"
                self._last[(pid, started)] = (seen[0], cpu, seen[2], seen[3])
                return
            kind = process_kind(cmdline)
            if kind == "Ray workers" and (seen is not None and seen[0] == TORCH_WORKERS or has_torch(pid)):
                kind = TORCH_WORKERS
            row = seen[3] if seen is not None and seen[3] else teeth_row(pid)
            self._last[(pid, started)] = (kind, cpu, program_label(cmdline) if kind == "other" else "", row)
        except (OSError, ValueError, IndexError):
            return              # the process ended while being read


def uptime_s() -> float:
    """Seconds since boot: the clock /proc gives a process's start in (births)."""
    with open("/proc/uptime") as f:
        return float(f.read().split()[0])


WORKER_KINDS = ("Ray workers", TORCH_WORKERS)


def births_by_mark(births: list[tuple[float, str]], marks: list[tuple[float, str]]) -> dict[str, Counter[str]]:
    """Worker processes started, counted by the mark that came first after their start (`marks`:
    (seconds since boot, name) in time order, e.g. a progress line printed when a check ended, so
    a worker is counted with the check that was running when it was born); "after" for any born
    after the last mark."""
    counted: dict[str, Counter[str]] = {}
    times = [t for t, _ in marks]
    for started, kind in births:
        if kind not in WORKER_KINDS:
            continue
        i = bisect.bisect_left(times, started)
        name = marks[i][1] if i < len(marks) else "after"
        counted.setdefault(name, Counter())[kind] += 1
    return counted


def describe(use: CpuUse, wall_s: float, target_s: float | None, top: int = 6) -> list[str]:
    """Lines for the benchmark's output: the busy CPU, the floor it sets and where it went."""
    cores = os.cpu_count() or 1
    floor = use.floor_s(cores)
    lines = [f"  CPU: {use.busy_s:.0f} s busy on {cores} cores ({use.busy_s / wall_s / cores:.0%} of the wall time): "
             f"no schedule finishes under {floor:.0f} s here"
             + (f" (target {target_s:.0f} s {'is below that floor' if target_s < floor else 'is above it'})"
                if target_s else "")]
    parts = [f"{kind} {sec:.0f} s ({use.processes[kind]})" for kind, sec in use.by_kind.most_common(top)]
    lines.append("  CPU by process (count): " + ", ".join(parts))
    if use.other:
        lines.append("  of which other: " + ", ".join(f"{label} {sec:.0f} s" for label, sec in use.other.most_common(top)))
    if use.by_row:
        lines.append(f"  the teeth table's rows: {sum(use.by_row.values()):.0f} s; the heaviest: "
                     + ", ".join(f"{row} {sec:.0f} s" for row, sec in use.by_row.most_common(top)))
    return lines
