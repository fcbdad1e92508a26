"""A check's `provisional` flag is its release's (held-out round 25: N25_28, N25_29).

A provisional check soaks before it counts (tiers/checklist.yaml `provisional: true`,
conformance/catalog/soak.py): the tier is computed from the release's checklist, never from the
report's flag, but report.md and the SIG's soak record read the report's flag ("Provisional
checks", conformance/report/flakes.py). A flag dropped from a soaking check (it looks counted) or
set on a counted check (a MUST that failed looks like a soaking newcomer) states what the release
does not; the report's flag is held to the release's, as title, area and level are.

Pure: the report's check entries and the release's checklist in, problem lines out.
"""
from __future__ import annotations

from typing import Any, Mapping

from conformance.catalog import data
from conformance.catalog.strict_input import as_list, as_map
from conformance.sanitize import terminal


def provisional_problems(checks: object, checklist: data.Checklist) -> list[str]:
    """The checks whose recorded `provisional` is not the release's ([] when every one is)."""
    released = checklist.by_id()
    differing = []
    for raw in as_list(checks):
        entry: Mapping[str, Any] = as_map(raw)
        check = released.get(str(entry.get("id")))
        if check is not None and (entry.get("provisional") is True) != bool(check.provisional):
            differing.append(f"{terminal(str(entry.get('id')), limit=12)} "
                             f"({'provisional' if check.provisional else 'counted'} in the release)")
    if not differing:
        return []
    return [f"provisional differs from the release's checklist: {', '.join(differing[:8])}"
            + (" …" if len(differing) > 8 else "")]
