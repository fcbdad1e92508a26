"""The manager's contract (DP-001..DP-005, DP-016): its return types, resource name and
visible-ids variable, probed.
"""
from __future__ import annotations

from typing import Any, Callable, Mapping

from conformance.areas.device.contract import (
    problems_env_var_written,
    problems_no_stray_vars,
    problems_resource_name,
    problems_round_trip,
    problems_types,
    problems_unset_is_none,
)
from conformance.areas.device.contract_probe import ROUND_TRIPS
from conformance.areas.device.judges.common import (
    JUDGES,
    Metrics,
    _key,
    _verdict,
    contract_probe,
    manifest_quantities,
    manifest_resource,
)
from conformance.report.judges import (
    Verdict,
)


# ------------------------------------------------------------------------------ contract (DP-001 .. DP-005, DP-016)
def _env_var_problems(probe: Mapping[str, Any]) -> list[str]:
    """A visible-ids check passes only where the manager names a variable (else it is not
    applicable), and the variable the probe used is the one the manager named."""
    env_var = probe.get("env_var")
    if env_var is None:
        return ["the manager names no visible-devices variable, so this check is not applicable: no pass"]
    named = probe["methods"]["get_visible_accelerator_ids_env_var"]
    if not named["ok"] or named["result"].get("value") != env_var:
        return [f"the probe used {env_var!r}, but get_visible_accelerator_ids_env_var() is not that"]
    return []


def _round_trip_problems(probe: Mapping[str, Any]) -> list[str]:
    """The probe set exactly the release's ids (DP-003's requirement names them)."""
    trips = [t["ids"] for t in probe.get("round_trips", [])]
    if trips != ROUND_TRIPS:
        return [f"the probe's round trips set {trips}; the release's contract probe sets {ROUND_TRIPS}"]
    return []


@JUDGES.rule(needs=("probe",))
def documented_return_types(m: Metrics, p: Mapping[str, Any], manifest: Mapping[str, Any]) -> Verdict:
    """DP-001: every method's recorded return has its documented type, and every quantity the
    manifest declares (and 1) was validated."""
    probe = contract_probe(m, ("validate",))
    problems = problems_types(probe)
    q = manifest_quantities(manifest)
    missing = sorted({_key(v) for v in (1.0, *q["valid"], *q["invalid"])} - set(probe["validate"]))
    if missing:
        problems.append(f"validate_resource_request_quantity was not probed with {', '.join(missing)} "
                        "(1 and the manifest's accelerator.quantities)")
    return _verdict(problems, "every method returns its documented type")


@JUDGES.rule(needs=("probe",))
def resource_name_valid_and_declared(m: Metrics, p: Mapping[str, Any], manifest: Mapping[str, Any]) -> Verdict:
    """DP-002: the name is a valid, unreserved Ray resource name and the manifest's."""
    probe = contract_probe(m)
    return _verdict(problems_resource_name(probe, manifest_resource(manifest)),
                    "a valid resource name, the manifest's")


def _visible_ids_judge(problems_of: Callable[[dict[str, Any]], list[str]], part: str,
                       trips: bool) -> Callable[[Metrics, Mapping[str, Any], Mapping[str, Any]], Verdict]:
    def decide(m: Metrics, p: Mapping[str, Any], manifest: Mapping[str, Any]) -> Verdict:
        probe = contract_probe(m, (part,))
        problems = _env_var_problems(probe)
        if not problems:
            problems = (_round_trip_problems(probe) if trips else []) + problems_of(probe)
        return _verdict(problems, "the visible-ids calls keep the contract")
    return decide


@JUDGES.rule(needs=("probe",))
def visible_ids_round_trip(m: Metrics, p: Mapping[str, Any], manifest: Mapping[str, Any]) -> Verdict:
    """DP-003: set then get returns exactly the ids, as strings, for the release's ids."""
    return _visible_ids_judge(problems_round_trip, "round_trips", True)(m, p, manifest)


@JUDGES.rule(needs=("probe",))
def unset_variable_reads_none(m: Metrics, p: Mapping[str, Any], manifest: Mapping[str, Any]) -> Verdict:
    """DP-004: with the variable unset, get returns None."""
    return _visible_ids_judge(problems_unset_is_none, "unset_get", False)(m, p, manifest)


@JUDGES.rule(needs=("probe",))
def named_variable_written(m: Metrics, p: Mapping[str, Any], manifest: Mapping[str, Any]) -> Verdict:
    """DP-005: set writes the variable the manager names."""
    return _visible_ids_judge(problems_env_var_written, "round_trips", True)(m, p, manifest)


@JUDGES.rule(needs=("probe",))
def no_other_variable_written(m: Metrics, p: Mapping[str, Any], manifest: Mapping[str, Any]) -> Verdict:
    """DP-016: set changes no variable but the named one."""
    return _visible_ids_judge(problems_no_stray_vars, "round_trips", True)(m, p, manifest)
