"""The recovery area's declaration (conformance.areas.AREAS lists it)."""
from dataclasses import dataclass, field
from typing import Any

import pytest

from conformance.catalog.area import Area, ContextDecl, HtmlSection


@dataclass
class RecoveryState:
    """What the recovery checks keep for the run: the scenarios timed so far (the report's Recovery
    section) and the last node seen per role (a fault driver restarts a dead role from it)."""

    recorder: Any = None
    known_nodes: dict[str, Any] = field(default_factory=dict)


STATE: "pytest.StashKey[RecoveryState]" = pytest.StashKey()

AREA = Area(
    name="recovery", prefix="FR",
    package="conformance.areas.recovery", checks="conformance.checks.recovery",
    doc="docs/recovery.md#checks",
    context=ContextDecl(base="conformance.areas.recovery.context:RecoveryCtx",
                        opens="conformance.areas.recovery.fixtures:open_context",
                        by_shape={"recovery-devices": "conformance.areas.recovery.context:DeviceRecoveryCtx",
                                  "recovery-nodes": "conformance.areas.recovery.context:NodeRecoveryCtx",
                                  "recovery-transfers": "conformance.areas.recovery.context:TransferRecoveryCtx",
                                  "recovery-fetch-timeout": "conformance.areas.recovery.context:TransferRecoveryCtx"}),
    shapes="conformance.areas.recovery.shapes",
    state=STATE,
    section="Recovery",
    html=(HtmlSection("recovery", "Recovery timeline", "conformance.areas.recovery.report:recovery",
                      "No recovery scenarios in this report: the recovery checks did not run.", nav="Recovery"),),
    disrupts_cluster=True,
    judges="conformance.areas.recovery.judges",
)
