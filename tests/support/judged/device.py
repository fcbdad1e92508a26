"""The device area's judged checks: evidence each judge passes and evidence it fails.

PASSING: check id -> evidence its judge passes under the shipped params and judged.MANIFEST
(the hand-made reports of the signing tests carry it). FAILING: check id -> records its judge
must not pass (each a way the check's evidence shows a failure). tests/unit/test_judges.py
holds every judge to both tables.

The contract evidence is built the way the contract probe describes what a manager returned
(conformance.run.probe_calls.describe), for the manifest's NPU: resource NPU, type NPU-X1, 4
devices per node, 2 nodes, quantities 0.5, 1, 2 valid and 1.5 invalid.
"""
from __future__ import annotations

import copy
from typing import Any

from conformance.areas.device.contract_probe import ROUND_TRIPS

ENV_VAR = "NPU_VISIBLE_DEVICES"
REFUSAL = "NPU quantity 1.5 is invalid: requests above 1 must be whole numbers of devices"


def desc(value: Any) -> dict[str, Any]:
    """What the probe records of a return value."""
    if isinstance(value, (list, tuple)):
        return {"type": type(value).__name__, "items": [desc(v) for v in value], "repr": repr(value)}
    if isinstance(value, dict):
        return {"type": "dict", "items": {str(k): {"key_type": type(k).__name__, "type": type(v).__name__,
                                                   "repr": repr(v)} for k, v in value.items()}, "repr": repr(value)}
    return {"type": type(value).__name__, "repr": repr(value), "value": value}


def ok(value: Any) -> dict[str, Any]:
    return {"ok": True, "result": desc(value)}


def raised(error: str) -> dict[str, Any]:
    return {"ok": False, "error": error}


METHODS = {"get_resource_name": ok("NPU"), "get_visible_accelerator_ids_env_var": ok(ENV_VAR),
           "get_current_node_num_accelerators": ok(4), "get_current_node_accelerator_type": ok("NPU-X1"),
           "get_current_node_additional_resources": ok(None)}
VALIDATE = {"0.5": ok((True, None)), "1.0": ok((True, None)), "1.5": ok((False, REFUSAL)), "2.0": ok((True, None))}
TRIPS = [{"ids": list(ids), "set": ok(None), "changed_vars": [ENV_VAR], "env_value": ",".join(ids),
          "get": ok(list(ids))} for ids in ROUND_TRIPS]


def probe(**parts: Any) -> dict[str, Any]:
    """A contract probe slice: the manager, its variable, the basic methods, and `parts`."""
    return {"manager": "ray_npu.manager:NPUManager", "env_var": ENV_VAR, "methods": copy.deepcopy(METHODS),
            **copy.deepcopy(parts)}


def observed(value: Any, *, records: list[dict[str, str]] | None = None, seconds: float = 0.002) -> dict[str, Any]:
    """One observed call of a host probe (host_detection.observe)."""
    return {"ok": True, "value": value, "type": type(value).__name__, "seconds": seconds, "records": records or []}


def failed(error: str, seconds: float = 0.002) -> dict[str, Any]:
    return {"ok": False, "error": error, "seconds": seconds, "records": []}


WARNING = {"level": "WARNING", "logger": "ray_npu", "message": "NPU library failed; reporting no devices"}


def detection(count: Any = 0, typ: Any = None, extra: Any = None,
              records: list[dict[str, str]] | None = None) -> dict[str, Any]:
    return {"get_current_node_num_accelerators": observed(count, records=records),
            "get_current_node_accelerator_type": observed(typ), "get_current_node_additional_resources": observed(extra)}


def state(env_value: str | None, assigned: list[str], **extra: Any) -> dict[str, Any]:
    return {"env_set": env_value is not None, "env_value": env_value, "assigned": assigned, **extra}


def with_(record: dict[str, Any], path: str, value: Any) -> dict[str, Any]:
    """`record` with the value at `path` ("a/b/0": keys and list indexes) replaced."""
    out = copy.deepcopy(record)
    keys = path.split("/")
    target: Any = out
    for k in keys[:-1]:
        target = target[int(k)] if isinstance(target, list) else target[k]
    last = keys[-1]
    if isinstance(target, list):
        target[int(last)] = value
    else:
        target[last] = value
    return out


