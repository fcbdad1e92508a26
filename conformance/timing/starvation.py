"""Whether the host starved a wait's processes: the CPU went to work outside the run while they
waited for one.

A worker-start sample (conformance.run.machinery) measures how fast Ray can start a process now;
it does not measure what processes already running get. Under a CPU hog above the suite's
priority a bare worker still starts within the widest stretch while the actors of a wave of
transfers, runnable the whole time, get a small share of a core each (make test-load: TR-019's
wave, none of 100 transfers received in 240 s). The kernel keeps what tells the two apart, per
thread (/proc/<pid>/task/<tid>/schedstat: time run, time spent runnable waiting for a CPU):

* a plugin that wedges (a receive waiting for an event that never comes) leaves its processes
  asleep: they neither run nor wait for a CPU;
* a plugin that spins uses the CPU itself: the CPU goes to the run's own processes;
* a starved host keeps them runnable and waiting while the CPU goes to processes outside the
  run (not the suite's process or any below it: its cluster's daemons and workers).

So the host is to blame only when both hold over the same window: the processes waited for a
CPU at least RUNNABLE_SHARE of the time (on average), and at least FOREIGN_SHARE of all the
host's CPU time went to processes outside the run, more than went to the run's own. Both
measurements go into the reason. Measured on this 2-core machine over 10 s: three busy processes
beside two busy loops at nice -5 waited 79 % of the time, 68 % of the CPU foreign; three that
sleep or poll beside the same loops waited 0 %; three busy ones alone waited 34 %, 1 % foreign.
A plugin that spins beside as much other load can be excused: that is "not judged: host", never a
pass, and a rerun on a quieter host judges it. Where
the processes are not on this host (a remote cluster), nothing is measured and nothing is excused.
"""
from __future__ import annotations

import os
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Iterable

from conformance.timing.host_load import CpuTimes, read_cpu_times

RUNNABLE_SHARE = 0.5   # knob: the watched processes waited for a CPU at least half the window (mean)
FOREIGN_SHARE = 0.5    # knob: at least half of the host's CPU went outside the run (and more than to it)
PROC = Path("/proc")


@dataclass(frozen=True)
class Snapshot:
    """What the kernel says at one moment: the host's CPU counters, the CPU each of the run's
    processes used so far (seconds), and each watched process's (ran, waited for a CPU) seconds."""

    at: float
    host: CpuTimes | None
    ours_s: dict[int, float] = field(default_factory=dict)
    watched: dict[int, tuple[float, float]] = field(default_factory=dict)


@dataclass(frozen=True)
class Starvation:
    """The measurements over one window, and whether they put the blame on the host."""

    span_s: float
    runnable_share: float      # mean share of the window the watched processes waited for a CPU
    foreign_share: float       # share of all the host's CPU time used outside the run
    watched: int
    ours_share: float = 0.0    # share of all the host's CPU time the run's processes used

    @property
    def host_starved(self) -> bool:
        return (self.watched > 0 and self.runnable_share >= RUNNABLE_SHARE and self.foreign_share >= FOREIGN_SHARE
                and self.foreign_share > self.ours_share)

    def describe(self) -> str:
        return (f"over {self.span_s:.0f}s the {self.watched} process(es) waited for a CPU {self.runnable_share:.0%} "
                f"of the time while {self.foreign_share:.0%} of the host's CPU went to processes outside the run "
                f"and {self.ours_share:.0%} to the run's")

    def as_json(self) -> dict[str, float | int]:
        return {"span_s": round(self.span_s, 1), "runnable_share": round(self.runnable_share, 3),
                "foreign_share": round(self.foreign_share, 3), "ours_share": round(self.ours_share, 3),
                "watched": self.watched}


def schedstat(pid: int, proc: Path = PROC) -> tuple[float, float] | None:
    """(seconds run, seconds runnable waiting for a CPU) of all the process's threads; None when
    the process is not readable here."""
    ran = waited = 0
    try:
        tasks = list((proc / str(pid) / "task").iterdir())
    except OSError:
        return None
    for task in tasks:
        try:
            fields = (task / "schedstat").read_text().split()
        except OSError:
            continue
        ran, waited = ran + int(fields[0]), waited + int(fields[1])
    return ran / 1e9, waited / 1e9


def cpu_seconds(pid: int, proc: Path = PROC) -> float | None:
    """CPU seconds (user + system) the process used so far."""
    try:
        stat = (proc / str(pid) / "stat").read_text()
    except OSError:
        return None
    fields = stat.rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def take(watched: list[int], ours_pids: Iterable[int]) -> Snapshot:
    """A snapshot now of the watched processes and the run's (`ours_pids`: the suite's process and
    every process below it, conformance.run.budget)."""
    ours = {}
    for pid in ours_pids:
        used = cpu_seconds(pid)
        if used is not None:
            ours[pid] = used
    seen = {pid: s for pid in watched if (s := schedstat(pid)) is not None}
    return Snapshot(time.monotonic(), read_cpu_times(), ours, seen)


def between(a: Snapshot, b: Snapshot) -> Starvation | None:
    """The window from a to b (pure); None when the host's counters or the watched processes were
    not readable at both ends (not measured: nothing excused)."""
    if a.host is None or b.host is None or b.host.total <= a.host.total:
        return None
    both = [pid for pid in a.watched if pid in b.watched]
    if not both:
        return None
    span = max(b.at - a.at, 1e-6)
    hz = os.sysconf("SC_CLK_TCK")
    busy_s = (b.host.busy - a.host.busy) / hz
    capacity_s = (b.host.total - a.host.total) / hz   # every CPU's time over the window (idle included)
    ours_s = sum(max(0.0, used - a.ours_s.get(pid, 0.0)) for pid, used in b.ours_s.items())
    foreign = max(0.0, busy_s - ours_s) / capacity_s if capacity_s > 0 else 0.0
    runnable = sum(b.watched[p][1] - a.watched[p][1] for p in both) / (len(both) * span)
    ours = min(busy_s, ours_s) / capacity_s if capacity_s > 0 else 0.0
    return Starvation(span, min(1.0, max(0.0, runnable)), min(1.0, foreign), len(both), min(1.0, ours))
