"""The transport area's declaration (conformance.areas.AREAS lists it).

Its fixtures and per-run state are the RDT harness's (conformance.rdt.fixtures: the run's
TransportContext under its CONTEXT stash key), which the performance area shares.
"""
from conformance.run.area import Area, HtmlSection

AREA = Area(
    name="transport", prefix="TR",
    package="conformance.areas.transport", checks="conformance.checks.transport",
    doc="docs/transport.md#the-checks",
    fixtures="conformance.rdt.fixtures",
    section="Transport",
    html=(HtmlSection("bandwidth", "Transport bandwidth by size", "conformance.report.html.model:bandwidth_section",
                      nav="Bandwidth"),),
    manifest_block="transport",
)
