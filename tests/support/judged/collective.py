"""The collective area's judged checks: evidence each judge passes and evidence it fails.

PASSING: check id -> evidence its judge passes under the shipped params and judged.MANIFEST
(the hand-made reports of the signing tests carry it). FAILING: check id -> records its judge
must not pass (each a way the check's evidence shows a failure). tests/unit/test_judges.py
holds every judge to both tables.
"""
from __future__ import annotations

import copy
from typing import Any

from conformance.areas.collective.judges import HOOK_ELEMENTS, HOOK_MEMBERS
from conformance.collective import programs
from conformance.collective.config import ALL_OPS, POOL_SIZE


def group(steps: list[dict[str, Any]], ws: int, **override: Any) -> dict[str, Any]:
    """A group's record whose every rank held what the program gives."""
    return {"steps": len(steps), "world_size": ws, "problems": 0, "digests": programs.wanted_digests(steps, ws),
            **override}


def ops_at(ws: int) -> dict[str, Any]:
    """CC-004's record at world size `ws` under the shipped params and judged.MANIFEST (float32,
    every op, cpu)."""
    steps = programs.op_matrix(ws, ["float32"], ["torch", "numpy"], ALL_OPS, 4, seed0=100 * ws, barriers=3)
    return {**group(steps, ws), "nodes": 2, "accelerator_ids": [{}] * ws}


def cc010_row(mib: int, busbw: float, **extra: Any) -> dict[str, Any]:
    """A CC-010 row (conformance.areas.collective.busbw.point_figures) whose busbw is its trials' median."""
    return {"op": "allreduce", "bytes": mib * 2**20, "busbw_gbps": busbw, "host_copy_gbps": 10.0,
            "busbw_trials_gbps": [busbw - 0.1, busbw, busbw + 0.1], **extra}


RANKS = [(i + 1) % POOL_SIZE for i in range(POOL_SIZE)]


def path(k: int, name: str) -> dict[str, Any]:
    views = [[[True, r, POOL_SIZE] for r in RANKS]] * (1 if name == "declarative" else 2)
    return {**group(programs.small_program(POOL_SIZE, 300 + 10 * k), POOL_SIZE), "ranks": RANKS, "views": views}


def layouts(groups: int = 4, rounds: int = 2) -> list[dict[str, Any]]:
    return [{"rounds": [group(programs.small_program(len(ranks), 1000 * r + 10 * g), len(ranks)) for r in range(rounds)],
             "members": idx, "ranks": ranks}
            for g, (idx, ranks) in enumerate(programs.isolation_layouts(groups, POOL_SIZE))]


HOOK_STEPS = programs.op_matrix(HOOK_MEMBERS, ["float32"], ["torch"], ["allreduce"], HOOK_ELEMENTS)
CONTRACT = {"builtin": True, "base_group": True, "abstract": [], "constructor": None,
            "ops": {op: None for op in ("allreduce", "barrier", "reduce", "allgather", "broadcast", "reducescatter",
                                        "send", "recv")},
            "ops_read": 8, "availability_classmethod": True}
CC003: dict[str, Any] = {"pool_size": POOL_SIZE, "driver_available": True, "members": [{"registered": True, "available": True}] * POOL_SIZE,
         "hook_job": {"infos": [{"registered": True}] * HOOK_MEMBERS, "again": [None] * HOOK_MEMBERS, "problems": [],
                      "digests": programs.wanted_digests(HOOK_STEPS, HOOK_MEMBERS)}}
RDT = {"transfers": 3, "devices": ["cpu"], "one_sided": False, "driver_get": "refused",
       "objects": {"one tensor": {"tensors": 1, "arrived": 1, "wrong": 0},
                   "a tensor per dtype": {"tensors": 1, "arrived": 1, "wrong": 0},
                   "through the object store": {"tensors": 1, "arrived": 1, "wrong": 0}}}


def edit(record: dict[str, Any], path_: str, value: Any) -> dict[str, Any]:
    """A deep copy of `record` with the value at the dotted `path_` replaced (list indexes as numbers)."""
    out = copy.deepcopy(record)
    keys = path_.split(".")
    node: Any = out
    for k in keys[:-1]:
        node = node[int(k)] if isinstance(node, list) else node[k]
    last = keys[-1]
    if isinstance(node, list):
        node[int(last)] = value
    else:
        node[last] = value
    return out


