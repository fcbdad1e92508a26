"""The collective area's declaration (conformance.areas.AREAS lists it)."""
from typing import TYPE_CHECKING

import pytest

from conformance.catalog.area import Area, HtmlSection

if TYPE_CHECKING:
    from conformance.collective.context import CollectiveContext

STATE: "pytest.StashKey[CollectiveContext | str]" = pytest.StashKey()
"""The run's CollectiveContext (or the one-line reason the backend could not be registered);
fixtures.collective_state builds it, every CollectiveCtx of a check with a cluster mark holds it."""

AREA = Area(
    name="collective", prefix="CC",
    package="conformance.areas.collective", checks="conformance.checks.collective",
    doc="docs/collective.md#the-checks",
    fixtures="conformance.areas.collective.fixtures",
    state=STATE,
    section="Collective",
    html=(HtmlSection("collective", "Collective backend", "conformance.areas.collective.report:html_block",
                      "No collective backend in this report: the manifest declares none.", nav="Collective"),),
    judges="conformance.areas.collective.judges",
    manifest_block="collective",
)
