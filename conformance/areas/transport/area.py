"""The transport area's declaration (conformance.areas.AREAS lists it).

Its one fixture, `transport_ctx`, is in conformance.areas.transport.fixtures; its per-run state is
the RDT harness's (the run's TransportContext under conformance.rdt.fixtures.CONTEXT in the run's
stash), which the performance area shares.
"""
from conformance.catalog.area import Area, HtmlSection

AREA = Area(
    name="transport", prefix="TR",
    package="conformance.areas.transport", checks="conformance.checks.transport",
    doc="docs/transport.md#the-checks",
    fixtures="conformance.areas.transport.fixtures",
    section="Transport",
    html=(HtmlSection("bandwidth", "Transport bandwidth by size", "conformance.areas.transport.report:bandwidth_section",
                      nav="Bandwidth"),),
    judges="conformance.areas.transport.judges",
    manifest_block="transport",
    manifest_refs=("manager",),
)
