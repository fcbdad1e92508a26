"""The check areas, each a declared unit: the one list of them.

`AREAS` is the registry: every part of the suite that needs to know the areas (the core's
`<area>_ctx` fixtures, the cluster shape registry, the threshold lint, fault isolation, the
report's links, the HTML page) iterates it; nothing else names them. Each area declares itself in
`conformance/areas/<name>/area.py` (see conformance.catalog.area.Area), which imports nothing heavy.
The registry lint checks AREAS against tiers/vocabulary.yaml at every run, both ways.

Adding an area: its package here, its checks in conformance/checks/<name>/, its `area.py`, one
line below, and its data (docs/architecture.md, "Add an area").
"""
from __future__ import annotations

from conformance.areas.collective.area import AREA as COLLECTIVE
from conformance.areas.device.area import AREA as DEVICE
from conformance.areas.performance.area import AREA as PERFORMANCE
from conformance.areas.recovery.area import AREA as RECOVERY
from conformance.areas.topology.area import AREA as TOPOLOGY
from conformance.areas.transport.area import AREA as TRANSPORT
from conformance.areas.workload.area import AREA as WORKLOAD
from conformance.catalog.area import Area

AREAS: tuple[Area, ...] = (DEVICE, TOPOLOGY, TRANSPORT, PERFORMANCE, RECOVERY, COLLECTIVE, WORKLOAD)


def area(name: str) -> Area:
    """The area called `name` (KeyError naming the known ones otherwise)."""
    for a in AREAS:
        if a.name == name:
            return a
    raise KeyError(f"unknown area {name!r} (known: {', '.join(a.name for a in AREAS)})")


def area_of_check(check_id: str) -> Area | None:
    """The area whose prefix a check id carries (DP-003 -> device)."""
    prefix = check_id.split("-", 1)[0]
    return next((a for a in AREAS if a.prefix == prefix), None)