CC004 = {"world_sizes": [2, 3], "world_size_2": ops_at(2), "world_size_3": ops_at(3)}
CC005 = {"order": group(programs.interleaved(POOL_SIZE, 3), POOL_SIZE), "steps": 0}
CC006 = {"paths": {name: path(k, name) for k, name in enumerate(("init", "declarative", "experimental"))}}
CC007 = {"layouts": layouts(), "groups": 4}
CC012 = {"devices": ["cpu"], "error_bound_s": 15.0, "outcome": "error", "error_s": 0.4,
         "error": "ValueError: the actor is in no group of GLOO"}

PASSING: dict[str, dict[str, Any]] = {
    "CC-001": {"contract": CONTRACT, "class": "ray.util.collective.collective_group.gloo_collective_group.GLOOGroup"},
    # judged.MANIFEST declares the library_error and without_device hosts (DP-017/018): a backend
    # that requires its device answers False there
    "CC-002": {"hosts": 3, "answers": {"manifest host": {"value": True, "bool": True},
                                       "library_error": {"value": False, "bool": True},
                                       "without_device": {"value": False, "bool": True}}},
    "CC-003": CC003,
    "CC-004": CC004,
    "CC-005": CC005,
    "CC-006": CC006,
    "CC-007": CC007,
    "CC-011": RDT,
    "CC-012": CC012,
    "CC-008": {"memory": {"held_mib": [[100.0, 101.0], [110.0, 111.0], [112.0, 111.5], [115.0, 112.0]],
                          "growth_mib": [5.0, 1.0], "payload_mib": 40.0, "cycles": 4}},
    "CC-009": (CC009 := {"error_s": {"0": 1.5, "1": 1.6}, "survivors": 2, "outcomes": {"0": "error", "1": "error"}}),
    "CC-010": (CC010 := {"busbw_gbps": 2.0, "host_copy_gbps": 10.0, "host_fraction": 0.2, "nominal_link_gbps": 4.0,
                         "link_fraction": 0.5, "star_op": "allreduce", "star_op_busbw_gbps": 2.0, "star_busbw_gbps": 2.5,
                         "star_fraction": 0.8, "star_bytes": 16 * 2**20, "weakest_op": "allreduce", "peak_bytes": 16 * 2**20,
                         "rows": [cc010_row(n, 2.0 if n == 16 else 1.0, **({"star_busbw_gbps": 2.5} if n == 16 else {}))
                                  for n in (1, 4, 16)],
                         "star_rows": [{**cc010_row(16, 2.5), "trials": 3}],
                         "star_by_op": {"allreduce": {"bytes": 16 * 2**20, "star_fraction": 0.8,
                                                      "busbw_trials_gbps": [1.9, 2.0, 2.1],
                                                      "star_trials_gbps": [2.4, 2.5, 2.6]}}}),
}

