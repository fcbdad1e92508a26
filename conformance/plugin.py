"""The pytest plugin (entry point `pytest11: ray_conformance`).

Inert unless `--conformance-manifest` is given. Then it:
* collects the bundled checks (`conformance/checks`) when no test paths are given;
* maps every test to the checklist item it evidences (`@pytest.mark.check("DP-003")`) and
  refuses to run when a test names an unknown check or a checklist item has no test;
* runs every check under a hard timeout (a hang fails that check; the run goes on);
* writes report.json, report.md and junit.xml at the end of the session, also when the run is
  interrupted, and prints the tier table.
"""
from __future__ import annotations

import pytest

from conformance.errors import UserError

MANIFEST_OPTION = "--conformance-manifest"


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("conformance", "Ray accelerator conformance")
    group.addoption(MANIFEST_OPTION, dest="conformance_manifest", default=None, metavar="PATH",
                    help="vendor manifest (YAML/JSON); turns the conformance run on")
    group.addoption("--conformance-out", dest="conformance_out", default=None, metavar="DIR",
                    help="folder for report.json, report.md, junit.xml (default reports/<product-slug>/)")
    group.addoption("--conformance-ray-address", dest="conformance_ray_address", default=None, metavar="ADDR",
                    help="run against an existing Ray cluster instead of starting simulated nodes")
    group.addoption("--conformance-fault-driver", dest="conformance_fault_driver", default=None, metavar="REF",
                    help="pkg.module:Class that kills/partitions/restarts nodes of the --conformance-ray-address "
                         "cluster (overrides the manifest's cluster.fault_driver; docs/recovery.md)")
    group.addoption("--conformance-fault-driver-options", dest="conformance_fault_driver_options", default=None,
                    metavar="JSON", help="keyword arguments of the fault driver, as a JSON object")
    group.addoption("--conformance-timeout", dest="conformance_timeout", type=float, default=120.0,
                    metavar="SECONDS", help="default hard timeout per check (checklist timeout_s overrides)")
    group.addoption("--conformance-setup-timeout", dest="conformance_setup_timeout", type=float, default=240.0,
                    metavar="SECONDS", help="hard timeout for a check's setup (cluster start included)")
    group.addoption("--conformance-hang-grace", dest="conformance_hang_grace", type=float, default=75.0,
                    metavar="SECONDS", help="after a timeout, how long to wait for the check to return before "
                                            "writing the report and ending the run")
    group.addoption("--conformance-retries", dest="conformance_retries", type=int, default=None, metavar="N",
                    help="re-run a failed check's test at most N times: fewer than the release's flakes.retries "
                         "(never more), so a flake counts as the failure it showed; never laxer, so a "
                         "certification run may ask for it")
    group.addoption("--conformance-select", dest="conformance_select", default=None, metavar="IDS",
                    help="run only these checks (comma-separated ids); the others' tests are deselected and "
                         "the report is partial (`ray-conformance run --area/--check/--last-failed`)")
    group.addoption("--conformance-nodes", dest="conformance_nodes", default=None, metavar="all|sample",
                    help="which nodes the per-node checks cover: sample (the default: where each scenario puts "
                         "them) or all (every alive node, in waves the cluster takes at once); recorded in "
                         "the report's selection (`ray-conformance run --nodes`)")
    group.addoption("--conformance-node-seed", dest="conformance_node_seed", default=None, metavar="SEED",
                    help="the seed of the sample's nodes (--conformance-nodes=sample; drawn when not given, "
                         "recorded as selection.nodes.seed; give every shard of a run the same one)")
    group.addoption("--conformance-shard", dest="conformance_shard", default=None, metavar="I/N",
                    help="run shard I of N: a deterministic slice of the checklist by area and cluster shape, "
                         "plus the mandatory core (`ray-conformance run --shard`, then `ray-conformance merge`)")


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line("markers", "check(id): the checklist item (e.g. DP-003) this test evidences")
    import conformance.run.fixtures as fixtures  # the core's fixtures, every area's `<area>_ctx` among them
    if not config.pluginmanager.is_registered(fixtures):
        config.pluginmanager.register(fixtures, "conformance-fixtures")
    if not config.getoption("conformance_manifest", None):
        return
    from conformance.run.session import ConformanceRun

    _refuse_xdist(config)
    try:
        run = ConformanceRun.from_config(config)
    except UserError as exc:
        raise pytest.UsageError(str(exc)) from None
    from conformance.run.state import RUN
    config.stash[RUN] = run
    config.pluginmanager.register(run, "conformance-run")
    from conformance.run.hooks import RunHelp
    run.report_extras = RunHelp(run)
    config.pluginmanager.register(run.report_extras, "conformance-run-help")
    from conformance.cluster.ray_start import sigterm_interrupts
    sigterm_interrupts()   # and again after each ray.init of the driver (ray_start.connect_driver)
    if config.args_source != pytest.Config.ArgsSource.ARGS:
        config.args = [str(run.checks_dir)]


def _refuse_xdist(config: pytest.Config) -> None:
    """A conformance run is one process: `-n N` / `--dist` are refused with one line.

    Measured (docs/parallel-runs.md): two concurrent halves of the 2-node certification took
    176 s against 259 s serially, but the recovery checks ran a third slower against their time
    bounds and the performance figures were measured beside the other half; real `-n` would also
    have to serialise those checks and merge one report. See README "Parallel runs".
    """
    workers = config.getoption("numprocesses", None)
    dist = config.getoption("dist", "no")
    if workers or (dist and dist != "no"):
        raise pytest.UsageError("conformance runs are serial: -n/--dist (pytest-xdist) is refused; checks run "
                                "side by side skew the timed recovery and performance results of the one "
                                "signed report (docs/parallel-runs.md)")
