"""What the recovery checks run *inside* Ray workers (importable by reference, like probes.py).

They report what the process sees and leave the judging to the driver (see `audit`).
"""
from __future__ import annotations

import os
import time
from typing import Any

from conformance.cluster.probes import visible_state
from conformance.handles import Actor


def holder_state(env_var: str | None, resource: str, manager_ref: str | None) -> dict[str, Any]:
    """Device state of this process plus whether Ray restarted the actor it hosts."""
    import ray

    state = visible_state(env_var, resource, manager_ref)
    ctx = ray.get_runtime_context()
    try:
        state["restarted"] = bool(ctx.was_current_actor_reconstructed)
    except Exception:  # noqa: BLE001 - not an actor (a task): no restart flag
        state["restarted"] = None
    return state


class Holder:
    """An actor that holds devices for its lifetime and reports what it sees (wrap with ray.remote)."""

    def __init__(self, env_var: str | None, resource: str, manager_ref: str | None) -> None:
        self.args = (env_var, resource, manager_ref)

    def state(self) -> dict[str, Any]:
        return holder_state(*self.args)

    def busy(self, seconds: float) -> str:
        """A long call, to be in flight when the process or its node dies."""
        time.sleep(seconds)
        return "finished"

    def crash(self) -> None:
        """Die the way a faulting device process does: no cleanup, no exception to Ray."""
        os._exit(1)


class Ledger:
    """Counts attempts of a retried task across worker processes (and hosts): no shared files."""

    def __init__(self) -> None:
        self.attempts: list[dict[str, Any]] = []

    def attempt(self, state: dict[str, Any]) -> int:
        self.attempts.append(state)
        return len(self.attempts)

    def history(self) -> list[dict[str, Any]]:
        return list(self.attempts)


def crash_first_attempt(ledger: Actor, env_var: str | None, resource: str, manager_ref: str | None) -> dict[str, Any]:
    """Task body: report the device state to the ledger; the first attempt's worker then dies."""
    import ray

    state = visible_state(env_var, resource, manager_ref)
    n = ray.get(ledger.attempt.remote(state), timeout=60)  # knob: hang guard of a ledger call
    if n == 1:
        os._exit(1)
    state["attempt"] = n
    return state


def hold_until(ledger: Actor, env_var: str | None, resource: str, manager_ref: str | None,
               hold_s: float) -> dict[str, Any]:
    """Task body: report where it runs, then hold its device for up to `hold_s` (a long task)."""
    import ray

    state = visible_state(env_var, resource, manager_ref)
    n = ray.get(ledger.attempt.remote(state), timeout=60)  # knob: hang guard of a ledger call
    state["attempt"] = n
    if n == 1:
        time.sleep(hold_s)
    return state
