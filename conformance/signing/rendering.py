"""Which releases' report.md and report.html this verifier renders byte for byte (issue 43 item 2,
held-out round 34: R1, R2).

The files a run writes beside report.json (report.md, report.html) are renderings of it: there is
no text a vendor may legitimately add to them, or take out. For a report of a release whose run
wrote what this verifier's renderer writes, each is derived: this verifier renders report.json and
the bytes must be equal. That holds from RENDERED_SINCE on, established by rendering the real
reports the repo has held: every committed example from 0.1.0+data.19 to 0.1.0+data.28 (git log of
reports/example) renders to its report.md and report.html byte for byte with this code; the
data.6 run (tests/support/real_run_data6) does not (its checks table had no host load column).
Releases listed before RENDERED_SINCE were rendered by code that wrote other bytes: their
companions are cross-checked statement by statement (signing/companions.py, signing/page.py).

A change to conformance/report's renderers that changes these bytes makes reports of the releases
already published unverifiable: tests/unit/test_companions_every_release.py holds the renderings
of the repo's real reports, and such a change must move RENDERED_SINCE to the release it ships in.
"""
from __future__ import annotations

from typing import Any, Mapping

RENDERED_SINCE = "0.1.0+data.19"


def renders_release(version: object, known: Mapping[str, Any]) -> bool:
    """True when a report of `version` was rendered by code that writes what this verifier renders
    (a release listed at or after RENDERED_SINCE in the releases file `known`, in its order). A
    version the file does not list, or a file without RENDERED_SINCE, is held to the derivation."""
    order = list(known)
    if not isinstance(version, str) or version not in order or RENDERED_SINCE not in order:
        return True
    return order.index(version) >= order.index(RENDERED_SINCE)
