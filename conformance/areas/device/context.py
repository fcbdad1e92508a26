"""The device checks' context (DeviceCtx), built by `device_ctx` (conformance.areas.device.fixtures).

What every DP check reads: the manifest's resource, device count, type and manager, the manager's
visible-devices variable, and (for the contract checks) the result of the one contract probe of
the run. The variable and the probe are read lazily: a contract check runs the manager only in its
fresh probe process, never injected here, and the live checks read the variable once their
cluster is up, as Ray does.
"""
from __future__ import annotations

import functools
from dataclasses import dataclass
from typing import Any

import pytest

from conformance.areas.device.contract import ProbeFailed, probe_timeout_s, run_contract_probe
from conformance.run.check_context import CheckContext, RunView


class ContractProbe:
    """The contract probe of a run (DP-001 .. DP-016, DP-007/013/014's validator part): the manager's
    static methods in a fresh process, run once, on the first check that asks."""

    def __init__(self, run: RunView) -> None:
        self.run = run
        self._result: dict[str, Any] | ProbeFailed | None = None

    def result(self) -> dict[str, Any] | ProbeFailed:
        if self._result is None:
            manifest = self.run.manifest
            q = manifest.quantities
            quantities = sorted({1.0, *map(float, q["valid"]), *map(float, q["invalid"])})
            try:
                # The run's hang record: a call known to hang fails this probe at once; a hang found here
                # (in a method Ray calls at every node start) fails every later cluster start at once.
                self._result = run_contract_probe(manifest.view.accelerator.manager, python_path=manifest.python_path,
                                                  env=manifest.accelerator_env, quantities=quantities,
                                                  timeout_s=probe_timeout_s(self.run), hangs=self.run.hangs,
                                                  found_by="DP-001's contract probe", machinery=self.run.machinery)
            except ProbeFailed as exc:
                self._result = exc
        return self._result


@dataclass(kw_only=True)
class DeviceCtx(CheckContext):
    """One DP check's context: the base (run, check, metrics, cluster) and the device under test."""

    contract_probe: ContractProbe

    # What the manifest says of the device under test, read from it (never copied into the context).
    @property
    def resource(self) -> str:
        """The manifest's resource name (SIMACC, GPU, ...)."""
        return str(self.manifest.resource_name)

    @property
    def n(self) -> int:
        """Devices per node the manifest expects."""
        return int(self.manifest.devices_per_node)

    @property
    def manager_ref(self) -> str:
        """"pkg.module:Class" of the vendor's AcceleratorManager."""
        return self.manifest.view.accelerator.manager

    @property
    def accelerator_type(self) -> str:
        """The accelerator type the manifest expects."""
        return str(self.manifest.accelerator_type)

    @functools.cached_property
    def env_var(self) -> str | None:
        """The manager's visible-devices variable (None: it names none), asked in this process."""
        value: str | None = self.manager().get_visible_accelerator_ids_env_var()
        return value

    def contract(self) -> dict[str, Any]:
        """The run's contract probe result; the check fails with the probe's own failure."""
        result = self.contract_probe.result()
        if isinstance(result, ProbeFailed):
            pytest.fail(str(result), pytrace=False)
        return result

    def probe(self, env: dict[str, str], mode: str, **options: Any) -> dict[str, Any]:
        """One host probe (conformance.areas.device.host_detection) of the manager under `env`;
        the check fails when the probe process itself does."""
        try:
            return run_contract_probe(self.manager_ref, python_path=self.manifest.python_path, env=env,
                                      timeout_s=probe_timeout_s(self.run), mode=mode,
                                      hangs=self.run.hangs, found_by=f"the {mode} probe", machinery=self.run.machinery,
                                      **options)
        except ProbeFailed as exc:
            pytest.fail(str(exc), pytrace=False)

    def wait_devices_released(self) -> None:
        """Wait until every device of the cluster is free again (the next check starts clean): Ray's
        accounting, through the check's budget (conformance.run.release; a leak fails)."""
        self.budget.released(self.resource, "every device to be free after the check's actors and tasks ended")
