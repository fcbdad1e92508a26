"""The performance area's judged checks: evidence each judge passes and evidence it fails.

PASSING: check id -> evidence its judge passes under the shipped params and judged.MANIFEST
(the hand-made reports of the signing tests carry it). FAILING: check id -> records its judge
must not pass (each a way the check's evidence shows a failure). tests/unit/test_judges.py
holds every judge to both tables.
"""
from __future__ import annotations

from typing import Any

PASSING: dict[str, dict[str, Any]] = {
    "PF-002": {"largest_size_gbps": 5.0, "reference_gbps": 10.0, "achieved_fraction": 0.5},
    "PF-003": {"rdt_gbps": 4.0, "object_store_gbps": 2.0, "ratio_to_object_store": 2.0},
    "PF-004": {"wrong_pairs": 0, "links": {"same_node": {"median_gbps": 4.0, "min_gbps": 3.0}},
               "endpoints": ["n0:0", "n0:1"], "matrix_gbps": [[None, 5.0], [3.0, None]]},
}

FAILING: dict[str, list[dict[str, Any]]] = {
    "PF-002": [{"largest_size_gbps": 0.5, "reference_gbps": 10.0, "achieved_fraction": 0.05}],
    "PF-003": [{"rdt_gbps": 1.0, "object_store_gbps": 2.0, "ratio_to_object_store": 0.5}],
    "PF-004": [{"wrong_pairs": 0, "links": {"same_node": {"median_gbps": 2.25, "min_gbps": 0.5}},
               "endpoints": ["n0:0", "n0:1"], "matrix_gbps": [[None, 4.0], [0.5, None]]}],
}
