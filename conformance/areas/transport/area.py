"""The transport area's declaration (conformance.areas.AREAS lists it).

Its checks' context, `transport_ctx`, is opened by conformance.areas.transport.fixtures: a
TransportCtx, or a UsageCtx for a check tagged `fault-twin`. Its per-run state is the RDT
harness's (the run's TransportContext under conformance.rdt.fixtures.CONTEXT in the run's stash),
which the performance and workload areas share.
"""
from conformance.catalog.area import Area, ContextDecl, HtmlSection

AREA = Area(
    name="transport", prefix="TR",
    package="conformance.areas.transport", checks="conformance.checks.transport",
    doc="docs/transport.md#the-checks",
    context=ContextDecl(base="conformance.areas.transport.context:TransportCtx",
                        opens="conformance.areas.transport.fixtures:open_context",
                        by_tag={"fault-twin": "conformance.areas.transport.usage:UsageCtx"}),
    section="Transport",
    html=(HtmlSection("bandwidth", "Transport bandwidth by size", "conformance.areas.transport.report:bandwidth_section",
                      nav="Bandwidth"),),
    judges="conformance.areas.transport.judges",
    manifest_block="transport",
    manifest_refs=("manager",),
)
