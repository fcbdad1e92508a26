"""The performance area's judged checks: evidence each judge passes and evidence it fails.

PASSING: check id -> evidence its judge passes under the shipped params and judged.MANIFEST
(the hand-made reports of the signing tests carry it). FAILING: check id -> records its judge
must not pass (each a way the check's evidence shows a failure). tests/unit/test_judges.py
holds every judge to both tables.
"""
from __future__ import annotations

import copy
import statistics
from typing import Any

from conformance import measure
from conformance.rdt.config import DEFAULT_MAX_BYTES, MATRIX_MAX_BYTES, size_key, sweep_sizes

SWEEP_METHOD = {"warmup": 2, "min_trials": 5, "max_trials": 30, "max_cv": 0.05, "batch_s": 0.05, "max_batch": 16,
                "size_budget_s": 2.0, "baseline_warmup": 1, "baseline_trials": 3}


def _size(trials: list[float], store: list[float], clone: float) -> dict[str, Any]:
    """One size's PF-001 figures, as conformance.areas.performance.figures.sweep_figures writes them."""
    bw = sorted(trials)
    med, store_med, cv = statistics.median(bw), statistics.median(store), measure.median_cv(bw)
    return {"median_gbps": med, "min_gbps": bw[0], "max_gbps": bw[-1], "iqr": [bw[1], bw[-2]], "trials_gbps": bw,
            "cv": cv, "cv_met": cv <= SWEEP_METHOD["max_cv"], "batch": 16, "object_store_median_gbps": store_med,
            "object_store_trials_gbps": sorted(store), "clone_median_gbps": clone,
            "clone_trials_gbps": [clone * x for x in (0.97, 0.99, 1.0, 1.02, 1.03)], "ratio_to_object_store": med / store_med,
            "ratio_to_clone": med / clone}


CAP_4KIB = {"env": "RAY_CONFORMANCE_TRANSPORT_MAX_BYTES", "value": "4KiB", "bytes": 4096}   # a run's size knob


def _sweep(top: int) -> dict[str, Any]:
    """PF-001's record of a sweep up to `top` bytes (each size a little faster than the one before)."""
    sizes = sweep_sizes(top)
    keys = [size_key(n) for n in sizes]
    return {"max_bytes": top, "sizes_bytes": sizes, "unverified": 0, "verification": {k: "ok" for k in keys},
            "small_message_latency_s": 0.002, "method": {**SWEEP_METHOD, "device": "cpu"}, "cv_met_all_sizes": True,
            "bandwidth": {k: _size([g * x for x in (0.99, 1.0, 1.01, 1.0, 1.02)], [g * x for x in (0.8, 0.81, 0.82)], 4 * g)
                          for k, g in zip(keys, (0.5 * (1 + i) for i in range(len(keys))))},
            "seconds_per_size": {k: {"prepare_and_verify": 0.1, "rdt": 0.3, "object_store": 0.1, "clone": 0.1} for k in keys}}


PF001: dict[str, Any] = _sweep(DEFAULT_MAX_BYTES)              # a certification run: the release's sizes
PF001_CAPPED: dict[str, Any] = {**_sweep(4096), "size_cap": CAP_4KIB}   # a run capped by the knob, which it records


def _pf001(**changes: Any) -> dict[str, Any]:
    out = copy.deepcopy(PF001)
    for path, value in changes.items():
        *parents, leaf = path.split("__")
        node = out
        for key in parents:
            node = node[key]
        node[leaf] = value
    return out

def _matrix(endpoints: list[str], same: float = 4.0, cross: float = 2.0) -> dict[str, Any]:
    """PF-004's record over `endpoints` (labels n<node>:<device>): every pair measured, its links
    the class medians and minima of the matrix, as conformance.areas.performance.figures writes them."""
    n = len(endpoints)
    node = [x.split(":")[0] for x in endpoints]
    gbps: list[list[float | None]] = [[None if i == j else (same if node[i] == node[j] else cross) * (1 + 0.01 * ((i + j) % 3))
                                       for j in range(n)] for i in range(n)]
    classes: dict[str, list[float]] = {}
    for i in range(n):
        for j in range(n):
            value = gbps[i][j]
            if value is not None:
                classes.setdefault("same_node" if node[i] == node[j] else "cross_node", []).append(value)
    links = {c: {"median_gbps": statistics.median(v), "min_gbps": min(v)} for c, v in classes.items()}
    return {"wrong_pairs": 0, "bytes": MATRIX_MAX_BYTES, "endpoints": endpoints, "matrix_gbps": gbps, "links": links}


# the judged manifest's cluster: 2 nodes of 4 devices, max_endpoints 8, round-robin over the nodes
PF004 = _matrix([f"n{k % 2}:{k // 2}" for k in range(8)])
# PF-002 and PF-003 judge copies of the sweep's top size, as the run records them (verify holds
# the copies to PF-001's: conformance/signing/same_measurement.py)
TOP = PF001["bandwidth"][size_key(DEFAULT_MAX_BYTES)]
TRIALS = list(TOP["trials_gbps"])
STORE = list(TOP["object_store_trials_gbps"])

