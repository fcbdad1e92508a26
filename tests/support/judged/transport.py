"""The transport area's judged checks: evidence each judge passes and evidence it fails.

PASSING: check id -> evidence its judge passes under the shipped params and judged.MANIFEST
(the hand-made reports of the signing tests carry it). FAILING: check id -> records its judge
must not pass (each a way the check's evidence shows a failure). tests/unit/test_judges.py
holds every judge to both tables.
"""
from __future__ import annotations

from typing import Any

PASSING: dict[str, dict[str, Any]] = {
    "TR-013": {"payload_bytes": 1 << 20, "transfers_per_round": 12, "rounds": 5,
               "growth_per_round_bytes": {"source.held_bytes": [0, 4096, 0, 0, 0]}},
    "TR-014": {"actor_has_transport_max_latency_s": 0.01},
}

FAILING: dict[str, list[dict[str, Any]]] = {
    "TR-013": [{"payload_bytes": 1 << 20, "transfers_per_round": 12, "rounds": 5,
               "growth_per_round_bytes": {"source.rss_bytes": [12 << 20, 12 << 20, 12 << 20, 0, 12 << 20]}}],
    "TR-014": [{"actor_has_transport_max_latency_s": 2.5}],
}
