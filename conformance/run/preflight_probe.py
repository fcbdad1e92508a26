"""Runs inside a Ray worker on one node during the preflight: can this node use the plugin?

Imports the manager, the topology provider and the transport by reference, as the checks'
workers will, and calls each manager method once. It reports, never judges: an import failure
comes back with the worker's own traceback (the traceback is the point: a module importable in
the driver but not in workers fails here, in seconds, instead of as a WorkerCrashedError deep
inside a check).
"""
from __future__ import annotations

import os
import sys
import traceback
from typing import Any

from conformance.imports import import_ref
from conformance.run.probe_calls import call

# Methods called once each, without arguments (side-effect free in Ray's contract).
GETTERS = ("get_resource_name", "get_visible_accelerator_ids_env_var", "get_current_node_num_accelerators",
           "get_current_node_accelerator_type", "get_current_node_additional_resources",
           "get_current_process_visible_accelerator_ids")


def _import(ref: str) -> tuple[Any, dict[str, Any]]:
    try:
        return import_ref(ref), {"ref": ref, "ok": True}
    except BaseException as exc:  # noqa: BLE001 - a failing import is what the preflight reports
        return None, {"ref": ref, "ok": False, "error": f"{exc.__class__.__name__}: {exc}".splitlines()[0][:400],
                      "traceback": traceback.format_exc()[-4000:]}


# Any: the vendor's manager class, imported by reference; the probe calls it to see how it behaves
def _call_setter(manager: Any, env_var: object) -> dict[str, Any]:
    """set_current_process_visible_accelerator_ids with the ids this worker already has; the
    variable is restored afterwards so the worker is left as Ray made it."""
    if not isinstance(env_var, str):
        return {"ok": True, "result": {"type": "NoneType", "repr": "skipped: no visible-devices variable"}}
    saved = os.environ.get(env_var)
    try:
        ids = [i for i in (saved or "").split(",") if i]
        return call(manager.set_current_process_visible_accelerator_ids, ids)
    finally:
        if saved is None:
            os.environ.pop(env_var, None)
        else:
            os.environ[env_var] = saved


def _registered(resource: str, manager: object) -> bool | None:
    """Does Ray in this worker map the resource to the manager (what sets visible devices per task)?"""
    try:
        from ray._private.accelerators import get_accelerator_manager_for_resource
        return get_accelerator_manager_for_resource(resource) is manager
    except Exception:  # noqa: BLE001 - reported through the import/preload findings instead
        return None


MANAGER = "accelerator.manager"   # the ref among the preflight's whose methods are called too


def preflight_probe(refs: dict[str, str], resource: str, quantity: float) -> dict[str, Any]:
    """`refs`: "block.field" -> "pkg.module:Attr", the manager's first (run.preflight.manifest_refs)."""
    import ray

    from conformance.cluster.injection import AUTOINSTALL_MODULE

    out: dict[str, Any] = {"node_id": ray.get_runtime_context().get_node_id(), "pid": os.getpid(),
                           "imports": {}, "calls": {},
                           # A failed preload leaves no module behind (importlib removes it).
                           "preload_ok": AUTOINSTALL_MODULE in sys.modules}
    imported = {}
    for field_name, ref in refs.items():
        imported[field_name], out["imports"][field_name] = _import(ref)
    manager = imported.get(MANAGER)
    if manager is None:
        return out
    out["registered"] = _registered(resource, manager)
    calls = out["calls"]
    for name in GETTERS:
        fn = getattr(manager, name, None)
        calls[name] = call(fn) if fn else {"ok": False, "error": "missing"}
    calls["validate_resource_request_quantity"] = call(manager.validate_resource_request_quantity, quantity)
    labels = getattr(manager, "get_current_node_accelerator_labels", None)
    if labels is not None:
        calls["get_current_node_accelerator_labels"] = call(labels)
    env_var = (calls["get_visible_accelerator_ids_env_var"].get("result") or {}).get("value")
    calls["set_current_process_visible_accelerator_ids"] = _call_setter(manager, env_var)
    return out
