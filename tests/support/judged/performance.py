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

SWEEP_METHOD = {"warmup": 2, "min_trials": 5, "max_trials": 30, "max_cv": 0.05, "batch_s": 0.05, "max_batch": 16,
                "size_budget_s": 2.0, "baseline_warmup": 1, "baseline_trials": 3}


def _size(trials: list[float], store: list[float], clone: float) -> dict[str, Any]:
    """One size's PF-001 figures, as conformance.areas.performance.figures.sweep_figures writes them."""
    bw = sorted(trials)
    med, store_med, cv = statistics.median(bw), statistics.median(store), measure.median_cv(bw)
    return {"median_gbps": med, "min_gbps": bw[0], "max_gbps": bw[-1], "iqr": [bw[1], bw[-2]], "trials_gbps": bw,
            "cv": cv, "cv_met": cv <= SWEEP_METHOD["max_cv"], "batch": 16, "object_store_median_gbps": store_med,
            "object_store_trials_gbps": sorted(store), "clone_median_gbps": clone, "ratio_to_object_store": med / store_med,
            "ratio_to_clone": med / clone}


PF001: dict[str, Any] = {
    "max_bytes": 4096, "sizes_bytes": [1024, 4096], "unverified": 0, "verification": {"1KiB": "ok", "4KiB": "ok"},
    "small_message_latency_s": 0.002, "method": {**SWEEP_METHOD, "device": "cpu"}, "cv_met_all_sizes": True,
    "bandwidth": {"1KiB": _size([0.50, 0.51, 0.52, 0.50, 0.51], [0.4, 0.41, 0.42], 2.0),
                  "4KiB": _size([1.90, 2.00, 2.01, 1.99, 2.00], [1.5, 1.6, 1.55], 8.0)},
    "seconds_per_size": {"1KiB": {"prepare_and_verify": 0.1, "rdt": 0.3, "object_store": 0.1, "clone": 0.1},
                         "4KiB": {"prepare_and_verify": 0.1, "rdt": 0.3, "object_store": 0.1, "clone": 0.1}},
}


def _pf001(**changes: Any) -> dict[str, Any]:
    out = copy.deepcopy(PF001)
    for path, value in changes.items():
        *parents, leaf = path.split("__")
        node = out
        for key in parents:
            node = node[key]
        node[leaf] = value
    return out

PASSING: dict[str, dict[str, Any]] = {
    "PF-001": PF001,
    "PF-002": {"largest_size_gbps": 5.0, "reference_gbps": 10.0, "achieved_fraction": 0.5},
    "PF-003": {"rdt_gbps": 4.0, "object_store_gbps": 2.0, "ratio_to_object_store": 2.0},
    "PF-004": {"wrong_pairs": 0, "links": {"same_node": {"median_gbps": 4.0, "min_gbps": 3.0},
                                           "cross_node": {"median_gbps": 2.0, "min_gbps": 2.0}},
               "endpoints": ["n0:0", "n0:1", "n1:0"],
               "matrix_gbps": [[None, 5.0, 2.0], [3.0, None, 2.0], [2.0, 2.0, None]]},
}

FAILING: dict[str, list[dict[str, Any]]] = {
    "PF-001": [_pf001(unverified=1, verification={"1KiB": "ok", "4KiB": "sha256 differs"}),   # a size arrived wrong
               _pf001(verification={"1KiB": "ok", "4KiB": "sha256 differs"}),                # ... and unverified says 0
               _pf001(max_bytes=1 << 20),                                                   # sizes the sweep does not make
               _pf001(method={**SWEEP_METHOD, "min_trials": 2, "device": "cpu"}),            # another method
               _pf001(method={**SWEEP_METHOD, "device": "npu"}),                             # a type the manifest does not give
               _pf001(bandwidth__4KiB__median_gbps=9.0),                                     # a median its trials do not give
               _pf001(bandwidth__4KiB__trials_gbps=[2.0, 2.0]),                              # fewer trials than min_trials
               _pf001(bandwidth__4KiB__cv_met=False)],                                       # cv_met its cv does not give
    "PF-002": [{"largest_size_gbps": 0.5, "reference_gbps": 10.0, "achieved_fraction": 0.05},
               {"largest_size_gbps": 50.0, "reference_gbps": 10.0, "achieved_fraction": 5.0,    # the median forged up
                "largest_size_trials_gbps": [1.0, 1.1, 1.2]}],
    "PF-003": [{"rdt_gbps": 1.0, "object_store_gbps": 2.0, "ratio_to_object_store": 0.5},
               {"rdt_gbps": 4.0, "object_store_gbps": 0.02, "ratio_to_object_store": 200.0,   # the baseline forged down
                "rdt_trials_gbps": [4.0, 4.0, 4.0], "object_store_trials_gbps": [2.0, 2.0, 2.0]}],
    "PF-004": [{"wrong_pairs": 0, "links": {"same_node": {"median_gbps": 2.25, "min_gbps": 0.5}},
               "endpoints": ["n0:0", "n0:1"], "matrix_gbps": [[None, 4.0], [0.5, None]]},
               {"wrong_pairs": 0, "links": {"same_node": {"median_gbps": 4.0, "min_gbps": 4.0}},   # a slow pair left out
                "endpoints": ["n0:0", "n0:1", "n1:0"], "matrix_gbps": [[None, 4.0, None], [4.0, None, None], [None, None, None]]},
               {"wrong_pairs": 0, "links": {"same_node": {"median_gbps": 4.0, "min_gbps": 3.0}},   # one node of two
                "endpoints": ["n0:0", "n0:1"], "matrix_gbps": [[None, 5.0], [3.0, None]]}],
}
