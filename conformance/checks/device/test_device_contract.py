"""Device area, contract part: the manager's static methods in a fresh process, no cluster.

One probe per run answers them all (device_ctx.contract(): conformance.areas.device.context)."""
from __future__ import annotations

from typing import Any

import pytest

from conformance.areas.device.context import DeviceCtx
from conformance.areas.device.contract import (
    env_var_applicable,
    problems_env_var_written,
    problems_no_stray_vars,
    problems_resource_name,
    problems_round_trip,
    problems_types,
    problems_unset_is_none,
    validation_result,
)
from conformance.run.fixtures import not_applicable


def assert_no_problems(problems: list[str]) -> None:
    assert not problems, "; ".join(problems)


@pytest.mark.check("DP-001")
def test_methods_return_documented_types(device_ctx: DeviceCtx) -> None:
    assert_no_problems(problems_types(device_ctx.contract()))


@pytest.mark.check("DP-002")
def test_resource_name_valid_and_matches_manifest(device_ctx: DeviceCtx) -> None:
    assert_no_problems(problems_resource_name(device_ctx.contract(), device_ctx.resource))


def _env_or_na(probe: dict[str, Any]) -> None:
    ok, why = env_var_applicable(probe)
    if not ok:
        not_applicable(why)


@pytest.mark.check("DP-003")
def test_visible_ids_round_trip(device_ctx: DeviceCtx) -> None:
    probe = device_ctx.contract()
    _env_or_na(probe)
    assert_no_problems(problems_round_trip(probe))


@pytest.mark.check("DP-004")
def test_unset_variable_reads_none(device_ctx: DeviceCtx) -> None:
    probe = device_ctx.contract()
    _env_or_na(probe)
    assert_no_problems(problems_unset_is_none(probe))


@pytest.mark.check("DP-005")
def test_named_variable_is_written(device_ctx: DeviceCtx) -> None:
    probe = device_ctx.contract()
    _env_or_na(probe)
    assert_no_problems(problems_env_var_written(probe))


@pytest.mark.check("DP-016")
def test_no_other_variable_is_written(device_ctx: DeviceCtx) -> None:
    probe = device_ctx.contract()
    _env_or_na(probe)
    assert_no_problems(problems_no_stray_vars(probe))


@pytest.mark.check("DP-007")
def test_accelerator_type_matches_manifest(device_ctx: DeviceCtx) -> None:
    probe = device_ctx.contract()
    entry = probe["methods"]["get_current_node_accelerator_type"]
    assert entry["ok"], f"get_current_node_accelerator_type() raised {entry.get('error')}"
    got = entry["result"].get("value")
    assert got == device_ctx.accelerator_type, (
        f"get_current_node_accelerator_type() = {got!r}; the manifest expects {device_ctx.accelerator_type!r}")


@pytest.mark.check("DP-013")
def test_valid_quantities_accepted_by_validator(device_ctx: DeviceCtx) -> None:
    probe = device_ctx.contract()
    problems = []
    for q in device_ctx.manifest.quantities["valid"]:
        accepted, message, problem = validation_result(probe, q)
        if problem:
            problems.append(problem)
        elif not accepted:
            problems.append(f"validate_resource_request_quantity({q}) refused a quantity the manifest "
                            f"declares valid: {message!r}")
    assert_no_problems(problems)


@pytest.mark.check("DP-014")
def test_invalid_quantities_refused_by_validator(device_ctx: DeviceCtx) -> None:
    probe = device_ctx.contract()
    if not device_ctx.manifest.quantities["invalid"]:
        not_applicable("the manifest declares no invalid quantities (accelerator.quantities.invalid)")
    problems = []
    for q in device_ctx.manifest.quantities["invalid"]:
        accepted, message, problem = validation_result(probe, q)
        if problem:
            problems.append(problem)
        elif accepted:
            problems.append(f"validate_resource_request_quantity({q}) accepted a quantity the manifest "
                            "declares invalid")
        elif not message:
            problems.append(f"validate_resource_request_quantity({q}) refused without a message")
    assert_no_problems(problems)
