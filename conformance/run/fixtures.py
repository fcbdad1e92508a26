"""Fixtures the checks use. Registered by conformance.plugin; inert without a manifest."""
from __future__ import annotations

from typing import Any

import pytest

from conformance.cluster.manager import SHARED, ClusterShape, ClusterStartError
from conformance.report.results import not_applicable  # noqa: F401 - the checks import it from here
from conformance.run.check_context import CheckContext, use_cluster
from conformance.run.state import METRICS_KEY, run_of


@pytest.fixture(scope="session")
def conformance_run(pytestconfig: pytest.Config) -> Any:
    run = run_of(pytestconfig)
    if run is not None:
        return run
    pytest.skip("no conformance run: pass --conformance-manifest=PATH")


@pytest.fixture
def check_context(request: pytest.FixtureRequest, conformance_run: Any) -> CheckContext:
    """The base of every area's `<area>_ctx`: the check as this run loaded it, its metrics, its
    shape mark's cluster and its clock (conformance.run.check_context)."""
    return CheckContext.for_item(request.node, conformance_run)


@pytest.fixture(scope="session")
def manifest(conformance_run: Any) -> Any:
    return conformance_run.manifest


@pytest.fixture(scope="session")
def accelerator_manager(conformance_run: Any) -> type:
    """The vendor's AcceleratorManager class, injected into Ray in this process."""
    return conformance_run.prepare()


@pytest.fixture
def shared_cluster(conformance_run: Any) -> Any:
    """The manifest's own cluster shape, shared by every check that does not disturb it."""
    try:
        handle = conformance_run.cluster(SHARED)
    except ClusterStartError as exc:
        raise ClusterStartError(str(exc)) from None
    yield handle
    wait_devices_released(conformance_run.manifest.resource_name)


@pytest.fixture
def cluster_shape(request: pytest.FixtureRequest, conformance_run: Any) -> ClusterShape:
    """The concrete shape the test's `@pytest.mark.cluster(...)` names, resolved for this run
    (conformance.cluster.shapes); the check is not applicable when that shape cannot exist here."""
    from conformance.cluster import shapes
    from conformance.run.vendor_calls import KnownHang, VendorHang

    name = shapes.mark_name(request.node) or SHARED.name
    # Resolving a shape asks the manager as Ray does at a node start: a call known to hang fails
    # it at once, and one found hanging here is recorded for every later shape.
    known = None if conformance_run.ray_address else conformance_run.hangs.blocks_node_start()
    if known is not None:
        raise ClusterStartError(f"cluster {name!r} not started: {known.reason()}")
    manager = conformance_run.prepare()
    try:
        return shapes.for_run(name, conformance_run.manifest, manager, conformance_run.ray_address,
                              fault_driver=conformance_run.fault_driver)
    except shapes.ShapeNotApplicable as exc:
        not_applicable(str(exc))
    except VendorHang as exc:
        conformance_run.hangs.add(KnownHang(exc.method, f"shape {name!r}", exc.bound_s))
        raise ClusterStartError(f"cluster {name!r} not started: {exc}") from None


@pytest.fixture
def cluster(request: pytest.FixtureRequest, conformance_run: Any, cluster_shape: ClusterShape) -> Any:
    """The live cluster of the test's marked shape (started, or reused when one with the same
    parameters is up); for a shape the check starts afresh itself, the cluster it starts from."""
    from conformance.cluster import shapes

    first = shapes.first_cluster(shapes.mark_name(request.node) or SHARED.name, cluster_shape,
                                 conformance_run.manifest, conformance_run.prepare(), conformance_run.ray_address,
                                 fault_driver=conformance_run.fault_driver)
    return use_cluster(conformance_run, first)


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


@pytest.fixture
def check_params(request: pytest.FixtureRequest, conformance_run: Any) -> dict[str, Any]:
    """The thresholds (`params:` in the checklist) of the check this test evidences, as this run
    loaded them: the values the report records and `verify` judges with."""
    cid = request.node.get_closest_marker("check").args[0]
    return dict(conformance_run.data.checklist.by_id()[cid].params)


@pytest.fixture
def check_metrics(request: pytest.FixtureRequest) -> dict[str, Any]:
    """A dict whose contents land in the check's `metrics` in report.json."""
    return request.node.stash.setdefault(METRICS_KEY, {})


def partitioning_driver(conformance_run: Any) -> Any:
    """The --ray-address cluster's fault driver when it can partition a node; otherwise the check is
    not applicable, with the one reason every partition check gives (decided before any start)."""
    driver = conformance_run.fault_driver() if conformance_run.ray_address else None
    if driver is None or "partition" not in driver.supports:
        name = driver.name if driver is not None else "cluster_utils"
        not_applicable(f"needs a fault driver that can partition a node; {name!r} cannot (nodes the suite starts "
                       "share one network stack): run against real or namespace hosts with --fault-driver")
    return driver
