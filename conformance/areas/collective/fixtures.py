"""The collective area's fixtures, all of them (registered as a plugin through its Area).

* `cconfig` (session): the manifest's collective block; every check not applicable without one.
* `cctx` (session): the run's CollectiveContext (backend registered in the driver, member pool),
  kept under the one stash key STATE; stopped at the end of the session.
* `collective_cluster` (function): the shared cluster, without the per-check wait for devices
  (members hold none).
"""
from __future__ import annotations

from typing import Any, Iterator

import pytest

from conformance.areas.collective.area import STATE
from conformance.areas.collective.config import NO_BACKEND, CollectiveConfig, collective_config
from conformance.areas.collective.report import publish
from conformance.run.fixtures import not_applicable
from conformance.run.state import stash_of


@pytest.fixture(scope="session")
def cconfig(conformance_run: Any) -> CollectiveConfig:
    config = collective_config(conformance_run.manifest)
    if config is None:
        not_applicable(NO_BACKEND)
    return config


@pytest.fixture(scope="session")
def cctx(conformance_run: Any, cconfig: CollectiveConfig) -> Iterator[Any]:
    from conformance.areas.collective.context import CollectiveContext

    conformance_run.prepare()
    stash = stash_of(conformance_run)
    state = stash.get(STATE, None)
    if state is None:
        try:
            state = CollectiveContext(conformance_run, cconfig)
        except Exception as exc:  # noqa: BLE001 - a backend that cannot be registered fails every check
            state = f"registering collective backend {cconfig.backend} in the driver failed: {type(exc).__name__}: {exc}"
        stash[STATE] = state
    if isinstance(state, str):
        pytest.fail(state.splitlines()[0], pytrace=False)
    yield state
    publish(conformance_run, state.section)
    state.close()


@pytest.fixture
def collective_cluster(cctx: Any) -> Any:
    from conformance.cluster.manager import ClusterStartError

    try:
        return cctx.cluster()
    except ClusterStartError as exc:
        raise ClusterStartError(str(exc)) from None