def without(record: dict[str, Any], path: str) -> dict[str, Any]:
    out = copy.deepcopy(record)
    keys = path.split("/")
    target: Any = out
    for k in keys[:-1]:
        target = target[k]
    del target[keys[-1]]
    return out


NODES = ("a1b2c3d4", "e5f6a7b8")

PASSING: dict[str, dict[str, Any]] = {
    # contract: the probe slice each judge reads
    "DP-001": {"probe": probe(validate=VALIDATE)},
    "DP-002": {"probe": probe()},
    "DP-003": {"probe": probe(round_trips=TRIPS)},
    "DP-004": {"probe": probe(unset_get=ok(None))},
    "DP-005": {"probe": probe(round_trips=TRIPS)},
    "DP-016": {"probe": probe(round_trips=TRIPS)},
    # live
    "DP-006": {"device_counts": {n: 4.0 for n in NODES}, "resource": "NPU"},
    "DP-007": {"probe": probe(), "node_types": {n: {"accelerator_type:NPU-X1": 1.0} for n in NODES}, "resource": "NPU"},
    "DP-008": {"tasks_run": 3, "tasks": [state("2", ["2"]), state("0", ["0"]), state("3", ["3"])], "resource": "NPU"},
    "DP-009": {"devices_by_node": {n: 4.0 for n in NODES},
               "ids_by_node": {n: [state(str(i), [str(i)]) for i in (2, 0, 3, 1)] for n in NODES}, "resource": "NPU"},
    "DP-010": {"calls_made": 6, "calls": [state("1", ["1"], manager_view=["1"]) for _ in range(6)], "resource": "NPU"},
    "DP-011": {"requested": 2, "task": state("0,3", ["0", "3"]), "resource": "NPU"},
    "DP-012": {"rounds_run": 3, "rounds": [state(None, []) for _ in range(3)], "resource": "NPU"},
    "DP-013": {"probe": probe(validate=VALIDATE), "ran": {"0.5": {"assigned": ["1"]}, "1.0": {"assigned": ["0"]},
                                                          "2.0": {"assigned": ["0", "2"]}}, "resource": "NPU"},
    "DP-014": {"probe": probe(validate=VALIDATE), "resource": "NPU",
               "submissions": {"1.5": {"refused": True, "error": f"ValueError: {REFUSAL}"}}},
    "DP-015": {"advertised": 2.0, "preset": ["1", "2"], "task": state("1,2", ["0", "1"]), "resource": "NPU"},
    # other hosts
    "DP-017": {"probe": detection(), "resource": "NPU", "start": {"ok": True, "errors": []},
               "node": {"id": "c9d8e7f6", "advertises": 0, "accelerator_types": []},
               "worker": {"probe": detection()}},
    "DP-018": {"faults": ["library_error", "unknown_device"],
               "probes": {"library_error": detection(records=[WARNING]),
                          "unknown_device": detection(count=4, records=[WARNING])}},
    "DP-019": {"request": 2.0, "env_var": ENV_VAR, "visible": ["0"],
               "result": failed("ValueError: Attempting to start raylet with 2.0 NPU, but NPU_VISIBLE_DEVICES "
                                "contains ['0']")},
    "DP-020": {"env_var": ENV_VAR, "noset_var": "RAY_EXPERIMENTAL_NOSET_NPU_VISIBLE_DEVICES", "preset": "0",
               "ids": ["1"], "result": {"with_noset": {**observed(None), "after": "0"},
                                        "without_noset": {**observed(None), "after": "1"}}},
}

