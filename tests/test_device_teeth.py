"""Every device check has teeth: a broken plugin that it catches, and the good plugin passes.

Each variant runs the device checks in a fresh pytest process against a live Ray cluster and
must fail exactly its expected set of device checks — the intended one among them — and pass
every other device check (no false alarms).
"""
from __future__ import annotations

from pathlib import Path

import pytest

from suite_runner import CHECKS, broken_manifest, outcomes, run_suite, sim_manifest, write_manifest

DEVICE_FILES = [str(CHECKS / "test_device_contract.py"), str(CHECKS / "test_device_live.py")]
ALL_LIVE = {"DP-006", "DP-007", "DP-008", "DP-009", "DP-010", "DP-011", "DP-012", "DP-013"}

# variant -> (intended check, every device check it is expected to fail, manifest overrides)
VARIANTS = {
    "FloatCount": ("DP-001", {"DP-001"}, {}),
    "SpaceInName": ("DP-002", {"DP-002"}, {"resource_name": "SIM ACC"}),
    "IntIds": ("DP-003", {"DP-003", "DP-010"}, {}),
    "UnsetIsEmpty": ("DP-004", {"DP-004"} | ALL_LIVE, {}),
    "WritesOtherName": ("DP-005", {"DP-003", "DP-005", "DP-016", "DP-008", "DP-009", "DP-010", "DP-011"}, {}),
    "StrayVariable": ("DP-016", {"DP-016"}, {}),
    "CountOffByOne": ("DP-006", {"DP-006"}, {}),
    "WrongType": ("DP-007", {"DP-007"}, {}),
    "ExtraIdInWorkers": ("DP-008", {"DP-008", "DP-009", "DP-010", "DP-011", "DP-015"}, {}),
    "CollidingActors": ("DP-009", {"DP-009"}, {}),
    "DriftingView": ("DP-010", {"DP-010"}, {}),
    "TruncateMultiInWorkers": ("DP-011", {"DP-011", "DP-015"}, {}),
    "LeakVisibilityInWorkers": ("DP-012", {"DP-012"}, {"env": {"SIMACC_FAULT": "leak"}}),
    "RejectFractional": ("DP-013", {"DP-013"}, {}),
    "AcceptAll": ("DP-014", {"DP-014"}, {}),
    "RenumberInWorkers": ("DP-015", {"DP-015"}, {}),
}


def test_every_device_check_has_a_variant() -> None:
    from conformance.data import load_suite_data

    device_checks = {c.id for c in load_suite_data().checklist.active() if c.area == "device"}
    assert device_checks == {intended for intended, _, _ in VARIANTS.values()}


def test_good_plugin_passes_every_device_check(tmp_path: Path) -> None:
    manifest = write_manifest(sim_manifest(), tmp_path)
    _, report, output = run_suite(manifest, tmp_path / "out", *DEVICE_FILES)
    assert report is not None, output[-2000:]
    bad = {k: v for k, v in outcomes(report, "device").items() if v != "pass"}
    assert not bad, bad
    assert report["tier"] == "experimental"


@pytest.mark.parametrize("variant", sorted(VARIANTS))
def test_broken_variant_is_caught(variant: str, tmp_path: Path) -> None:
    intended, expected_failures, overrides = VARIANTS[variant]
    overrides = dict(overrides)
    env = overrides.pop("env", None)
    manifest = write_manifest(broken_manifest(variant, env=env, **overrides), tmp_path)
    code, report, output = run_suite(manifest, tmp_path / "out", *DEVICE_FILES)
    assert report is not None, output[-2000:]
    device = outcomes(report, "device")
    failed = {k for k, v in device.items() if v in ("fail", "error")}
    assert device[intended] == "fail", f"{intended} did not catch {variant}: {device[intended]}"
    assert failed == expected_failures, f"{variant}: failed {sorted(failed)}, expected {sorted(expected_failures)}"
    assert all(device[k] == "pass" for k in device if k not in expected_failures)
    level = next(c["level"] for c in report["checks"] if c["id"] == intended)
    if level == "MUST":
        assert report["tier"] is None, "a plugin failing a device MUST check cannot reach experimental"
    else:  # a SHOULD failure lowers the SHOULD share that the stable tier needs
        stable = next(t for t in report["tiers"] if t["name"] == "stable")
        share = next(c["detail"] for c in stable["conditions"] if c["kind"] == "should_share")
        passed, total = share.split()[0].split("/")
        assert int(passed) < int(total), share
    assert code == 1
