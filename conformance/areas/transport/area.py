"""The transport area's declaration (conformance.areas.AREAS lists it)."""
from typing import Any

import pytest

from conformance.run.area import Area, HtmlSection

CONTEXT: "pytest.StashKey[Any]" = pytest.StashKey()
"""One TransportContext per run, shared by the transport and performance check modules."""

AREA = Area(
    name="transport", prefix="TR",
    package="conformance.areas.transport", checks="conformance.checks.transport",
    doc="docs/transport.md#the-checks",
    fixtures="conformance.areas.transport.fixtures",
    state=CONTEXT,
    section="Transport",
    html=(HtmlSection("bandwidth", "Transport bandwidth by size", "conformance.report.html.model:bandwidth_section",
                      nav="Bandwidth"),),
    manifest_block="transport",
)
