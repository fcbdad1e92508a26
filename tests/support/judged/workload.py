"""The workload area's judged checks: evidence each judge passes and evidence it fails.

PASSING: check id -> evidence its judge passes under the shipped params and judged.MANIFEST
(the hand-made reports of the signing tests carry it). FAILING: check id -> records its judge
must not pass (each a way the check's evidence shows a failure). tests/unit/test_judges.py
holds every judge to both tables.
"""
from __future__ import annotations

import copy
from typing import Any

from conformance.areas.workload import dp, libraries, model, pipeline

MIB = 2 ** 20


def edit(record: dict[str, Any], path: str, value: Any) -> dict[str, Any]:
    """A deep copy of `record` with the value at the dotted `path` replaced (list indexes as numbers)."""
    out = copy.deepcopy(record)
    keys = path.split(".")
    node: Any = out
    for k in keys[:-1]:
        node = node[int(k)] if isinstance(node, list) else node[k]
    if isinstance(node, list):
        node[int(keys[-1])] = value
    else:
        node[keys[-1]] = value
    return out


def flat(labels: list[str], probes: int, grow: int = 0) -> dict[str, list[dict[str, Any]]]:
    """Memory series of `probes` probes per actor, growing `grow` bytes per probe."""
    return {label: [{"held_bytes": 200 * MIB + i * grow, "device_used_bytes": None} for i in range(probes)]
            for label in labels}


def state(total: int, blocks: int, held: tuple[str, ...] = ("bfloat16",)) -> dict[str, Any]:
    """The state figures of the release's layout of `total` bytes in `blocks` blocks, the optional
    dtypes `held` by the device (the others recorded not held, with why)."""
    entries = model.layout(total, blocks, [*model.BASE_DTYPES, *held])
    return {"state_bytes": model.nbytes(entries), "tensors": model.tensor_count(entries),
            "dtypes": sorted({e["dtype"] for e in entries if "dtype" in e}),
            "dtypes_not_held": {d: "not supported on this device" for d in model.OPTIONAL_DTYPES if d not in held}}


SYNC_ACTORS = ["trainer", "receiver 0", "receiver 1"]
SYNC = {"rounds": 6, "receivers": 2, **state(32 * MIB, 8),
        "round_seconds": [0.2] * 6, "wrong_per_round": [0] * 6, "store_round_seconds": [0.3] * 3,
        "median_round_s": 0.2, "memory": flat(SYNC_ACTORS, 7),
        "broadcast_round_seconds": [0.25, 0.25], "broadcast_wrong_per_round": [0, 0]}
WL001 = {"devices": {"cpu": SYNC}}

STAGES = ["stage 0", "stage 1", "stage 2"]
PIPE = {"stages": 3, "in_flight": 8, "waves": 5, "activation_bytes": pipeline.plan_for("cpu", 3, 8, 5, 256 * 1024).activation_bytes,
        "nodes": 2,
        "wave_seconds": [0.5] * 5, "wrong_per_wave": [0] * 5, "median_wave_s": 0.5, "memory": flat(STAGES, 6)}
WL003 = {"devices": {"cpu": PIPE}}

LOST = {"rounds": 5, "kill_round": 2, "receivers": 2, **state(4 * MIB, 4), "round_seconds": [0.2] * 4,
        "kill_round_seconds": 1.5, "restart_seconds": 4.0, "killed_take": "ActorDiedError: the actor died",
        "wrong_per_round": [0] * 5, "median_round_s": 0.2}
WL004 = {"devices": {"cpu": LOST}}


def data_parallel(workers: int = 3) -> dict[str, Any]:
    """WL-002's record of `workers` ranks that ended exactly on the float64 reference."""
    plan = dp.make_plan(workers, 64, 32, 8, "float32", 7, 0.5)
    want, bound = dp.reference(plan)
    final = [float(v) for v in want]
    last = dp.digest(final)[:dp.DIGEST_CHARS]
    digests = [[f"{k:016x}"] * workers for k in range(1, 8)] + [[last] * workers]
    return {"workers": workers, "features": 64, "samples": 32, "steps": 8, "dtype": "float32", "nodes": 2,
            "step_seconds": [0.05] * 8, "allreduce_seconds": [0.01] * 8, "median_step_s": 0.05,
            "digests": digests, "final_params": final, "reference_bound": bound, "step_size": plan.step_size}


WL002 = {"devices": {"cpu": data_parallel()}}


def off_reference() -> dict[str, Any]:
    """Every rank identical, and all of them ended with zeros: far from the reference."""
    out = data_parallel()
    out["final_params"] = [0.0] * 64
    out["digests"][-1] = [dp.digest([0.0] * 64)[:dp.DIGEST_CHARS]] * 3
    return out

NODES = ["a" * 56, "b" * 56]
VIEWS = [{"node_id": NODES[0], "accelerator_ids": {"NPU": ["0"]}, "visible": "0", "torch_device": "cpu",
          "device_manager": "CPUTorchDeviceManager"}]
TRAIN_OBS: dict[str, Any] = {"workers": VIEWS, "static": {"torch_device_table": ["GPU", "HPU", "NPU", "TPU"]}, "error": None}
DATA_OBS: dict[str, Any] = {"workers": VIEWS, "static": {"budgeted": ["cpu", "gpu", "memory", "object_store_memory"]}, "error": None}
SERVE_OBS: dict[str, Any] = {"workers": VIEWS, "static": {}, "error": None}
METRICS_OBS: dict[str, Any] = {"workers": [{"providers": ["NvidiaGpuProvider", "AmdGpuProvider"], "picked": None,
                            "devices_reported": 0}], "static": {}, "error": None}


