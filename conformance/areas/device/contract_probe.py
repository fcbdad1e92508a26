"""Exercise an AcceleratorManager's contract in a fresh process with no Ray cluster.

Run as `python -m conformance.areas.device.contract_probe CONFIG_JSON`; prints one JSON object with what each
static method returned (or raised) and what the visible-ids round trips did to the environment.
A subprocess keeps the suite's own process clean: the manager mutates os.environ, may hang or
crash, and Ray snapshots environment variables at import.
"""
from __future__ import annotations

import json
import os
import sys
from typing import TYPE_CHECKING, Any, Callable

from conformance.run.probe_calls import CALLING, call

if TYPE_CHECKING:
    from ray._private.accelerators.accelerator import AcceleratorManager

MARKER = "CONTRACT_PROBE_RESULT "
ROUND_TRIPS: list[list[str]] = [["0"], ["1", "3"], []]


def traced(manager: type[AcceleratorManager]) -> type[AcceleratorManager]:
    """The manager with a CALLING line before each of its methods runs, whoever calls it (the
    host probes' own code, or Ray's resource resolution): a probe killed for hanging names the
    method. Behaviour and names are the manager's."""
    def wrap(name: str, fn: Callable[..., Any]) -> Any:
        def announced(*args: Any, **kwargs: Any) -> Any:
            print(CALLING + name, file=sys.stderr, flush=True)
            return fn(*args, **kwargs)
        return staticmethod(announced)

    methods = {n: wrap(n, getattr(manager, n)) for n in dir(manager)
               if not n.startswith("_") and callable(getattr(manager, n, None))}
    return type(manager.__name__, (manager,), {**methods, "__module__": manager.__module__,
                                                "__qualname__": manager.__qualname__})


def probe(manager: type[AcceleratorManager], quantities: list[float]) -> dict[str, Any]:
    out: dict[str, Any] = {"manager": f"{manager.__module__}:{manager.__qualname__}", "methods": {}}
    m = out["methods"]
    for name in ("get_resource_name", "get_visible_accelerator_ids_env_var", "get_current_node_num_accelerators",
                 "get_current_node_accelerator_type", "get_current_node_additional_resources"):
        m[name] = call(getattr(manager, name))
    out["validate"] = {repr(float(q)): call(manager.validate_resource_request_quantity, q) for q in quantities}
    labels = getattr(manager, "get_current_node_accelerator_labels", None)
    if labels is not None:
        m["get_current_node_accelerator_labels"] = call(labels)

    env_var = None
    try:
        env_var = manager.get_visible_accelerator_ids_env_var()
    except BaseException:  # noqa: BLE001 - already reported above
        pass
    out["env_var"] = env_var if isinstance(env_var, str) else None
    if not isinstance(env_var, str):
        return out
    os.environ.pop(env_var, None)
    out["unset_get"] = call(manager.get_current_process_visible_accelerator_ids)
    trips = []
    for ids in ROUND_TRIPS:
        before = dict(os.environ)
        set_result = call(manager.set_current_process_visible_accelerator_ids, list(ids))
        after = dict(os.environ)
        changed = sorted(k for k in set(before) | set(after) if before.get(k) != after.get(k))
        trips.append({"ids": ids, "set": set_result, "changed_vars": changed,
                      "env_value": after.get(env_var),
                      "get": call(manager.get_current_process_visible_accelerator_ids)})
        os.environ.pop(env_var, None)
    out["round_trips"] = trips
    return out


def main(argv: list[str]) -> int:
    config = json.loads(argv[1])
    for p in reversed(config.get("python_path", [])):
        sys.path.insert(0, p)
    try:
        from conformance.imports import import_ref
        try:    # Ray's own import is the suite's time, not the plugin's: done before the import's bound starts
            import ray._private.accelerators.accelerator  # noqa: F401
        except ImportError:
            pass
        print(CALLING + "import " + config["manager"].partition(":")[0], file=sys.stderr, flush=True)
        obj = import_ref(config["manager"])
    except BaseException as exc:  # noqa: BLE001
        print(MARKER + json.dumps({"import_error": f"{exc.__class__.__name__}: {exc}"}))
        return 0
    mode = config.get("mode", "contract")
    if mode == "contract":
        result = probe(obj, config.get("quantities", [1]))
    else:  # detection on other hosts and the node-start rules (conformance.areas.device.host_detection)
        from conformance.areas.device import host_detection as hosts
        obj = traced(obj)
        if mode == "detect":
            result = hosts.detect(obj)
        elif mode == "overcommit":
            result = hosts.overcommit(obj, config["env_var"], config["visible"], config["request"])
        else:
            result = hosts.noset(obj, config["env_var"], config["noset_var"], config["preset"], config["ids"])
    print(MARKER + json.dumps(result, default=repr))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
