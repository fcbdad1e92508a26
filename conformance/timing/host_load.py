"""How loaded the host is, and how far the bounds that wait on Ray's own machinery stretch with it.

A SKU's CI runner is rarely idle. A bound that a loaded, correct system misses is a false alarm:
on a loaded 2-core machine a fresh Ray worker took 19.4 s to start, and checks that waited 20 s
for Ray to place work blamed the plugin. So:

* every check records the host's load while it ran (`CheckLoad`: the 1-minute load average per
  CPU at its end, and the share of CPU time that was busy and stolen by the hypervisor between
  its start and end, from /proc/stat), shown per check in report.json, report.md and report.html;
* a bound that waits on Ray's machinery (worker start, placement, object fetch) is multiplied by
  `MachineryRecord.bound_factor()`: how much slower than nominal the run MEASURED that machinery
  (`MachineryRecord.note`: the preflight's fresh-worker start), never below 1 and at most
  MAX_FACTOR; a module import, which nothing times in advance, reads the run queue per CPU
  instead. The factor only widens bounds: a plugin that hangs still fails, later.

Pure apart from reading /proc and os.getloadavg. The record is the run's, never this module's:
the run (conformance.run.session.ConformanceRun.machinery) keeps one `MachineryRecord` and hands
it to whatever stretches a bound (the checks' budgets, the preflight, the cluster shapes), so two
runs in one process never share a measurement; a process that is not a run (a command, the CC-003
hook job) keeps its own.
"""
from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

MAX_FACTOR = 6.0   # knob: the widest a machinery bound stretches (a 20 s wait becomes at most 120 s)
# knob: what each kind of Ray machinery takes on an idle 2-core host (the measured typical value;
# a measurement above it stretches the bounds by the ratio)
NOMINAL_S = {"worker_start": 3.0, "placement": 1.0, "fetch": 1.0, "import": 5.0}


class HostNotReady(Exception):
    """Ray's own machinery (a worker start, a placement) did not do its part within the run's
    stretched bound, while everything the plugin declared was right: the host's failure, reported
    as "not judged: host" (conformance.run.outcomes), never as a failed check of the plugin."""


@dataclass(frozen=True)
class CpuTimes:
    """Cumulative jiffies of /proc/stat's first line: (busy, steal, total)."""
    busy: int
    steal: int
    total: int


def read_cpu_times(stat: Path = Path("/proc/stat")) -> CpuTimes | None:
    """None where /proc/stat is unreadable (not Linux): the load is then shown as unknown."""
    try:
        first = stat.read_text().splitlines()[0].split()
    except (OSError, IndexError):
        return None
    if not first or first[0] != "cpu":
        return None
    values = [int(v) for v in first[1:]]
    idle = values[3] + (values[4] if len(values) > 4 else 0)        # idle + iowait
    steal = values[7] if len(values) > 7 else 0
    total = sum(values[:8])                                        # guest time is inside user already
    return CpuTimes(busy=total - idle - steal, steal=steal, total=total)


def load_per_cpu() -> float | None:
    """The 1-minute load average divided by the CPUs this process may use (None: unknown)."""
    try:
        load1 = os.getloadavg()[0]
    except OSError:
        return None
    return load1 / cpu_count()


def cpu_count() -> int:
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except AttributeError:        # not Linux
        return max(1, os.cpu_count() or 1)


@dataclass(frozen=True)
class CheckLoad:
    """The host's load while one check ran."""
    load1: float | None          # 1-minute load average at the check's end
    cpus: int
    busy_pct: float | None       # share of all CPUs' time busy between start and end
    steal_pct: float | None      # share stolen by the hypervisor

    def as_json(self) -> dict[str, Any]:
        return {"load1": None if self.load1 is None else round(self.load1, 2), "cpus": self.cpus,
                "busy_pct": None if self.busy_pct is None else round(self.busy_pct, 1),
                "steal_pct": None if self.steal_pct is None else round(self.steal_pct, 1)}


def between(start: CpuTimes | None, end: CpuTimes | None, load1: float | None, cpus: int) -> CheckLoad:
    """The load between two /proc/stat readings (pure)."""
    if start is None or end is None or end.total <= start.total:
        return CheckLoad(load1, cpus, None, None)
    span = end.total - start.total
    return CheckLoad(load1, cpus, 100.0 * (end.busy - start.busy) / span, 100.0 * (end.steal - start.steal) / span)


