"""Runs inside a Ray task pinned to one node: what the plugin says *on that node*.

Lives in an importable module so workers import it by reference. It reports, never judges:
every plugin call is wrapped and its exception becomes a one-line string for the driver.
The driver schedules it holding every device of the node, so the ids Ray hands it are all of
the node's ids (as Ray assigns them) and the visible-devices variable lists them all.
"""
from __future__ import annotations

import os
from typing import Any, Callable

from conformance.imports import import_ref


def _call(fn: Callable[[], Any]) -> tuple[Any, str | None]:
    try:
        return fn(), None
    except Exception as exc:  # noqa: BLE001 - reported, judged on the driver
        text = str(exc).strip().splitlines()[0] if str(exc).strip() else ""
        return None, f"{exc.__class__.__name__}: {text}"[:300]


def node_facts_probe(resource: str, manager_ref: str, provider_ref: str | None) -> dict[str, Any]:
    import ray

    ctx = ray.get_runtime_context()
    out: dict[str, Any] = {"node_id": ctx.get_node_id(), "pid": os.getpid()}
    ids, err = _call(lambda: [str(i) for i in ctx.get_accelerator_ids().get(resource, [])])
    out["ray_ids"], out["ray_ids_error"] = ids, err
    manager, err = _call(lambda: import_ref(manager_ref))
    if err:
        out["manager_error"] = out["plugin_labels_error"] = f"cannot import {manager_ref}: {err}"
    else:
        out["manager_type"], out["manager_error"] = _call(manager.get_current_node_accelerator_type)
        fn = getattr(manager, "get_current_node_accelerator_labels", None)
        out["plugin_labels"], out["plugin_labels_error"] = _call(fn) if fn else (None, None)
    if provider_ref:
        provider, err = _call(lambda: import_ref(provider_ref))
        out["description"], out["description_error"] = (None, f"cannot import {provider_ref}: {err}") if err \
            else _call(provider)
    return out


def where() -> str:
    """The node a task ran on (placement probes)."""
    import ray
    return ray.get_runtime_context().get_node_id()


class Where:
    """An actor that reports its node (wrapped with ray.remote by the placement probes)."""

    def node(self) -> str:
        return where()
