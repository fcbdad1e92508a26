"""The collective area's judged checks: evidence each judge passes and evidence it fails.

PASSING: check id -> evidence its judge passes under the shipped params and judged.MANIFEST
(the hand-made reports of the signing tests carry it). FAILING: check id -> records its judge
must not pass (each a way the check's evidence shows a failure). tests/unit/test_judges.py
holds every judge to both tables.
"""
from __future__ import annotations

from typing import Any

PASSING: dict[str, dict[str, Any]] = {
    "CC-008": {"memory": {"held_mib": [[100.0, 101.0], [110.0, 111.0], [112.0, 111.5], [115.0, 112.0]],
                          "growth_mib": [5.0, 1.0], "payload_mib": 40.0, "cycles": 4}},
    "CC-009": {"error_s": {"0": 1.5, "1": 1.6}},
    "CC-010": {"busbw_gbps": 2.0, "host_copy_gbps": 10.0, "host_fraction": 0.2, "nominal_link_gbps": 4.0,
               "link_fraction": 0.5, "star_op": "allreduce", "star_op_busbw_gbps": 2.0, "star_busbw_gbps": 2.5,
               "star_fraction": 0.8},
}

FAILING: dict[str, list[dict[str, Any]]] = {
    "CC-008": [{"memory": {"held_mib": [[100.0, 101.0], [110.0, 111.0], [112.0, 111.5], [410.0, 112.0]],
                          "growth_mib": [300.0, 1.0], "payload_mib": 40.0, "cycles": 4}}],
    "CC-009": [{"error_s": {"0": 1.5, "1": 300.0}}],
    "CC-010": [{"busbw_gbps": 0.01, "host_copy_gbps": 10.0, "host_fraction": 0.001, "nominal_link_gbps": None,
               "star_op": "allreduce", "star_op_busbw_gbps": 0.01, "star_busbw_gbps": 0.02, "star_fraction": 0.5,
               "link_fraction": None}],
}
