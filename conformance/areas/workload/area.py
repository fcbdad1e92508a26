"""The workload area's declaration (conformance.areas.AREAS lists it).

Its checks move tensors with the manifest's transport (the RDT harness, conformance.rdt), so the
area certifies the manifest's `transport` block: without one its checks are not applicable."""
from conformance.run.area import Area, HtmlSection

AREA = Area(
    name="workload", prefix="WL",
    package="conformance.areas.workload", checks="conformance.checks.workload",
    doc="docs/workload.md#the-checks",
    fixtures="conformance.areas.workload.fixtures",
    section="Workload",
    html=(HtmlSection("workload", "Workload: RL weight sync", "conformance.areas.workload.report:html_block",
                      "No workload figures in this report (WL-001 did not run or recorded none).", nav="Workload"),),
    manifest_block="transport",
)
