"""A device type's record of a check that is another type's, told by its clock (verify's `evidence`).

same_measurement.copied_type_problems tells a copied record by the Ray objects its errors name;
the usage checks' records (TR-015..TR-020) name none (an actor's death is ActorDiedError on every
type), so one type's scenario could be pasted over another's (held-out round 38, N38_29). What two
runs of a scenario on two device types never share is their clock: every step's and the scenario's
seconds, read to the millisecond. Two types' records of one check whose timings agree figure for
figure, with enough of them to mean something, are one record twice.
"""
from __future__ import annotations

from typing import Any, Mapping, Sequence

from conformance.catalog.strict_input import as_map

TIMING_KEYS = ("took_s", "elapsed_s")   # the clock's reads a record keeps, at any depth
MIN_FIGURES = 3          # knob: fewer timings could agree by chance (a record of one or two reads)
MIN_SECONDS = 0.05       # knob: a record whose every read is under it (all 0.0) says nothing of a clock


def timings(record: object, path: str = "") -> list[tuple[str, float]]:
    """Every (path, seconds) of a timing key below `record`, in document order."""
    out: list[tuple[str, float]] = []
    if isinstance(record, Mapping):
        for k, v in record.items():
            here = f"{path}.{k}"
            if k in TIMING_KEYS and isinstance(v, (int, float)) and not isinstance(v, bool):
                out.append((here, float(v)))
            else:
                out += timings(v, here)
    elif isinstance(record, list):
        for i, v in enumerate(record):
            out += timings(v, f"{path}[{i}]")
    return out


def copied_timing_problems(checks: Sequence[Any], per_type: Any) -> list[str]:
    """Passed checks two of whose device types' records keep the same clock reads, figure for
    figure. `per_type`: same_measurement._per_type (the records by type)."""
    problems: list[str] = []
    for entry in checks:
        c = as_map(entry)
        if c.get("outcome") != "pass":
            continue
        seen: dict[tuple[tuple[str, float], ...], str] = {}
        for d, record in per_type(as_map(c.get("metrics"))).items():
            reads = tuple(timings(record))
            if len(reads) < MIN_FIGURES or max(v for _, v in reads) < MIN_SECONDS:
                continue
            if reads in seen:
                problems.append(f"{c.get('id')}'s record on {d} keeps the same {len(reads)} clock reads as its record on "
                                f"{seen[reads]}, figure for figure: two device types' runs never share a clock (each "
                                "type's evidence is its own)")
            seen.setdefault(reads, d)
    return problems
