"""The device area's declaration (conformance.areas.AREAS lists it)."""
from conformance.run.area import Area

AREA = Area(
    name="device", prefix="DP",
    package="conformance.areas.device", checks="conformance.checks.device",
    doc="docs/writing-a-plugin.md#3-the-device-checks-dp",
    fixtures="conformance.areas.device.fixtures",
    shapes="conformance.areas.device.shapes",
    manifest_block="accelerator",
)
