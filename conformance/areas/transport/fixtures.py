"""Fixtures of the transport and performance check modules (imported by each such module).

* `tctx` (module scope): the run's TransportContext; not applicable when the manifest declares
  no transport; a failure naming the cause when the transport cannot be registered.
* `transport_cluster` (function scope): the shared cluster, like `shared_cluster`, but without
  waiting for devices to be released after each check: the module's endpoints may hold devices
  until the module ends (then the context stops them).
"""
from __future__ import annotations

from typing import Any, Iterator

import pytest

from conformance.areas.transport.area import CONTEXT
from conformance.areas.transport.context import TransportContext
from conformance.areas.transport.registration import NO_TRANSPORT, TransportSetupError, ensure_registered
from conformance.areas.transport.tables import publish
from conformance.cluster.manager import ClusterStartError
from conformance.run.fixtures import not_applicable
from conformance.run.state import stash_of


def transport_setup(run: Any) -> Any:
    """The registered transport; n/a without one; pytest.fail when registration failed."""
    try:
        setup = ensure_registered(run.manifest)
    except TransportSetupError as exc:
        pytest.fail(f"transport setup failed: {exc}", pytrace=False)
    if setup is None:
        not_applicable(NO_TRANSPORT)
    return setup


@pytest.fixture(scope="module")
def tctx(conformance_run: Any) -> Iterator[TransportContext]:
    """One context per run, shared by the transport/performance modules: endpoints that hold no
    device are reused by the next module (starting them is the slow part); endpoints holding
    devices are stopped when the module ends, so other areas' checks find every device free."""
    run = conformance_run
    run.prepare()
    setup = transport_setup(run)
    stash = stash_of(run)
    ctx = stash.get(CONTEXT, None)
    if ctx is None:
        ctx = stash[CONTEXT] = TransportContext(run, setup)
        publish(run, "transport", {"name": setup.name, "one_sided": setup.one_sided, "can_abort": setup.can_abort,
                                   "devices": list(setup.config.devices), "manager": setup.config.manager_ref})
    yield ctx
    ctx.release_device_pools()


@pytest.fixture
def transport_cluster(conformance_run: Any, tctx: TransportContext) -> Any:
    try:
        return tctx.cluster()
    except ClusterStartError as exc:
        raise ClusterStartError(str(exc)) from None
