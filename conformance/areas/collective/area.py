"""The collective area's declaration (conformance.areas.AREAS lists it)."""
from typing import Any

import pytest

from conformance.run.area import Area, HtmlSection

STATE: "pytest.StashKey[Any]" = pytest.StashKey()
"""The run's CollectiveContext (or the one-line reason the backend could not be registered)."""

AREA = Area(
    name="collective", prefix="CC",
    package="conformance.areas.collective", checks="conformance.checks.collective",
    doc="docs/collective.md#the-checks",
    fixtures="conformance.areas.collective.fixtures",
    state=STATE,
    section="Collective",
    html=(HtmlSection("collective", "Collective backend", "conformance.areas.collective.report:html_block",
                      "No collective backend in this report: the manifest declares none.", nav="Collective"),),
    manifest_block="collective",
)
