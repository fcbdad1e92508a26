"""The dtype probe a run makes once per device type, recorded twice, says the same twice.

TR-001 and TR-005 move one tensor per dtype the device holds; which it holds is one probe per
type (conformance.rdt.endpoint.supported_dtypes, cached by the run: `dtypes/<type>`), recorded by
each as its `dtypes` on that type. A dtype the device may refuse (one outside the core dtypes every
device must hold) is recorded unsupported with the exception that refused it, and nothing in the
run can recompute that: it is the device's answer. What the run does fix is that both checks got
the same answer, so a dtype that arrived corrupt and was then recorded "unsupported" in TR-001
alone (issue 43's held-out round: X03) contradicts TR-005's record of the same probe. An answer
edited in both records is the device's word, shown as such on every page (the correctness
matrix's "n/s" and TR-001's unsupported_by_device).

Pure: the report's checks in, the contradictions out. On a merged report (shards) the rule holds
over each shard's checks of the suite's plan (conformance.signing.merged_evidence calls it so).
"""
from __future__ import annotations

from typing import Any, Mapping, Sequence

from conformance.catalog.strict_input import as_map
from conformance.sanitize import terminal

PROBED_BY = ("TR-001", "TR-005")   # the checks that record the dtype probe's answer per type


def _per_type_dtypes(checks: Sequence[Any], check_id: str) -> dict[str, frozenset[str]] | None:
    """{type: the dtypes the check recorded moving there} of a passed check (None: not passed)."""
    for entry in checks:
        c = as_map(entry)
        if c.get("id") != check_id or c.get("outcome") != "pass":
            continue
        m = as_map(c.get("metrics"))
        types = m.get("devices")
        if not isinstance(types, list):
            return None
        out: dict[str, frozenset[str]] = {}
        for d in map(str, types):
            record = m.get(d) if isinstance(m.get(d), Mapping) else m
            dtypes = as_map(record).get("dtypes")
            if isinstance(dtypes, list):
                out[d] = frozenset(map(str, dtypes))
        return out
    return None


def dtype_probe_problems(checks: Sequence[Any], merged: bool = False) -> list[str]:
    """Each type both checks ran on names the same dtypes in both (the one probe's answer)."""
    if merged:
        return []
    first, second = (_per_type_dtypes(checks, cid) for cid in PROBED_BY)
    if first is None or second is None:
        return []
    problems = []
    for d in sorted(set(first) & set(second)):
        if first[d] != second[d]:
            only = sorted(first[d] ^ second[d])
            problems.append(f"{PROBED_BY[0]} and {PROBED_BY[1]} record different dtypes on {terminal(d, limit=40)} "
                            f"({terminal(', '.join(only), limit=120)} in one only): the run probes which dtypes a "
                            "device holds once per type, and both move exactly those")
    return problems
