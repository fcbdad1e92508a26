"""Device area, contract part: the manager's static methods in a fresh process, no cluster.

One probe per run answers them all (device_ctx.contract(): conformance.areas.device.context).
Each check records the slice of the probe its judge reads (conformance.areas.device.evidence)
and decides by it (conformance.areas.device.judges), as `verify` does again. DP-007, DP-013 and
DP-014 also read the probe; their live halves decide them (test_device_live.py)."""
from __future__ import annotations

from typing import Any

import pytest

from conformance.areas.device.context import DeviceCtx
from conformance.areas.device.contract import env_var_applicable
from conformance.areas.device.evidence import contract_evidence
from conformance.run.fixtures import not_applicable


def decide_on_probe(ctx: DeviceCtx, probe: dict[str, Any]) -> None:
    ctx.decide(probe=contract_evidence(probe, ctx.check_id))


@pytest.mark.check("DP-001")
def test_methods_return_documented_types(device_ctx: DeviceCtx) -> None:
    decide_on_probe(device_ctx, device_ctx.contract())


@pytest.mark.check("DP-002")
def test_resource_name_valid_and_matches_manifest(device_ctx: DeviceCtx) -> None:
    decide_on_probe(device_ctx, device_ctx.contract())


def _env_or_na(probe: dict[str, Any]) -> None:
    ok, why = env_var_applicable(probe)
    if not ok:
        not_applicable(why)


@pytest.mark.check("DP-003")
def test_visible_ids_round_trip(device_ctx: DeviceCtx) -> None:
    probe = device_ctx.contract()
    _env_or_na(probe)
    decide_on_probe(device_ctx, probe)


@pytest.mark.check("DP-004")
def test_unset_variable_reads_none(device_ctx: DeviceCtx) -> None:
    probe = device_ctx.contract()
    _env_or_na(probe)
    decide_on_probe(device_ctx, probe)


@pytest.mark.check("DP-005")
def test_named_variable_is_written(device_ctx: DeviceCtx) -> None:
    probe = device_ctx.contract()
    _env_or_na(probe)
    decide_on_probe(device_ctx, probe)


@pytest.mark.check("DP-016")
def test_no_other_variable_is_written(device_ctx: DeviceCtx) -> None:
    probe = device_ctx.contract()
    _env_or_na(probe)
    decide_on_probe(device_ctx, probe)
