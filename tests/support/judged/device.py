"""The device area's judged checks: evidence each judge passes and evidence it fails.

PASSING: check id -> evidence its judge passes under the shipped params and judged.MANIFEST
(the hand-made reports of the signing tests carry it). FAILING: check id -> records its judge
must not pass (each a way the check's evidence shows a failure). tests/unit/test_judges.py
holds every judge to both tables.
"""
from __future__ import annotations

from typing import Any

PASSING: dict[str, dict[str, Any]] = {

}

FAILING: dict[str, list[dict[str, Any]]] = {

}
