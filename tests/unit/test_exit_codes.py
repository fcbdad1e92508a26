"""Exit codes: the watchdog's code is outside pytest's, and the CLI maps each ending honestly."""
from __future__ import annotations

import pytest

from conformance.exit_codes import WATCHDOG_EXIT, Exit, from_pytest


def test_watchdog_code_does_not_collide_with_pytest() -> None:
    assert WATCHDOG_EXIT not in {int(c) for c in pytest.ExitCode}


@pytest.mark.parametrize("pytest_code, expected", [
    (0, None), (1, None), (5, None), (6, None),
    (int(pytest.ExitCode.INTERRUPTED), Exit.INTERRUPTED),
    (int(pytest.ExitCode.USAGE_ERROR), Exit.USAGE),
    (int(pytest.ExitCode.INTERNAL_ERROR), Exit.NO_REPORT),
    (WATCHDOG_EXIT, Exit.HUNG),
    (-9, Exit.NO_REPORT),
])
def test_pytest_codes_map_to_cli_codes(pytest_code: int, expected: Exit | None) -> None:
    assert from_pytest(pytest_code) is expected


def test_cli_codes_are_distinct() -> None:
    assert len({int(e) for e in Exit}) == len(Exit)


def test_endings_pytest_has_no_word_for_are_outside_its_codes() -> None:
    pytest_codes = {int(c) for c in pytest.ExitCode}
    assert {int(Exit.HUNG), int(Exit.INTERRUPTED), int(Exit.NO_REPORT), int(Exit.CANNOT_INSTALL)}.isdisjoint(pytest_codes)
    assert (Exit.OK, Exit.BELOW_TIER, Exit.USAGE) == (0, 1, 2)
