"""The collective area's declaration (conformance.areas.AREAS lists it).

Its per-run state is the collective harness's (the run's CollectiveContext under
conformance.collective.harness.STATE), which the workload area's WL-002 shares.
"""
from conformance.catalog.area import Area, ContextDecl, HtmlSection

AREA = Area(
    name="collective", prefix="CC",
    package="conformance.areas.collective", checks="conformance.checks.collective",
    doc="docs/collective.md#the-checks",
    context=ContextDecl(base="conformance.collective.context:CollectiveCtx",
                        opens="conformance.areas.collective.fixtures:open_context"),
    section="Collective",
    html=(HtmlSection("collective", "Collective backend", "conformance.areas.collective.report:html_block",
                      "No collective backend in this report: the manifest declares none.", nav="Collective"),),
    judges="conformance.areas.collective.judges",
    manifest_block="collective",
)