def library(obs: dict[str, Any], findings: list[str], **extra: Any) -> dict[str, Any]:
    return {"scenario_s": 12.5, "findings": findings, "observed": obs, "resource": "NPU",
            "env_var": "NPU_VISIBLE_DEVICES", "vendor_nodes": NODES, "upstream": [], **extra}


ENV = "NPU_VISIBLE_DEVICES"
WL010 = library(TRAIN_OBS, libraries.train_findings(TRAIN_OBS, "NPU", ENV, NODES, None), torch_device=None)
WL011 = library(DATA_OBS, libraries.data_findings(DATA_OBS, "NPU", ENV, NODES))
WL012 = library(SERVE_OBS, libraries.serve_findings(SERVE_OBS, "NPU", ENV, NODES))
WL013 = library(METRICS_OBS, libraries.metrics_findings(METRICS_OBS, "NPU"))


def library_lies(record: dict[str, Any]) -> list[dict[str, Any]]:
    """A scenario past its bound, findings not the observation's, another resource's."""
    return [edit(record, "scenario_s", 400.0), edit(record, "findings", ["all good"]),
            edit(record, "resource", "GPU"), edit(record, "observed", {"workers": [], "static": {}, "error": None})]


PASSING: dict[str, dict[str, Any]] = {
    "WL-001": WL001, "WL-002": WL002, "WL-003": WL003, "WL-004": WL004,
    "WL-010": WL010, "WL-011": WL011, "WL-012": WL012, "WL-013": WL013,
}

FAILING: dict[str, list[dict[str, Any]]] = {
    "WL-001": [edit(WL001, "devices.cpu.wrong_per_round.3", 2),                        # a stale receiver in round 4
               edit(WL001, "devices.cpu.rounds", 3),                                   # fewer rounds than the release's
               edit(WL001, "devices.cpu.round_seconds", [0.2] * 5),                    # a round's time dropped
               edit(WL001, "devices.cpu.round_seconds.2", 300.0),                      # a round past its bound
               edit(WL001, "devices.cpu.memory", flat(SYNC_ACTORS, 7, grow=MIB)),     # a leak per round
               edit(WL001, "devices.cpu.memory.receiver 1", []),                      # probes dropped
               edit(WL001, "devices.cpu.broadcast_wrong_per_round", [0, 1]),          # a stale broadcast
               edit(WL001, "devices.cpu.broadcast_round_seconds", []),                # broadcast rounds not run
               {"devices": {"simacc": SYNC}},                                         # not the declared device type
               edit(WL001, "devices.cpu.state_bytes", 1024),                          # a tiny state
               edit(WL001, "devices.cpu.tensors", 3),                                 # a state of 3 tensors
               {"devices": {"cpu": {**SYNC, **state(MIB, 8)}}},                       # a whole smaller layout
               {"devices": {"cpu": {**SYNC, **state(32 * MIB, 2)}}},                  # fewer blocks
               edit(WL001, "devices.cpu.dtypes", ["float32"]),                        # dtypes dropped
               edit(WL001, "devices.cpu.dtypes_not_held", {})],                       # left out without why
    "WL-002": [edit(WL002, "devices.cpu.digests.4.1", "f" * 16),                       # replicas drift apart
               edit(WL002, "devices.cpu.final_params.0", 0.5),                        # not what the digests name
               {"devices": {"cpu": off_reference()}},                                 # off the reference
               edit(WL002, "devices.cpu.steps", 4), edit(WL002, "devices.cpu.nodes", 1),
               edit(WL002, "devices.cpu.step_seconds.0", 90.0), {"devices": {}},
               {"devices": {"cpu": data_parallel(2)}},                                # fewer workers than the params
               edit(WL002, "devices.cpu.digests", [[""] * 3] * 8),                    # every digest a prefix of any
               edit(WL002, "devices.cpu.digests.4.0", "09bf")],                       # a short one
    "WL-003": [edit(WL003, "devices.cpu.wrong_per_wave.1", 8), edit(WL003, "devices.cpu.in_flight", 2),
               edit(WL003, "devices.cpu.wave_seconds.4", 61.0 + 5), edit(WL003, "devices.cpu.nodes", 1),
               edit(WL003, "devices.cpu.memory", flat(STAGES, 6, grow=MIB)),
               edit(WL003, "devices.cpu.activation_bytes", 10 * MIB),
               edit(WL003, "devices.cpu.activation_bytes", 1),                        # a tiny activation
               edit(WL003, "devices.cpu.activation_bytes", 261120)],                  # a smaller plan's
    "WL-004": [edit(WL004, "devices.cpu.wrong_per_round.4", 1),                        # the restarted one got old weights
               edit(WL004, "devices.cpu.kill_round_seconds", 120.0),                  # a dead reader blocked the round
               edit(WL004, "devices.cpu.restart_seconds", None),                      # never restarted
               edit(WL004, "devices.cpu.killed_take", ""), edit(WL004, "devices.cpu.kill_round", 4),
               edit(WL004, "devices.cpu.killed_take", "hang: the take never ended"),  # no error the check records
               edit(WL004, "devices.cpu.killed_take", "ValueError: not Ray's"),       # not a Ray error
               edit(WL004, "devices.cpu.restart_seconds", 1e9),                       # never restarted in time
               edit(WL004, "devices.cpu.state_bytes", 1024),                          # a tiny state
               {"devices": {"cpu": {**LOST, **state(MIB, 4)}}}],                      # a smaller layout
    "WL-010": library_lies(WL010), "WL-011": library_lies(WL011),
    "WL-012": library_lies(WL012), "WL-013": library_lies(WL013),
}
