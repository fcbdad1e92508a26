"""Ray's 13 built-in managers through the hardware-free contract checks (docs/builtin-managers.md).

Ray's managers are reference implementations: every failure here must be explained as a real
deviation of Ray's (documented in the docs page) or it is a bug in a check.
"""
from __future__ import annotations

from pathlib import Path

from conformance.areas.device.builtin_managers import builtin_manager_refs, table

# The deviations we found and documented; anything else failing is a check bug.
KNOWN = {("TPUAcceleratorManager", "DP-016"): "fail"}
NO_ENV_VAR = {"AppleGPUAcceleratorManager"}


def test_thirteen_builtin_managers_are_probed() -> None:
    assert len(builtin_manager_refs()) == 13


def test_builtin_outcomes_match_the_documented_table() -> None:
    md, results = table()
    for ref, res in results.items():
        name = ref.split(":")[1]
        for cid, (outcome, detail) in res.items():
            expected = KNOWN.get((name, cid))
            if expected:
                assert outcome == expected, (name, cid, outcome, detail)
            elif name in NO_ENV_VAR and cid in ("DP-003", "DP-004", "DP-005", "DP-016"):
                assert outcome == "not_applicable", (name, cid, outcome)
            else:
                assert outcome == "pass", (name, cid, outcome, detail)
    doc = (Path(__file__).resolve().parents[2] / "docs" / "builtin-managers.md").read_text()
    assert md.split("\n\n")[0] in doc, "docs/builtin-managers.md is stale: regenerate with python -m conformance.areas.device.builtin_managers"
