"""The core's fixtures, registered by conformance.plugin (inert without a manifest): the run, the
base `CheckContext`, and one `<area>_ctx` per area of the registry (conformance.areas.AREAS), each
opened by the one core function conformance.run.contexts.open_check_context. A check takes its
area's context and nothing else (conformance.run.check_context); no area defines a fixture."""
from __future__ import annotations

from typing import TYPE_CHECKING, Any, Iterator

import pytest

from conformance.areas import AREAS
from conformance.catalog.area import Area
from conformance.report.results import not_applicable as not_applicable  # the checks import it from here too
from conformance.run.check_context import CheckContext
from conformance.run.contexts import Closers, Lifetimes, annotation_problem, open_check_context
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


@pytest.fixture(scope="session")
def conformance_session_end(conformance_run: RunView) -> Iterator[Closers]:
    """What the checks' contexts opened for the session, closed at its end (before the report)."""
    closers = Closers()
    yield closers
    closers.close_all()


@pytest.fixture(scope="module")
def conformance_module_end(conformance_run: RunView) -> Iterator[Closers]:
    """What the checks' contexts opened for their module, closed when it ends (devices freed)."""
    closers = Closers()
    yield closers
    closers.close_all()


def _area_fixture(area: Area) -> Any:
    """`<area>_ctx`: the check's context, of the kind its area's rule gives its data."""
    def area_ctx(request: pytest.FixtureRequest, check_context: CheckContext, conformance_module_end: Closers,
                 conformance_session_end: Closers) -> Iterator[CheckContext]:
        problem = annotation_problem(area, check_context.check, check_context.shape_name, request.function,
                                     required=False)
        if problem is not None:
            pytest.fail(problem, pytrace=False)
        yield from open_check_context(area, check_context, Lifetimes(conformance_module_end, conformance_session_end))

    area_ctx.__name__ = area_ctx.__qualname__ = f"{area.name}_ctx"
    area_ctx.__doc__ = f"The {area.name} check's context (conformance.areas.{area.name}.area: Area.context)."
    return pytest.fixture(name=f"{area.name}_ctx")(area_ctx)


for _area in AREAS:
    globals()[f"{_area.name}_ctx"] = _area_fixture(_area)


def partitioning_driver(conformance_run: RunView) -> Any:
    """The --ray-address cluster's fault driver when it can partition a node; otherwise the check is
    not applicable, with the one reason every partition check gives (decided before any start)."""
    driver = conformance_run.fault_driver() if conformance_run.ray_address else None
    if driver is None or "partition" not in driver.supports:
        name = driver.name if driver is not None else "cluster_utils"
        not_applicable(f"needs a fault driver that can partition a node; {name!r} cannot (nodes the suite starts "
                       "share one network stack): run against real or namespace hosts with --fault-driver")
    return driver
