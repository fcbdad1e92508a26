"""The device area's declaration (conformance.areas.AREAS lists it)."""
from typing import Any

import pytest

from conformance.catalog.area import Area, ContextDecl

CONTRACT: "pytest.StashKey[Any]" = pytest.StashKey()
"""The run's contract probe (conformance.areas.device.context.ContractProbe): run once, on the first
check that asks."""

AREA = Area(
    name="device", prefix="DP",
    package="conformance.areas.device", checks="conformance.checks.device",
    doc="docs/writing-a-plugin.md#3-the-device-checks-dp",
    context=ContextDecl(base="conformance.areas.device.context:DeviceCtx",
                        opens="conformance.areas.device.fixtures:open_context"),
    shapes="conformance.areas.device.shapes",
    judges="conformance.areas.device.judges",
    manifest_block="accelerator",
    manifest_refs=("manager",),
    state=CONTRACT,
    doc_blocks="conformance.areas.device.methods:doc_blocks",
)
