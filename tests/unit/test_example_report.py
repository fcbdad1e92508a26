"""The committed example report (reports/example/) verifies with its public key."""
from __future__ import annotations

from pathlib import Path
from typing import Iterator

import pytest

import verifier_clock
from conformance.signing.keyring import key_from_file
from conformance.signing.verify import verify_path

EXAMPLE = Path(__file__).resolve().parents[2] / "reports" / "example"


@pytest.fixture(autouse=True)
def _received_clock() -> Iterator[None]:
    """verify judges the example as of its receipt, not today (its release may be superseded)."""
    yield from verifier_clock.pinned(EXAMPLE / "report.json")


def test_example_report_verifies() -> None:
    result = verify_path(EXAMPLE, [key_from_file(EXAMPLE / "example.pub")])
    assert result.ok, [line for line in result.lines if not line.ok]
    assert result.report is not None and result.report["tier"] == result.recomputed_tier
    assert result.report["tier"] == "stable"


def test_example_report_rejects_another_key(tmp_path: Path) -> None:
    from conformance.signing.keys import write_keypair

    other = write_keypair(tmp_path / "k")
    result = verify_path(EXAMPLE, [key_from_file(other.public_path)])
    assert not result.ok and "signature" in result.failed()
