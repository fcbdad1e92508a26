"""The SIG certifies only what it recomputes (tiers/releases.yaml certificates.vendor_word: refuse).

A real report of a release before declared judges (0.1.0+data.6, kept in tests/support) signed by
its vendor: its tier rests on the vendor's word for most required checks, so verify's tier line
refuses it, naming them, and says to re-run. The current example (a release whose judges
recompute every required check) is not touched by the rule (tests/unit/test_example_report.py)."""
from __future__ import annotations

import json
from pathlib import Path

from test_signing_evidence_classes import EXAMPLE, _verified_when_received, failing, retally, sign_as_vendor, verify

from conformance.catalog import releases
from conformance.signing import keys

__all__ = ["_verified_when_received"]   # the verifier's clock the day the run was received (autouse)


def test_a_tier_on_the_vendors_word_is_refused(tmp_path: Path) -> None:
    assert (releases.load_certificates() or {}).get("vendor_word") == "refuse"
    key = keys.write_keypair(tmp_path / "vendor")
    report = retally(json.loads((EXAMPLE / "report.json").read_text()))
    lines = failing(verify(sign_as_vendor(tmp_path / "r", report, key.private_path), key))
    assert list(lines) == ["tier"], lines
    assert "required checks rest on the vendor's word" in lines["tier"] and "DP-006" in lines["tier"]
    assert "re-run on a release that judges them" in lines["tier"]
