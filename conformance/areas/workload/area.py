"""The workload area's declaration (conformance.areas.AREAS lists it).

Its checks move tensors with the manifest's transport (the RDT harness, conformance.rdt), so the
area certifies the manifest's `transport` block: without one its checks are not applicable. A
check tagged `collective-backend` (WL-002) runs over the collective backend instead: its context
is a DataParallelCtx over the core's collective harness (conformance.collective.harness)."""
from conformance.catalog.area import Area, ContextDecl, HtmlSection

AREA = Area(
    name="workload", prefix="WL",
    package="conformance.areas.workload", checks="conformance.checks.workload",
    doc="docs/workload.md#the-checks",
    context=ContextDecl(base="conformance.areas.workload.context:WorkloadCtx",
                        opens="conformance.areas.workload.fixtures:open_context",
                        by_tag={"collective-backend": "conformance.areas.workload.dp_context:DataParallelCtx"}),
    section="Workload",
    # the title and notice stay as the committed example page has them (WL-003/004's charts follow WL-001's)
    # the findings (INFO checks, whatever their area) are the core's block: conformance/report/findings.py
    html=(HtmlSection("workload", "Workload: RL weight sync", "conformance.areas.workload.report_pipeline:html_block",
                      "No workload figures in this report (WL-001 did not run or recorded none).", nav="Workload"),),
    judges="conformance.areas.workload.judges",
    manifest_block="transport",
)