P = PASSING
FAILING: dict[str, list[dict[str, Any]]] = {
    "DP-001": [with_(P["DP-001"], "probe/methods/get_current_node_num_accelerators", ok(4.0)),   # a float count
               with_(P["DP-001"], "probe/methods/get_resource_name", raised("RuntimeError: no driver")),
               without(P["DP-001"], "probe/validate/1.5"),                    # a declared quantity never validated
               with_(P["DP-001"], "probe/validate/1.0", ok([True])),          # not a pair
               with_(P["DP-001"], "probe/methods/get_current_node_num_accelerators/result/value", "4"),  # forged
               without(P["DP-001"], "probe/methods/get_current_node_accelerator_type")],
    "DP-002": [with_(P["DP-002"], "probe/methods/get_resource_name", ok("SIM ACC")),        # not a valid name
               with_(P["DP-002"], "probe/methods/get_resource_name", ok("CPU")),            # reserved
               with_(P["DP-002"], "probe/methods/get_resource_name", ok("GPU"))],           # not the manifest's
    "DP-003": [with_(P["DP-003"], "probe/round_trips/1/get", ok([1, 3])),        # ints
               with_(P["DP-003"], "probe/round_trips/1/get", ok(["1"])),         # lossy
               {"probe": probe(round_trips=TRIPS[:1])},                          # trips the release does not set
               with_(P["DP-003"], "probe/env_var", None)],                       # not applicable, claimed pass
    "DP-004": [with_(P["DP-004"], "probe/unset_get", ok([])),
               with_(P["DP-004"], "probe/unset_get", raised("KeyError: 'NPU_VISIBLE_DEVICES'")),
               with_(P["DP-004"], "probe/env_var", "OTHER_VISIBLE_DEVICES")],   # not the variable it names
    "DP-005": [with_(with_(P["DP-005"], "probe/round_trips/0/env_value", None), "probe/round_trips/0/changed_vars",
                     ["NPU_SELECTED"]),
               with_(P["DP-005"], "probe/round_trips/1/set", raised("OSError: read-only"))],
    "DP-016": [with_(P["DP-016"], "probe/round_trips/1/changed_vars", [ENV_VAR, "NPU_LAST_SELECTION"]),
               with_(P["DP-016"], "probe/round_trips", TRIPS[:2])],
    "DP-006": [with_(P["DP-006"], "device_counts/a1b2c3d4", 3.0),               # off by one
               {"device_counts": {n: 0 for n in NODES}, "resource": "NPU"},     # nothing advertised
               {"device_counts": {NODES[0]: 4.0}, "resource": "NPU"},           # a node dropped
               with_(P["DP-006"], "device_counts/a1b2c3d4", 0.0),               # a node zeroed
               {"device_counts": {**P["DP-006"]["device_counts"], "e5f6a7b8": 0.0}, "resource": "NPU"},  # a third node
               with_(P["DP-006"], "resource", "GPU")],                          # not the manifest's resource
    "DP-007": [with_(P["DP-007"], "probe/methods/get_current_node_accelerator_type", ok("NPU-X2")),
               with_(P["DP-007"], "node_types/a1b2c3d4", {"accelerator_type:NPU-X2": 1.0}),
               with_(P["DP-007"], "node_types", {}),
               {**P["DP-007"], "node_types": {NODES[0]: {"accelerator_type:NPU-X1": 1.0}}},   # a node dropped
               with_(P["DP-007"], "probe/methods/get_current_node_accelerator_type", raised("RuntimeError: x"))],
    "DP-008": [with_(P["DP-008"], "tasks/1", state("1,2", ["1"])),              # an extra id
               with_(P["DP-008"], "tasks/1", state(None, ["1"])),               # no variable
               with_(P["DP-008"], "tasks/2", state("2", ["3"])),                # not Ray's id
               {**P["DP-008"], "tasks_run": 1, "tasks": P["DP-008"]["tasks"][:1]},   # rounds dropped
               {**P["DP-008"], "tasks": P["DP-008"]["tasks"][:1]}],             # count beside fewer tasks
    "DP-009": [with_(P["DP-009"], f"ids_by_node/{NODES[0]}/1", state("2", ["0"])),       # collision, not Ray's
               with_(P["DP-009"], f"ids_by_node/{NODES[0]}", P["DP-009"]["ids_by_node"][NODES[0]][:3]),
               with_(P["DP-009"], f"devices_by_node/{NODES[0]}", 3.0),
               {**P["DP-009"], "devices_by_node": {}, "ids_by_node": {}},
               {**P["DP-009"], "devices_by_node": {NODES[0]: 4.0},                       # a node dropped
                "ids_by_node": {NODES[0]: P["DP-009"]["ids_by_node"][NODES[0]]}},
               {**P["DP-009"], "devices_by_node": {NODES[0]: 4.0, NODES[1]: 0.0},       # a node zeroed
                "ids_by_node": {NODES[0]: P["DP-009"]["ids_by_node"][NODES[0]], NODES[1]: []}}],
    "DP-010": [with_(P["DP-010"], "calls/3", state("2", ["2"], manager_view=["2"])),     # moved
               with_(P["DP-010"], "calls/0", state("1", ["1"], manager_view=["0"])),     # views disagree
               {**P["DP-010"], "calls_made": 2, "calls": P["DP-010"]["calls"][:2]}],
    "DP-011": [with_(P["DP-011"], "task", state("0", ["0", "3"])),
               with_(P["DP-011"], "task", state("0,0", ["0", "0"])),
               {**P["DP-011"], "requested": 1}],
    "DP-012": [with_(P["DP-012"], "rounds/1", state("2", [])),
               {**P["DP-012"], "rounds_run": 1, "rounds": P["DP-012"]["rounds"][:1]}],
    "DP-013": [with_(P["DP-013"], "probe/validate/0.5", ok((False, "fractions are not supported"))),
               with_(P["DP-013"], "ran/0.5", {"error": "GetTimeoutError: pending"}),
               without(P["DP-013"], "ran/2.0"),                                 # a quantity never run
               with_(P["DP-013"], "ran/2.0", {"assigned": ["0"]})],            # 2 units holding one id
    "DP-014": [with_(P["DP-014"], "probe/validate/1.5", ok((True, None))),
               with_(P["DP-014"], "probe/validate/1.5", ok((False, ""))),
               with_(P["DP-014"], "submissions/1.5", {"refused": False}),
               with_(P["DP-014"], "submissions/1.5", {"refused": True, "error": "ValueError: something else"}),
               {**P["DP-014"], "submissions": {}}],
    "DP-015": [{**P["DP-015"], "advertised": 4.0},
               with_(P["DP-015"], "task", state("0,1", ["0", "1"])),
               {**P["DP-015"], "preset": ["1", "2", "3"], "advertised": 3.0},
               without(P["DP-015"], "task")],
    "DP-017": [{"probe": P["DP-017"]["probe"], "resource": "NPU", "start": {"ok": True, "errors": []},   # the live
                "live": "the cluster has no node without devices; only the probe ran"},     # hatch on a local run
               with_(P["DP-017"], "probe/get_current_node_num_accelerators", failed("RuntimeError: no driver")),
               with_(P["DP-017"], "probe/get_current_node_num_accelerators", observed(0, seconds=9.0)),
               with_(P["DP-017"], "probe/get_current_node_num_accelerators",
                     observed(0, records=[{"level": "ERROR", "logger": "ray_npu", "message": "no driver"}])),
               with_(P["DP-017"], "node/advertises", 4.0),
               with_(P["DP-017"], "start", {"ok": False, "error": "ClusterStartError: node died"}),
               with_(P["DP-017"], "worker", {"error": "GetTimeoutError: timed out"}),
               without(P["DP-017"], "node"),
               with_(P["DP-017"], "probe/get_current_node_accelerator_type", observed("NPU-X1"))],
    "DP-018": [with_(P["DP-018"], "probes/library_error/get_current_node_num_accelerators",
                     failed("RuntimeError: library broken")),
               with_(P["DP-018"], "probes/unknown_device/get_current_node_accelerator_type", observed("NPU-X1")),
               with_(P["DP-018"], "probes/unknown_device", detection(count=4)),   # no warning
               {**P["DP-018"], "probes": {"unknown_device": P["DP-018"]["probes"]["unknown_device"]}}],  # one dropped
    "DP-019": [with_(P["DP-019"], "result", observed({"NPU": 2.0, "CPU": 1.0})),
               with_(P["DP-019"], "result", failed("RuntimeError: raylet died")),
               {**P["DP-019"], "visible": ["0", "1"], "request": 3.0},
               {**P["DP-019"], "request": 5.0}],
    "DP-020": [with_(P["DP-020"], "result/with_noset/after", "1"),
               with_(P["DP-020"], "result/without_noset/after", "0"),
               {**P["DP-020"], "noset_var": "RAY_EXPERIMENTAL_NOSET_OTHER"},
               {**P["DP-020"], "preset": "1"}],
}
