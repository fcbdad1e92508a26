"""The performance area's declaration (conformance.areas.AREAS lists it).

Its checks' context, `performance_ctx`, is opened by conformance.areas.performance.fixtures; its
per-run state is the RDT harness's (the run's TransportContext under conformance.rdt.fixtures.CONTEXT), which it
shares with the transport area.
"""
from conformance.catalog.area import Area, ContextDecl, HtmlSection

AREA = Area(
    name="performance", prefix="PF",
    package="conformance.areas.performance", checks="conformance.checks.performance",
    doc="docs/transport.md#performance-method-pf-001pf-004-conformanceareasperformancebenchpy",
    context=ContextDecl(base="conformance.areas.performance.context:PerformanceCtx",
                        opens="conformance.areas.performance.fixtures:open_context"),
    section="Transport",
    html=(HtmlSection("pairwise", "Pairwise bandwidth matrix", "conformance.areas.performance.report:pairwise_section",
                      nav="Pairwise"),),
    judges="conformance.areas.performance.judges",
    manifest_block="transport",
    manifest_refs=("manager",),
)
