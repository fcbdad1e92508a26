"""The one registration table: the manifest's transport registered with Ray, once per process,
before any endpoint exists.

Ray's rules (2.60, see ray.experimental.rdt.util): `register_tensor_transport` must run in the
process that creates the actors, *before* it creates them (actor creation ships the registered
transports to the actor once, and nothing re-ships them later), and a name cannot be registered
twice. So the suite registers at most once per pytest process and caches the outcome
(success or the error) for every check that asks.

What is registered:

* custom transport (manifest `transport.manager`): the suite's tracing wrapper around the
  vendor's class, *under the vendor's name*, so every check (data, lifecycle, performance)
  exercises the vendor's code through the same instrumented path;
* built-in transport (GLOO, NCCL, NIXL, CUDA_IPC): Ray registers those itself, so the data and
  performance checks use the built-in name untouched, and the lifecycle checks use a traced
  copy registered as `<NAME>_TRACED` (delegating to Ray's own class);
* on request (`faults=True`: the transfer-recovery and transport-usage checks), the
  fault-injecting twin `<NAME>_RECOVERY` (conformance.rdt.faults) around the same class. It is
  registered only when a check asks for it, before that check's own actors exist, so endpoints
  started earlier do not carry it.
"""
from __future__ import annotations

import threading
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from conformance.rdt.config import TransportConfig, transport_config
from conformance.rdt.device import is_host
from conformance.rdt.faults import SUFFIX as FAULTS_SUFFIX
from conformance.rdt.faults import FaultInjectingTransport
from conformance.rdt.tracing import TracedTransport, traced_class

if TYPE_CHECKING:
    from ray import ObjectRef

    from conformance.catalog.manifest import Manifest

TRACED_SUFFIX = "_TRACED"
# The not-applicable reason of every transport-dependent check when the manifest declares none.
NO_TRANSPORT = "the manifest declares no transport (add a `transport` block to certify one)"


@dataclass(frozen=True)
class TransportSetup:
    """The registered transport, as the checks use it."""

    config: TransportConfig
    name: str            # what data/performance checks pass as tensor_transport
    traced_name: str     # what lifecycle checks pass (== name for custom transports)
    inner: type          # the vendor's (or Ray's built-in) manager class
    one_sided: bool
    can_abort: bool

    @property
    def traced_is_primary(self) -> bool:
        return self.name == self.traced_name

    @property
    def fault_name(self) -> str:
        """The fault-injecting twin's name (registered by `ensure_registered(..., faults=True)`)."""
        return self.config.name + FAULTS_SUFFIX

    @property
    def device(self) -> str:
        """The device type payloads live on: the first non-CPU one the transport moves, else cpu."""
        return next((d for d in self.config.devices if not is_host(d)), self.config.devices[0])

    @property
    def collective_backend(self) -> str | None:
        return self.config.collective_backend


class TransportSetupError(Exception):
    """The transport could not be registered; every transport check errors with this reason."""


# Ray's transport registry is process-global and has no unregister: what this process registered
# (or failed to) is a fact of the process, not of one run, so it is kept here, with the config it
# was for. A failure is retried for another config; a success cannot be switched. The twins
# registered (or failed) are kept by name, beside it: they always belong to that one vendor setup.
_lock = threading.Lock()
_result: tuple[TransportConfig, TransportSetup | TransportSetupError] | None = None
_twins: dict[str, TransportSetupError | None] = {}


def _registry() -> dict[str, Any]:
    from ray.experimental.rdt import util

    util._ensure_default_transports_registered()
    return util.transport_manager_info


def _register(name: str, devices: list[str], cls: type[TracedTransport]) -> None:
    import torch
    from ray.experimental.rdt import register_tensor_transport

    existing = _registry().get(name)
    if existing is not None:
        registered: Any = existing.transport_manager_class
        if issubclass(registered, cls.__mro__[1]) and registered.INNER_REF == cls.INNER_REF:
            return   # registered by an earlier setup in this process, for the same class and wrapper
        if issubclass(registered, TracedTransport):
            raise TransportSetupError(
                f"transport {name} is already registered in this process for {registered.INNER_REF}; "
                f"cannot register it for {cls.INNER_REF} (Ray's registry has no unregister)")
        raise TransportSetupError(
            f"transport {name} is already registered in this process with "
            f"{existing.transport_manager_class.__module__}.{existing.transport_manager_class.__qualname__} "
            "(registered on import?); the suite must register it itself to instrument it")
    register_tensor_transport(name, devices, cls, torch.Tensor)


