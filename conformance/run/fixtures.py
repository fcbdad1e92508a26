"""The core's two fixtures, registered by conformance.plugin (inert without a manifest): the run,
and the base `CheckContext` every area's `<area>_ctx` fixture builds on. A check takes its area's
context and nothing else (conformance.run.check_context)."""
from __future__ import annotations

from typing import TYPE_CHECKING, Any

import pytest

from conformance.report.results import not_applicable as not_applicable  # the checks import it from here too
from conformance.run.check_context import CheckContext
from conformance.run.state import run_of

if TYPE_CHECKING:
    from conformance.run.check_context import RunView


@pytest.fixture(scope="session")
def conformance_run(pytestconfig: pytest.Config) -> Any:
    run = run_of(pytestconfig)
    if run is not None:
        return run
    pytest.skip("no conformance run: pass --conformance-manifest=PATH")


@pytest.fixture
def check_context(request: pytest.FixtureRequest, conformance_run: RunView) -> CheckContext:
    """The base of every area's `<area>_ctx`: the check as this run loaded it, its metrics, its
    shape mark's cluster and its clock (conformance.run.check_context)."""
    return CheckContext.for_item(request.node, conformance_run)


def wait_devices_released(resource: str, timeout_s: float = 20.0) -> None:
    """After a check, wait until every device is free again so the next check starts clean."""
    import time

    import ray

    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if ray.available_resources().get(resource, 0) >= ray.cluster_resources().get(resource, 0):
            return
        time.sleep(0.1)
    raise AssertionError(f"{resource} devices were not released within {timeout_s:.0f}s after the check")


def partitioning_driver(conformance_run: RunView) -> Any:
    """The --ray-address cluster's fault driver when it can partition a node; otherwise the check is
    not applicable, with the one reason every partition check gives (decided before any start)."""
    driver = conformance_run.fault_driver() if conformance_run.ray_address else None
    if driver is None or "partition" not in driver.supports:
        name = driver.name if driver is not None else "cluster_utils"
        not_applicable(f"needs a fault driver that can partition a node; {name!r} cannot (nodes the suite starts "
                       "share one network stack): run against real or namespace hosts with --fault-driver")
    return driver
