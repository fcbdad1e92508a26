"""The topology area's declaration (conformance.areas.AREAS lists it)."""
from typing import Any

import pytest

from conformance.catalog.area import Area, ContextDecl, HtmlSection

FACTS: "pytest.StashKey[tuple[tuple[str, ...], list[Any]]]" = pytest.StashKey()
"""Per-node topology facts with the alive node ids they were probed on (probe once per cluster)."""

AREA = Area(
    name="topology", prefix="TL",
    package="conformance.areas.topology", checks="conformance.checks.topology",
    doc="docs/topology.md#4-the-checks",
    context=ContextDecl(base="conformance.areas.topology.pytest_support:TopologyCtx",
                        opens="conformance.areas.topology.pytest_support:open_context"),
    state=FACTS,
    section="Topology",
    html=(HtmlSection("topology", "Topology", "conformance.areas.topology.report:topology",
                      "No topology data in this report: neither the topology checks nor the device census ran."),),
    judges="conformance.areas.topology.judges",
    manifest_block="topology",
    manifest_refs=("provider",),
)
