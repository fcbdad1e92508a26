"""The workload area's declaration (conformance.areas.AREAS lists it).

Its checks move tensors with the manifest's transport (the RDT harness, conformance.rdt), so the
area certifies the manifest's `transport` block: without one its checks are not applicable."""
from conformance.catalog.area import Area, HtmlSection

AREA = Area(
    name="workload", prefix="WL",
    package="conformance.areas.workload", checks="conformance.checks.workload",
    doc="docs/workload.md#the-checks",
    fixtures="conformance.areas.workload.fixtures",
    section="Workload",
    # the title and notice stay as the committed example page has them (WL-003/004's charts follow WL-001's)
    html=(HtmlSection("workload", "Workload: RL weight sync", "conformance.areas.workload.report_pipeline:html_block",
                      "No workload figures in this report (WL-001 did not run or recorded none).", nav="Workload"),
          HtmlSection("findings", "Findings for the SIG: Ray's libraries on the accelerator (never counted)",
                      "conformance.report.findings:html_block",
                      "No findings in this report (WL-010..WL-013 did not run).", nav="Findings")),
    manifest_block="transport",
)
