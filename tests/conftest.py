"""The project's tests: the folders as lanes, `tests/support/` on the import path, and the teeth
table started early.

Each folder is a lane, marked by its name (`-m unit`, `-m "not certify"`):

* unit/     pure and in-process: no Ray, no subprocess that starts one (`make test-fast`)
* cli/      the command line and other subprocesses, still without a Ray cluster
* ray/      tests that start Ray (a cluster, `ray-conformance run`, a probe in a worker)
* certify/  whole certifications: the teeth table, the namespace hosts, the installed wheel

The teeth table (tests/teeth.yaml) is most of `make test`'s time and mostly waits on Ray
(cluster starts, timeouts, heartbeats), so its runs start in the background as soon as
collection ends and overlap every other test; the test_teeth.py cases are moved to the end of
the session, where they judge the finished runs. Modules that must have the host to themselves
run first, with the table paused (or down to one lane) until they are done.
"""
import os
import sys
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

# support/: the runners' helpers; broken_plugins/: the variants, importable as the suite's
# plugin.python_path makes them in a run (they import each other as top-level modules).
for _folder in ("support", "broken_plugins"):
    sys.path.insert(0, str(Path(__file__).resolve().parent / _folder))

if TYPE_CHECKING:
    from teeth import BesideJob

CHECKOUT_PROBLEM = pytest.StashKey[str | None]()   # this checkout's code or data not the session's (report header)
TEETH_RUNS = pytest.StashKey()   # teeth.Runs of this session, set when collection ends
BESIDE_JOBS = pytest.StashKey()  # ids of the teeth.BesideJob runs holding this session's unit lane
TEETH_MODULE = "test_teeth.py"
# The lane whose tests run in a lane of the table when the session runs the table (BESIDE=0: in the
# main thread, as before), and the module whose one test judges them, after the main thread's other tests.
BESIDE_LANE = "unit"
BESIDE_MODULE = "test_unit_lane.py"
# Modules that run first, before the project's other tests, with the table held back:
# test_firsthour_runs times the preflight and a whole failed run against a minute and asserts
# that the run left no Ray process behind when its report was written (a loaded host delays
# Ray's shutdown past that): the table is paused. test_hosts installs the .pth hook in this
# environment (which test_remote_cluster does too) and keeps its 3-host cluster's CPU use near
# 40 %: one teeth run goes on beside it (its /dev/shm leftovers count only segments of its own
# processes; the hook is inert in a process that does not set RAY_CONFORMANCE_ACCELERATORS, and
# safe where Ray is imported through it, conformance/cluster/injection.py). Measured: with two
# runs beside it its four certifications took 550 s instead of 281 s, and make test got slower.
# A second run joins only while the machine is idle (the table's spare lane, tests/teeth.yaml).
QUIET_HOST_MODULES = {"test_hosts.py": 1, "test_firsthour_runs.py": 0}   # module -> teeth lanes beside it


def _teeth_run_ids(items: list[pytest.Item]) -> list[str]:
    return [item.callspec.params["run"] for item in items
            if Path(str(item.fspath)).name == TEETH_MODULE and getattr(item, "callspec", None) is not None
            and "run" in item.callspec.params]


def _order(item: pytest.Item) -> tuple[int, int]:
    """Quiet-host modules first, the one that pauses the table before the one that narrows it (the
    table starts paused, so the paused one waits for no run to end); the teeth judgements last."""
    name = Path(str(item.fspath)).name
    if name in QUIET_HOST_MODULES:
        return 0, QUIET_HOST_MODULES[name]
    if name == BESIDE_MODULE:
        return 1, 1
    return (2 if name == TEETH_MODULE and "run" in getattr(getattr(item, "callspec", None), "params", {}) else 1), 0


LANES = ("unit", "cli", "ray", "certify")
HERE = Path(__file__).resolve().parent


def lane_of(item: pytest.Item) -> str | None:
    """The lane of a test: the first folder under tests/ (None for a test outside the lanes)."""
    try:
        first = Path(str(item.fspath)).resolve().relative_to(HERE).parts[0]
    except ValueError:
        return None
    return first if first in LANES else None


def pytest_configure(config: pytest.Config) -> None:
    """Whether this session runs another checkout's code or data (tests/support/checkout_data.py):
    the report's header and its end say so."""
    from checkout_data import checkout_problem

    config.stash[CHECKOUT_PROBLEM] = checkout_problem(HERE.parent)