def _setup(config: TransportConfig, python_path: list[str]) -> TransportSetup:
    from conformance.catalog.manifest import import_object

    if config.builtin:
        info = _registry().get(config.name)
        if info is None:
            raise TransportSetupError(f"built-in transport {config.name} is not available in this Ray "
                                      "(missing optional dependency?)")
        inner = info.transport_manager_class
        traced_name = config.name + TRACED_SUFFIX
        _register(traced_name, list(info.devices), traced_class(inner, traced_name, backend_name=config.name))
        name = config.name
    else:
        if not config.manager_ref:
            raise TransportSetupError(f"transport {config.name} is not built in; the manifest must name its "
                                      "manager (transport.manager: 'pkg.module:Class')")
        inner = import_object(config.manager_ref, field="transport.manager", python_path=python_path)
        from ray.experimental.rdt.tensor_transport_manager import TensorTransportManager
        if not (isinstance(inner, type) and issubclass(inner, TensorTransportManager)):
            raise TransportSetupError(f"transport.manager {config.manager_ref} is not a TensorTransportManager subclass")
        missing = sorted(getattr(inner, "__abstractmethods__", ()) or ())
        if missing:
            raise TransportSetupError(f"transport.manager {config.manager_ref} does not implement {', '.join(missing)}")
        name = traced_name = config.name
        _register(name, list(config.devices), traced_class(inner, name))
    return TransportSetup(config=config, name=name, traced_name=traced_name, inner=inner,
                          one_sided=bool(inner.is_one_sided()), can_abort=bool(inner.can_abort_transport()))


def ensure_registered(manifest: Manifest, *, faults: bool = False) -> TransportSetup | None:
    """Register the manifest's transport (first call) and return the setup; None if none declared.
    With `faults`, also its fault-injecting twin (`setup.fault_name`), once.

    Raises TransportSetupError (the same one on every call) when registration failed.
    """
    global _result
    config = transport_config(manifest)
    if config is None:
        return None
    with _lock:
        if _result is None or (_result[0] != config and isinstance(_result[1], TransportSetupError)):
            try:
                _result = (config, _setup(config, manifest.python_path))
            except TransportSetupError as exc:
                _result = (config, exc)
            except Exception as exc:  # noqa: BLE001 - any failure here is the finding
                _result = (config, TransportSetupError(f"registering transport {config.name} failed: "
                                                       f"{type(exc).__name__}: {exc}".splitlines()[0]))
        registered_for, outcome = _result
        if isinstance(outcome, TransportSetupError):
            raise outcome
        if registered_for != config:
            raise TransportSetupError(f"this process already registered transport {outcome.config.name}; "
                                      f"cannot switch to {config.name} (registration is process-global)")
        if faults:
            _register_twin(outcome)
        return outcome


def _register_twin(setup: TransportSetup) -> None:
    """The fault-injecting twin of the registered transport, once (the same failure every call)."""
    name = setup.fault_name
    if name not in _twins:
        backend = setup.config.name if setup.config.builtin else None
        try:
            _register(name, list(setup.config.devices),
                      traced_class(setup.inner, name, backend_name=backend, base=FaultInjectingTransport))
            _twins[name] = None
        except Exception as exc:  # noqa: BLE001 - the same failure for every check
            _twins[name] = TransportSetupError(f"registering {name} failed: {type(exc).__name__}: {exc}".splitlines()[0])
    failure = _twins[name]
    if failure is not None:
        raise failure


def transports_registered(actor: Any) -> ObjectRef[Any] | None:
    """Ray's registration of this process's custom transports on a new actor, as an ObjectRef to
    wait for; started now on an actor created without enable_tensor_transport. None when there is
    nothing to wait for (no custom transport, or a Ray that keeps this elsewhere: it is private
    state in 2.60, and the actor's first transfer then pays it, as before).

    Ray starts that registration as a task when it creates an actor with the transport (ray/actor.py;
    it runs beside the constructor, on the `_ray_system` thread), and on an actor without it only
    when a task first passes it an RDT ref. Either way the driver's first submission that involves
    the actor (a producer, or a receive) blocks until the actor has unpickled the transport's
    class, importing its module and torch (wait_until_custom_transports_registered): inside
    whatever the check times next. Measured: an actor with the transport not yet registered when
    its first answer came, its first producer's submission blocked 1.3-2.8 s beside make test; a
    fresh worker's torch import inside TR-020's "a receiver without the transport" took 23.7 s of
    its 15 s in CI. The start of the actor (conformance.rdt.pool.start_endpoints' `registered`)
    waits for it instead, as the plugin's code it runs (the transport's module)."""
    import ray
    from ray._private.worker import global_worker

    manager = getattr(global_worker, "rdt_manager", None)
    register = getattr(manager, "register_custom_transports_on_actor", None)
    registered_by_actor = getattr(manager, "actor_id_to_transports_registered", None)
    if register is None or not isinstance(registered_by_actor, dict):
        return None
    if actor._actor_id not in registered_by_actor:
        register(actor)
    registered = registered_by_actor.get(actor._actor_id)
    return registered if isinstance(registered, ray.ObjectRef) else None
