"""What the transport and performance areas' fixtures are made of (each area's one fixture
module, conformance/areas/<area>/fixtures.py, builds its `<area>_ctx` from these), and the one
way a check gets the registered transport.

* `transport_setup(run, faults=...)`: the driver prepared and the manifest's transport registered
  (with its fault-injecting twin for the usage and recovery scenarios); not applicable when the
  manifest declares no transport; a failure naming the cause when it cannot be registered.
* `run_transport(run, lifetimes)`: the run's TransportContext, kept under CONTEXT in the run's
  stash, its device-holding pools stopped when the check's module ends (Lifetimes.module).
* `open_context(kind, base, transport)`: the check's context (an RdtCtx subclass) on the shared
  cluster, which, unlike other areas' checks, does not wait for devices to be released after
  each check: the module's endpoints may hold devices until the module ends (then
  `run_transport`'s closer stops them).
"""
from __future__ import annotations

from typing import TYPE_CHECKING, Any, TypeVar

import pytest

from conformance.rdt.context import RdtCtx, TransportContext
from conformance.rdt.registration import NO_TRANSPORT, TransportSetup, TransportSetupError, ensure_registered
from conformance.rdt.tables import publish
from conformance.report.results import not_applicable
from conformance.run.check_context import CheckContext
from conformance.run.state import stash_of

if TYPE_CHECKING:
    from conformance.run.check_context import RunView
    from conformance.run.contexts import Lifetimes

CONTEXT: "pytest.StashKey[TransportContext]" = pytest.StashKey()
"""One TransportContext per run, shared by the transport and performance check modules."""

R = TypeVar("R", bound=RdtCtx)


def transport_setup(run: RunView, *, faults: bool = False) -> TransportSetup:
    """The registered transport (and, with `faults`, its fault-injecting twin), the driver
    prepared first; n/a without one (never passed); pytest.fail when registration failed."""
    run.prepare()
    try:
        setup = ensure_registered(run.manifest, faults=faults)
    except TransportSetupError as exc:
        pytest.fail(f"transport setup failed: {exc}", pytrace=False)
    if setup is None:
        not_applicable(NO_TRANSPORT)
    return setup


def run_transport(run: RunView, lifetimes: Lifetimes) -> TransportContext:
    """The run's one TransportContext, shared by the transport, performance and workload checks:
    endpoints that hold no device are reused by the next module (starting them is the slow part);
    endpoints holding devices are stopped when the check's module ends, so other areas' checks
    find every device free. N/a without a transport, a failure when it cannot be registered."""
    setup = transport_setup(run)
    stash = stash_of(run)
    ctx = stash.get(CONTEXT, None)
    if ctx is None:
        ctx = stash[CONTEXT] = TransportContext(run, setup)
        publish(run, "transport", {"name": setup.name, "one_sided": setup.one_sided, "can_abort": setup.can_abort,
                                   "devices": list(setup.config.devices), "manager": setup.config.manager_ref})
    lifetimes.module.once("rdt: device pools", ctx.release_device_pools)
    return ctx


def open_context(kind: type[R], base: CheckContext, transport: TransportContext, **extra: Any) -> R:
    """The check's context of `kind`, its cluster (the shape its checklist entry names) started or reused."""
    ctx = kind.derive(base, transport=transport, **extra)
    ctx.cluster()
    # the endpoints the pools hand this check are the nodes it exercises (its coverage record)
    transport.observer = lambda eps: ctx.exercised([eps.node_of(i) for i in range(len(eps))])
    return ctx