def pytest_report_header(config: pytest.Config) -> str | None:
    problem = config.stash.get(CHECKOUT_PROBLEM, None)
    return f"WARNING: {problem}" if problem else None


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Each test marked with its lane; quiet-host modules first (the table waits for them), the
    teeth judgements last: everything else runs while the table's runs do."""
    for item in items:
        lane = lane_of(item)
        if lane is not None:
            item.add_marker(getattr(pytest.mark, lane))
    items.sort(key=_order)


def pytest_collection_finish(session: pytest.Session) -> None:
    wanted = set(_teeth_run_ids(session.items))
    if not wanted or session.config.option.collectonly:
        return
    if hasattr(session.config, "workerinput"):
        # every xdist worker collects every test: each would start the whole table
        raise pytest.UsageError("the teeth table runs in one process: run tests/certify/test_teeth.py without -n/--dist "
                                "(it already runs its suite runs side by side, see `phases` in tests/teeth.yaml)")
    from teeth import Runs, runs

    base = session.config._tmp_path_factory.mktemp("teeth")
    # TEETH_OVERLAP=0: the table waits for the other tests (its first judgement resumes it), as before
    serial = os.environ.get("TEETH_OVERLAP", "1") == "0"
    quiet_first = serial or any(_order(item)[0] == 0 for item in session.items)
    beside = () if serial else _beside_jobs(session)
    session.config.stash[BESIDE_JOBS] = tuple(job.id for job in beside)
    session.config.stash[TEETH_RUNS] = Runs([r for r in runs() if r.id in wanted], base, paused=quiet_first,
                                            beside=beside)


def _beside_jobs(session: pytest.Session) -> tuple["BesideJob", ...]:
    """The unit lane's tests, taken out of this session's own run and handed to the table as one
    job (teeth.BesideJob): pure tests, ~2 CPU-minutes that the main thread ran serially after the
    table's phases had ended (docs/test-time.md). BESIDE=0, or no judging module collected: none."""
    from teeth import BesideJob

    if os.environ.get("BESIDE", "1") == "0" or not any(Path(str(i.fspath)).name == BESIDE_MODULE for i in session.items):
        return ()
    moved = [item for item in session.items if lane_of(item) == BESIDE_LANE]
    if not moved:
        return ()
    session.items[:] = [item for item in session.items if lane_of(item) != BESIDE_LANE]
    return (BesideJob(f"beside:tests/{BESIDE_LANE}", tuple(item.nodeid for item in moved)),)


def pytest_sessionfinish(session: pytest.Session) -> None:
    teeth_runs = session.config.stash.get(TEETH_RUNS, None)
    if teeth_runs is not None:
        teeth_runs.close()


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter, config: pytest.Config) -> None:
    teeth_runs = config.stash.get(TEETH_RUNS, None)
    for job_id in config.stash.get(BESIDE_JOBS, ()):   # the unit lane's own count, which the session's omits
        done = teeth_runs.futures[job_id] if teeth_runs is not None else None
        if done is not None and done.done() and done.exception() is None:
            lines = done.result().output.strip().splitlines()
            terminalreporter.write_line(f"{job_id} (in a lane of the table): {lines[-1] if lines else 'no output'}")
    # all runs with -v, the slowest 8 otherwise
    for line in teeth_runs.summary(999 if config.option.verbose > 0 else 8) if teeth_runs is not None else []:
        terminalreporter.write_line(line)
    problem = config.stash.get(CHECKOUT_PROBLEM, None)
    if problem:
        terminalreporter.write_line(f"WARNING: {problem}", yellow=True, bold=True)


def pytest_runtest_setup(item: pytest.Item) -> None:
    """The table pauses (or narrows) for a quiet-host module's tests (they run first) and resumes after them."""
    teeth_runs = item.config.stash.get(TEETH_RUNS, None)
    if teeth_runs is None or os.environ.get("TEETH_OVERLAP", "1") == "0":   # serial: paused until the judgements
        return
    name = Path(str(item.fspath)).name
    if name in QUIET_HOST_MODULES:
        teeth_runs.narrow(QUIET_HOST_MODULES[name])
    else:
        teeth_runs.resume()
