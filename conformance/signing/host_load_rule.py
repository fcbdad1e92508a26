"""The host's load a check records is one host's reading of /proc/stat (held-out round 25: N25_15).

Each check records `host_load` (conformance.timing.host_load.CheckLoad: the 1-minute load average
at its end, the CPUs the run's process may use, and the share of all CPUs' time busy and stolen
between its start and end). report.md and report.html show it beside the check; no judge, tier,
capability or diff reads it (diff's host change reads the references and cluster.machinery).

What verify can hold is that the readings are readings of one host: the CPUs the process may use
are the same in every check and no more than the host's (environment.cpu_count), shares are
shares (0-100, busy and steal together at most the whole), a load average is not negative.

What it cannot hold is an idle host claimed for a loaded one (N25_15: every check rewritten to
busy 0 %, load 0): nothing else in the report measures CPU occupancy. The run's machinery record
measures Ray's latency, not the CPUs' load (reports/example: checks 96-100 % busy at load 3 on 2
CPUs beside a slowest worker start of 0.27 s, a tenth of its nominal), and the one bound that reads
the run queue (an import's, `import_factor`) records no wait in the report; so an idle reading
contradicts no other record. It is the vendor's description of its host, informational, as
docs/signing.md's trust text says.

Pure: the report's checks and environment in, problem lines out.
"""
from __future__ import annotations

from typing import Any, Mapping, Sequence

from conformance.catalog.strict_input import as_map
from conformance.sanitize import terminal

ROUNDING_PCT = 0.2   # busy_pct and steal_pct are each rounded to 0.1


def _num(value: object) -> float | None:
    return float(value) if isinstance(value, (int, float)) and not isinstance(value, bool) else None


def host_load_problems(checks: Sequence[Any], environment: Mapping[str, Any]) -> list[str]:
    """Why the checks' host_load records are not readings of one host ([] when they are)."""
    host_cpus = environment.get("cpu_count")
    problems: list[str] = []
    seen_cpus: dict[int, str] = {}
    for raw in checks:
        entry = as_map(raw)
        load = entry.get("host_load")
        if load is None:
            continue
        cid = terminal(str(entry.get("id")), limit=12)
        record = as_map(load)
        cpus = record.get("cpus")
        if not isinstance(cpus, int) or isinstance(cpus, bool) or cpus < 1:
            problems.append(f"{cid} host_load records cpus {terminal(repr(cpus), limit=20)}, not a CPU count")
            continue
        seen_cpus.setdefault(cpus, cid)
        if isinstance(host_cpus, int) and not isinstance(host_cpus, bool) and host_cpus > 0 and cpus > host_cpus:
            problems.append(f"{cid} host_load records {cpus} CPUs; the host has {host_cpus} (environment.cpu_count)")
        busy, steal, load1 = (_num(record.get(k)) for k in ("busy_pct", "steal_pct", "load1"))
        shares = [s for s in (busy, steal) if s is not None]
        if any(not 0 <= s <= 100 for s in shares) or sum(shares) > 100 + ROUNDING_PCT:
            problems.append(f"{cid} host_load records busy {busy} % and steal {steal} %: not shares of the CPUs' time")
        if load1 is not None and load1 < 0:
            problems.append(f"{cid} host_load records a negative load average {load1}")
    if len(seen_cpus) > 1:
        problems.append(f"host_load records {sorted(seen_cpus)} CPUs in different checks "
                        f"({', '.join(seen_cpus.values())}): one run's process on one host")
    return problems[:6]