PASSING: dict[str, dict[str, Any]] = {
    "PF-001": PF001,
    # the judged manifest's transport declares no link and moves host memory: a reference measured in the run
    "PF-002": {"largest_size_gbps": TOP["median_gbps"], "reference_gbps": 10.0, "achieved_fraction": TOP["median_gbps"] / 10.0,
               "largest_bytes": DEFAULT_MAX_BYTES, "largest_size_trials_gbps": TRIALS,
               "reference_trials_gbps": [9.0, 10.0, 11.0]},
    "PF-003": {"rdt_gbps": TOP["median_gbps"], "object_store_gbps": TOP["object_store_median_gbps"],
               "ratio_to_object_store": TOP["median_gbps"] / TOP["object_store_median_gbps"], "bytes": DEFAULT_MAX_BYTES,
               "rdt_trials_gbps": TRIALS, "object_store_trials_gbps": STORE},
    "PF-004": PF004,
}


def _drop(base: dict[str, Any], *keys: str, **changes: Any) -> dict[str, Any]:
    out = {k: v for k, v in copy.deepcopy(base).items() if k not in keys}
    out.update(changes)
    return out


def _drop_size_key(size: str, key: str) -> dict[str, Any]:
    """PF001 without one figure of one size."""
    out = copy.deepcopy(PF001)
    del out["bandwidth"][size][key]
    return out


FAILING: dict[str, list[dict[str, Any]]] = {
    "PF-001": [_pf001(unverified=1, verification={"1KiB": "ok", "4KiB": "sha256 differs"}),   # a size arrived wrong
               _pf001(verification={"1KiB": "ok", "4KiB": "sha256 differs"}),                # ... and unverified says 0
               _pf001(max_bytes=1 << 20),                                                   # sizes the sweep does not make
               _pf001(method={**SWEEP_METHOD, "min_trials": 2, "device": "cpu"}),            # another method
               _pf001(method={**SWEEP_METHOD, "device": "npu"}),                             # a type the manifest does not give
               _pf001(bandwidth__4KiB__median_gbps=9.0),                                     # a median its trials do not give
               _pf001(bandwidth__4KiB__trials_gbps=[2.0, 2.0]),                              # fewer trials than min_trials
               _pf001(bandwidth__4KiB__cv_met=False),                                        # cv_met its cv does not give
               _pf001(bandwidth__4KiB__clone_median_gbps=0.4 * PF001["bandwidth"]["4KiB"]["clone_median_gbps"],
                      bandwidth__4KiB__ratio_to_clone=2.5 * PF001["bandwidth"]["4KiB"]["ratio_to_clone"]),  # N31_08
               _drop_size_key("4KiB", "clone_trials_gbps"),                                   # a host copy without trials
               _pf001(bandwidth__4KiB__clone_trials_gbps=[2.0, 2.0, 2.0]),                    # a host copy of 3, not min_trials
               _drop_size_key("4KiB", "object_store_trials_gbps"),                            # a store median without trials
               _drop(PF001_CAPPED, "size_cap"),                                             # a top below the release's
               _drop(PF001_CAPPED, size_cap={**CAP_4KIB, "value": "16KiB"})],               # a knob that does not add up
    "PF-002": [_drop(PASSING["PF-002"], largest_size_gbps=0.5, largest_size_trials_gbps=[0.4, 0.5, 0.6],
                     achieved_fraction=0.05),
               {"largest_size_gbps": 50.0, "reference_gbps": 10.0, "achieved_fraction": 5.0,    # the median forged up
                "largest_size_trials_gbps": [1.0, 1.1, 1.2]},
               _drop(PASSING["PF-002"], "reference_trials_gbps", reference_gbps=5.0, achieved_fraction=1.0),   # no trials
               _drop(PASSING["PF-002"], "largest_size_trials_gbps"),                        # the median on its word
               _drop(PASSING["PF-002"], "largest_bytes"),                                   # at no size
               _drop(PASSING["PF-002"], largest_bytes=1024),                                # below the sweep's top
               _drop(PASSING["PF-002"], largest_bytes=4096, size_cap={**CAP_4KIB, "bytes": 1024})],   # a knob not adding up
    "PF-003": [{"rdt_gbps": 1.0, "object_store_gbps": 2.0, "ratio_to_object_store": 0.5},
               {"rdt_gbps": 4.0, "object_store_gbps": 0.02, "ratio_to_object_store": 200.0,   # the baseline forged down
                "rdt_trials_gbps": [4.0, 4.0, 4.0], "object_store_trials_gbps": [2.0, 2.0, 2.0]},
               _drop(PASSING["PF-003"], "object_store_trials_gbps", object_store_gbps=0.02, ratio_to_object_store=200.0),
               _drop(PASSING["PF-003"], bytes=3000)],                                        # not a size of the sweep
    "PF-004": [{"wrong_pairs": 0, "links": {"same_node": {"median_gbps": 2.25, "min_gbps": 0.5}},
               "endpoints": ["n0:0", "n0:1"], "matrix_gbps": [[None, 4.0], [0.5, None]]},
               {"wrong_pairs": 0, "links": {"same_node": {"median_gbps": 4.0, "min_gbps": 4.0}},   # a slow pair left out
                "endpoints": ["n0:0", "n0:1", "n1:0"], "matrix_gbps": [[None, 4.0, None], [4.0, None, None], [None, None, None]]},
               {"wrong_pairs": 0, "links": {"same_node": {"median_gbps": 4.0, "min_gbps": 3.0}},   # one node of two
                "endpoints": ["n0:0", "n0:1"], "matrix_gbps": [[None, 5.0], [3.0, None]]},
               _matrix(["n0:0", "n1:0", "n0:1"]),                                           # fewer endpoints than the cluster's
               _matrix([f"n0:{k}" for k in range(8)]),                                      # every endpoint on one node
               _drop(PF004, bytes=1024),                                                    # a smaller message than the run's
               _drop(PF004, bytes=4096)],                                                   # capped, no knob recorded
}