FAILING: dict[str, list[dict[str, Any]]] = {
    "CC-001": [edit(PASSING_CC001 := {"contract": CONTRACT}, "contract.constructor", "missing a required argument: 'x'"),
               edit(PASSING_CC001, "contract.ops_read", 2),
               edit(PASSING_CC001, "contract.ops.recv", "too many positional arguments"),
               edit(PASSING_CC001, "contract.ops", {"allreduce": None}),          # ops never read
               edit(PASSING_CC001, "contract.builtin", False),                    # not the manifest's class
               edit(PASSING_CC001, "contract.availability_classmethod", False)],
    "CC-002": [{"hosts": 1, "answers": {"manifest host": {"value": False, "bool": True}}},
               {"hosts": 1, "answers": {"manifest host": {"raised": "RuntimeError: no driver"}}},
               {"hosts": 0, "answers": {}}],                                     # the manifest's host not asked
    "CC-003": [edit(CC003, "driver_available", False), edit(CC003, "members.1", {"registered": True, "available": False}),
               edit(CC003, "members", CC003["members"][:1]),                      # members dropped
               edit(CC003, "hook_job", {"error": "the second job did not finish within 140s"}),
               edit(CC003, "hook_job.again", ["ValueError: already registered", None]),
               edit(CC003, "hook_job.digests", ["0" * 16, "0" * 16])],
    "CC-004": [edit(CC004, "world_size_3.problems", 2), edit(CC004, "world_sizes", [2]),
               edit(CC004, "world_size_3.digests.1", "0" * 16),                  # a rank held other values
               edit(CC004, "world_size_2.steps", 10),                            # a smaller matrix than the release's
               {"world_sizes": [2, 3], "world_size_2": ops_at(2)},                # a world size dropped
               edit(CC004, "world_size_3.nodes", 1),                             # not across nodes
               edit(CC004, "world_size_2.digests", None)],                       # no results came back
    "CC-005": [edit(CC005, "order.digests.2", "0" * 16), edit(CC005, "order.problems", 1),
               {"order": group(programs.interleaved(POOL_SIZE, 1), POOL_SIZE)}],  # fewer rounds than the release's
    "CC-006": [edit(CC006, "paths.init.views.1.0", [True, 0, 4]),                # a wrong size
               edit(CC006, "paths.declarative.digests.0", "0" * 16),
               edit(CC006, "paths.experimental", {"ranks": RANKS, "error": "hang"}),
               {"paths": {k: v for k, v in CC006["paths"].items() if k != "experimental"}},
               edit(CC006, "paths.init.ranks", [0, 1, 2])],                      # the identity order
    "CC-007": [edit(CC007, "layouts.1.rounds.1.digests.0", "0" * 16), {"layouts": layouts(groups=2), "groups": 2},
               {"layouts": layouts(rounds=1), "groups": 4}, edit(CC007, "layouts.2.rounds.0.problems", 3)],
    "CC-011": [edit(RDT, "objects.a tensor per dtype.wrong", 1), edit(RDT, "one_sided", True),
               edit(RDT, "driver_get", "returned"), edit(RDT, "objects.one tensor.arrived", 0),
               edit(RDT, "devices", ["simacc"]), edit(RDT, "error", "TimeoutError: a hang")],
    "CC-012": [edit(CC012, "outcome", "hang"), edit(CC012, "outcome", "delivered"), edit(CC012, "error_s", 59.0),
               edit(CC012, "error_bound_s", 60.0)],                              # a bound not the release's
    "CC-008": [{"memory": {"held_mib": [[100.0, 101.0], [110.0, 111.0], [112.0, 111.5], [410.0, 112.0]],
                          "growth_mib": [300.0, 1.0], "payload_mib": 40.0, "cycles": 4}}],
    "CC-009": [edit(CC009, "error_s", {"0": 1.5, "1": 300.0}),
               edit(CC009, "error_s", {"0": 1.5}),                       # a survivor's time dropped
               edit(edit(CC009, "error_s", {"0": 1.5}), "survivors", 1),  # ... and the count lowered
               edit(CC009, "error_s", {"0": 1.5, "5": 1.6}),              # not the survivors' ranks
               edit(CC009, "outcomes", {"0": "error", "1": "returned as if the op had succeeded"}),  # no error, in time
               edit(CC009, "outcomes", {"0": "error"}),                   # a survivor's end dropped
               edit(CC009, "outcomes", {"0": "error", "1": "error", "2": "error"}),   # the killed member counted
               {k: v for k, v in CC009.items() if k != "outcomes"}],     # the outcomes dropped whole
    "CC-010": [{"busbw_gbps": 0.01, "host_copy_gbps": 10.0, "host_fraction": 0.001, "nominal_link_gbps": None,
               "star_op": "allreduce", "star_op_busbw_gbps": 0.01, "star_busbw_gbps": 0.02, "star_fraction": 0.5,
               "link_fraction": None, "star_bytes": 16 * 2**20, "weakest_op": "allreduce",
               "rows": [cc010_row(16, 0.01)], "star_rows": [cc010_row(16, 0.02)],
               "star_by_op": {"allreduce": {"busbw_trials_gbps": cc010_row(16, 0.01)["busbw_trials_gbps"],
                                            "star_trials_gbps": cc010_row(16, 0.02)["busbw_trials_gbps"]}}},
               # the summaries not what the rows give (held-out C01, C02, C10)
               edit(CC010, "rows.0.busbw_trials_gbps", [2.9, 3.0, 3.1]),                 # busbw_gbps not the peak
               edit(CC010, "star_busbw_gbps", 1.0),                                      # not the star's median
               edit(CC010, "host_copy_gbps", 5.0),                                       # not the rows' host copy
               # the star met where its fixed costs flatter the backend: at 1 MiB, not the release's 16
               edit(CC010, "star_bytes", 2**20),
               # the compared figure is not the op's own row at that size
               edit(CC010, "rows.2.busbw_gbps", 1.0),
               # no row at the compared size
               edit(CC010, "rows", CC010["rows"][:2])],
}