def load_text(load: dict[str, Any] | None) -> str:
    """'load 3.9/2 CPUs, 98% busy, 0% steal' (report.md, report.html); '' when not recorded."""
    if not isinstance(load, dict) or not isinstance(load.get("cpus"), int):
        return ""
    parts = []
    if isinstance(load.get("load1"), (int, float)):
        parts.append(f"load {load['load1']:.1f}/{load['cpus']} CPUs")
    if isinstance(load.get("busy_pct"), (int, float)):
        parts.append(f"{load['busy_pct']:.0f}% busy")
    if isinstance(load.get("steal_pct"), (int, float)):
        parts.append(f"{load['steal_pct']:.0f}% steal")
    return ", ".join(parts)


def heavier(a: dict[str, Any] | None, b: dict[str, Any] | None) -> dict[str, Any] | None:
    """The more loaded of two records (a check with several tests shows its worst)."""
    def key(x: dict[str, Any] | None) -> float:
        return float((x or {}).get("load1") or 0) / max(1, int((x or {}).get("cpus") or 1))
    if a is None:
        return b
    return b if b is not None and key(b) > key(a) else a


@dataclass
class MachineryRecord:
    """What one run measured of Ray's own machinery: the slowest time seen per kind, and the
    factors it fixed for bounds that more than one process must agree on (`fixed_factor`)."""
    slowest_s: dict[str, float] = field(default_factory=dict)
    _fixed: dict[str, float] = field(default_factory=dict, repr=False, compare=False)

    def note(self, kind: str, seconds: float) -> None:
        if kind not in NOMINAL_S:
            raise ValueError(f"unknown machinery kind {kind!r}; known: {sorted(NOMINAL_S)}")
        self.slowest_s[kind] = max(seconds, self.slowest_s.get(kind, 0.0))

    def factor(self, kind: str | None = None, queue_per_cpu: float | None = None) -> float:
        """How far a bound waiting on `kind` (None: any machinery) stretches: the measured time
        over its nominal, or the run queue per CPU, whichever is larger; within [1, MAX_FACTOR]."""
        kinds = [kind] if kind is not None else list(NOMINAL_S)
        measured = max((self.slowest_s.get(k, 0.0) / NOMINAL_S[k] for k in kinds), default=0.0)
        return min(MAX_FACTOR, max(1.0, measured, queue_per_cpu or 0.0))

    def bound_factor(self, kind: str | None = None) -> float:
        """This run's factor for a bound that waits on Ray's `kind` of machinery (now): what the run
        measured of it. Only an import, which the run cannot time before it is needed, also reads the
        run queue per CPU: a hang of vendor code must not wait longer because the host is busy
        unless the host's own measurement says Ray itself is slow."""
        return self.factor(kind, load_per_cpu() if kind == "import" else None)

    def fixed_factor(self, kind: str) -> float:
        """This run's factor for `kind`, fixed at its first use (`bound_factor` then): a bound that
        several processes must agree on (a timeout in every node's environment, the driver's copy
        of it and the checks' bounds) is stretched once per run, never again in the same run."""
        if kind not in self._fixed:
            self._fixed[kind] = self.bound_factor(kind)
        return self._fixed[kind]

    def as_json(self) -> dict[str, Any]:
        """What the run measured and the factors its bounds used: `factor` stretched the waits on
        Ray's machinery (measured only), `import_factor` the import bound (the run queue too), as
        bound_factor applies them; a report must not show a stretch no bound had."""
        return {"slowest_s": {k: round(v, 2) for k, v in sorted(self.slowest_s.items())},
                "nominal_s": dict(NOMINAL_S), "factor": round(self.factor(), 2),
                "import_factor": round(self.bound_factor("import"), 2)}


def import_factor(machinery: MachineryRecord | None) -> float:
    """The factor of a bound on importing vendor code (conformance.catalog.vendor_calls): that of
    `machinery`, the run's record, or, with None, what a record that measured no import gives: the
    run queue per CPU alone. None is for code outside a run, or where no run's record is at hand (a
    command, the manifest loaded before the run starts): there is no run's measurement to read, and
    a process-wide record would let one run's measurements leak into another's bounds."""
    return (machinery if machinery is not None else MachineryRecord()).bound_factor("import")
