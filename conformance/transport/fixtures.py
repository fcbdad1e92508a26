"""Fixtures of the transport and performance check modules (imported by each such module).

* `tctx` (module scope): the TransportContext; not applicable when the manifest declares no
  transport; an error naming the cause when the transport cannot be registered.
* `transport_cluster` (function scope): the shared cluster, like `shared_cluster`, but without
  waiting for devices to be released after each check: the module's endpoints may hold devices
  until the module ends (then the context kills them).
"""
from __future__ import annotations

from typing import Any, Iterator

import pytest

from conformance.cluster import ClusterStartError
from conformance.fixtures import not_applicable
from conformance.transport.context import TransportContext
from conformance.transport.registration import TransportSetupError, ensure_registered

NO_TRANSPORT = "the manifest declares no transport (add a `transport` block to certify one)"


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
    run = conformance_run
    run.prepare()
    ctx = TransportContext(run, transport_setup(run))
    yield ctx
    ctx.close()


@pytest.fixture
def transport_cluster(conformance_run: Any, tctx: TransportContext) -> Any:
    try:
        return tctx.cluster()
    except ClusterStartError as exc:
        raise ClusterStartError(str(exc)) from None
