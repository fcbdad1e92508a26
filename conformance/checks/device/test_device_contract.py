"""Device area, contract part: the manager's static methods in a fresh process, no cluster."""
from __future__ import annotations

from typing import Any

import pytest

from conformance.areas.device.contract import (
    ProbeFailed,
    env_var_applicable,
    probe_timeout_s,
    problems_env_var_written,
    problems_no_stray_vars,
    problems_resource_name,
    problems_round_trip,
    problems_types,
    problems_unset_is_none,
    run_contract_probe,
    validation_result,
)
from conformance.run.fixtures import not_applicable


@pytest.fixture(scope="module")
def contract(manifest: Any, conformance_run: Any) -> Any:
    q = manifest.quantities
    quantities = sorted({1.0, *map(float, q["valid"]), *map(float, q["invalid"])})
    try:
        # The run's hang record: a call known to hang fails this probe at once; a hang found here
        # (in a method Ray calls at every node start) fails every later cluster start at once.
        return run_contract_probe(manifest.accelerator["manager"], python_path=manifest.python_path,
                                  env=manifest.accelerator_env, quantities=quantities,
                                  timeout_s=probe_timeout_s(conformance_run), hangs=conformance_run.hangs,
                                  found_by="DP-001's contract probe")
    except ProbeFailed as exc:
        return exc


def probe_of(contract: Any) -> dict[str, Any]:
    if isinstance(contract, ProbeFailed):
        pytest.fail(str(contract), pytrace=False)
    return contract


def assert_no_problems(problems: list[str]) -> None:
    assert not problems, "; ".join(problems)


@pytest.mark.check("DP-001")
def test_methods_return_documented_types(contract: Any) -> None:
    assert_no_problems(problems_types(probe_of(contract)))


@pytest.mark.check("DP-002")
def test_resource_name_valid_and_matches_manifest(contract: Any, manifest: Any) -> None:
    assert_no_problems(problems_resource_name(probe_of(contract), manifest.resource_name))


def _env_or_na(probe: dict[str, Any]) -> None:
    ok, why = env_var_applicable(probe)
    if not ok:
        not_applicable(why)


@pytest.mark.check("DP-003")
def test_visible_ids_round_trip(contract: Any) -> None:
    probe = probe_of(contract)
    _env_or_na(probe)
    assert_no_problems(problems_round_trip(probe))


@pytest.mark.check("DP-004")
def test_unset_variable_reads_none(contract: Any) -> None:
    probe = probe_of(contract)
    _env_or_na(probe)
    assert_no_problems(problems_unset_is_none(probe))


@pytest.mark.check("DP-005")
def test_named_variable_is_written(contract: Any) -> None:
    probe = probe_of(contract)
    _env_or_na(probe)
    assert_no_problems(problems_env_var_written(probe))


@pytest.mark.check("DP-016")
def test_no_other_variable_is_written(contract: Any) -> None:
    probe = probe_of(contract)
    _env_or_na(probe)
    assert_no_problems(problems_no_stray_vars(probe))


@pytest.mark.check("DP-007")
def test_accelerator_type_matches_manifest(contract: Any, manifest: Any) -> None:
    probe = probe_of(contract)
    entry = probe["methods"]["get_current_node_accelerator_type"]
    assert entry["ok"], f"get_current_node_accelerator_type() raised {entry.get('error')}"
    got = entry["result"].get("value")
    assert got == manifest.accelerator_type, (
        f"get_current_node_accelerator_type() = {got!r}; the manifest expects {manifest.accelerator_type!r}")


@pytest.mark.check("DP-013")
def test_valid_quantities_accepted_by_validator(contract: Any, manifest: Any) -> None:
    probe = probe_of(contract)
    problems = []
    for q in manifest.quantities["valid"]:
        accepted, message, problem = validation_result(probe, q)
        if problem:
            problems.append(problem)
        elif not accepted:
            problems.append(f"validate_resource_request_quantity({q}) refused a quantity the manifest "
                            f"declares valid: {message!r}")
    assert_no_problems(problems)


@pytest.mark.check("DP-014")
def test_invalid_quantities_refused_by_validator(contract: Any, manifest: Any) -> None:
    probe = probe_of(contract)
    if not manifest.quantities["invalid"]:
        not_applicable("the manifest declares no invalid quantities (accelerator.quantities.invalid)")
    problems = []
    for q in manifest.quantities["invalid"]:
        accepted, message, problem = validation_result(probe, q)
        if problem:
            problems.append(problem)
        elif accepted:
            problems.append(f"validate_resource_request_quantity({q}) accepted a quantity the manifest "
                            "declares invalid")
        elif not message:
            problems.append(f"validate_resource_request_quantity({q}) refused without a message")
    assert_no_problems(problems)
