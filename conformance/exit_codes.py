"""The exit codes of `ray-conformance` and of the pytest run underneath it, in one place.

pytest owns the small codes (0–6 in pytest 9: OK, TESTS_FAILED, INTERRUPTED, INTERNAL_ERROR,
USAGE_ERROR, NO_TESTS_COLLECTED, MAX_WARNINGS_ERROR).
The watchdog that ends a run whose check hung uninterruptibly therefore exits with a code pytest
never uses, so the CLI can tell a hang from pytest's internal error and say so honestly. The
CLI's own endings that pytest has no word for (hung, interrupted, no report) are 20–22, clear
of pytest's, so a script that reads either program's code never mistakes one for the other; 0 and 1
mean what they mean to pytest (completed; something fell short), and 2 is bad input, as for
every command of this project.

`ray-compat` (is the plugin's Ray interface intact in another Ray?) answers 0 compatible, 1
incompatible (each break named), and 23 when that Ray could not be had at all (pip could not
download it: no such version, no wheel for this platform, no network), so a nightly job can tell
"Ray broke the plugin" from "there was nothing to judge".
"""
from __future__ import annotations

import enum


class Exit(enum.IntEnum):
    """What `ray-conformance run` (and the other subcommands) return."""

    OK = 0            # the run completed (and met --require-tier, when given); verify/diff: no finding;
                      # ray-compat: compatible
    BELOW_TIER = 1    # below --require-tier, or the preflight stopped the run; verify/diff/review: a finding;
                      # ray-compat: incompatible
    USAGE = 2         # bad arguments or input (one line on stderr)
    HUNG = 20         # a check hung and could not be interrupted: report written, run ended early
    INTERRUPTED = 21  # stopped from outside (SIGINT/SIGTERM); run: report written, marked interrupted
    NO_REPORT = 22    # the pytest run crashed before writing a report (an internal error)
    CANNOT_INSTALL = 23   # ray-compat: the target Ray could not be downloaded (pip's reason printed)


# The pytest process's own code when the watchdog ended it (clear of pytest's own codes).
WATCHDOG_EXIT = 86


def from_pytest(code: int) -> Exit | None:
    """Map the pytest subprocess's exit code to the CLI's, or None when the tier decides (0/1)."""
    if code == WATCHDOG_EXIT:
        return Exit.HUNG
    if code == 2:  # pytest.ExitCode.INTERRUPTED
        return Exit.INTERRUPTED
    if code == 4:  # pytest.ExitCode.USAGE_ERROR (registry inconsistent, bad option)
        return Exit.USAGE
    if code in (0, 1, 5, 6):   # completed (6: pytest 9's MAX_WARNINGS_ERROR, the report is written)
        return None
    return Exit.NO_REPORT
