"""The verifier's clock in tests that verify a committed report (no tests here).

verify refuses a report whose release was superseded longer ago than the SIG's grace
(conformance/signing/release_window.py), on the verifier's clock: a test of reports/example or of
tests/support/real_run_data6 against the real clock would turn red on a date (the day its release's
successor plus the grace passes, or a development release supersedes it). Such a test verifies as
the SIG would on the day it received the report: an hour after the report's own `finished_at`,
through CONFORMANCE_VERIFY_NOW (conformance/signing/clock.py).
"""
from __future__ import annotations

import json
from datetime import timedelta
from pathlib import Path
from typing import Iterator

import pytest

from conformance.catalog.strict_input import utc_datetime
from conformance.signing.clock import ENV


def received(report_json: Path) -> str:
    """An hour after the report's finished_at, as CONFORMANCE_VERIFY_NOW spells it."""
    finished = utc_datetime(json.loads(Path(report_json).read_text())["finished_at"])
    return (finished + timedelta(hours=1)).strftime("%Y-%m-%dT%H:%M:%SZ")


def pinned(report_json: Path) -> Iterator[None]:
    """For a fixture: the verifier's clock at the report's receipt while the fixture lasts."""
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv(ENV, received(report_json))
        yield
