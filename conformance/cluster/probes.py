"""Small functions the checks run *inside* Ray tasks and actors.

They live in an importable module (not in the check files) so workers import them by
reference, and they report what a process sees rather than asserting: the checks on the
driver decide.
"""
from __future__ import annotations

import os
import time
from typing import Any


def _manager_view(manager_ref: str | None) -> Any:
    if not manager_ref:
        return None
    from conformance.imports import import_ref

    obj = import_ref(manager_ref)
    try:
        return obj.get_current_process_visible_accelerator_ids()
    except Exception as exc:  # noqa: BLE001 - reported, judged on the driver
        return f"raised {exc.__class__.__name__}: {exc}"


def visible_state(env_var: str | None, resource: str, manager_ref: str | None = None,
                  hold_s: float = 0.0) -> dict[str, Any]:
    """What this task/actor process sees: the variable, Ray's assignment, the manager's view."""
    import ray

    ctx = ray.get_runtime_context()
    try:
        assigned = [str(i) for i in ctx.get_accelerator_ids().get(resource, [])]
    except Exception as exc:  # noqa: BLE001
        assigned = [f"error: {exc.__class__.__name__}"]
    state = {
        "pid": os.getpid(),
        "node_id": ctx.get_node_id(),
        "env_set": env_var is not None and env_var in os.environ,
        "env_value": os.environ.get(env_var) if env_var else None,
        "assigned": assigned,
        "manager_view": _manager_view(manager_ref),
        "labels": dict(ctx.get_node_labels()) if hasattr(ctx, "get_node_labels") else {},
    }
    if hold_s:
        time.sleep(hold_s)
    return state


def split_ids(value: str | None) -> list[str]:
    if value is None or value == "":
        return []
    return [v.strip() for v in value.split(",")]


class StateActor:
    """An actor that reports what it sees on every call (wrapped with ray.remote by the checks)."""

    def __init__(self, env_var: str | None, resource: str, manager_ref: str | None) -> None:
        self.args = (env_var, resource, manager_ref)

    def state(self) -> dict[str, Any]:
        return visible_state(*self.args)
