"""How a device check's context is opened (the area's Area.context `opens`; the core's one fixture
`device_ctx` calls it): a DeviceCtx, the one argument of every DP check.

What is done before a check is what the cluster its checklist entry names asks for:
* `none` (the contract and host probes): nothing; the probes run the manager in processes of
  their own, and the contract probe runs once per run, on the first check that asks for it;
* `shared` (the live checks): the shared cluster is up before the check starts, and afterwards
  every device must be free again before the next check starts;
* another shape (DP-015's preset-visible, DP-017's host-without-device): the shape is resolved
  before the check starts (not applicable when it cannot exist here); the check starts it itself.
"""
from __future__ import annotations

from typing import TYPE_CHECKING, Iterator

from conformance.areas.device.area import CONTRACT
from conformance.areas.device.context import ContractProbe, DeviceCtx
from conformance.run.check_context import CheckContext
from conformance.run.state import stash_of

if TYPE_CHECKING:
    from conformance.run.check_context import RunView
    from conformance.run.contexts import Lifetimes


def contract_probe(run: RunView) -> ContractProbe:
    """The run's one contract probe (kept under the area's stash key), run lazily (DeviceCtx.contract)."""
    stash = stash_of(run)
    if CONTRACT not in stash:
        stash[CONTRACT] = ContractProbe(run)
    probe: ContractProbe = stash[CONTRACT]
    return probe


def open_context(kind: type[DeviceCtx], base: CheckContext, lifetimes: Lifetimes) -> Iterator[DeviceCtx]:
    """The check's DeviceCtx, with what its cluster asks for done first (the module docstring)."""
    from conformance.cluster.manager import SHARED

    ctx = kind.derive(base, contract_probe=contract_probe(base.run))
    if not ctx.marked:
        yield ctx
        return
    _ = ctx.shape                 # resolved now: not applicable (or a start error) before the check starts
    if ctx.shape_name != SHARED.name:
        yield ctx
        return
    ctx.cluster()
    try:
        _ = ctx.env_var           # asked once the cluster is up, before the check starts
        yield ctx
    finally:
        ctx.wait_devices_released()
