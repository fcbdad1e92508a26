"""The suite's contract with Ray that its code reaches only indirectly, so no scan can see it.

The scan (uses.py) finds every Ray import, attribute path and direct call in the suite and the
plugin. What it cannot see is listed here, each with the reason the suite needs it:

* the Ray base classes a manifest's classes must extend (the manifest names the vendor's class,
  the suite calls Ray's methods on it);
* calls whose arguments are built at run time (`placement_group(bundles, **kwargs)`,
  `register_tensor_transport(name, devices, cls, data_type)` behind a registration table);
* the options the suite passes to `.options(**opts)` / `ray.remote(**opts)` from a dict.

An entry marked `optional` is one whose absence the suite already answers (its checks say "not
applicable" on a Ray without it): it is a note in the answer, never a break.
"""
from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class BaseClass:
    """A Ray class a manifest field's class must extend."""
    field: str        # the manifest field naming the vendor's class
    symbol: str       # the Ray class, dotted
    why: str


@dataclass(frozen=True)
class CallContract:
    """A Ray callable the suite calls with these arguments (positional count, keyword names)."""
    symbol: str
    positional: int
    keywords: tuple[str, ...]
    why: str
    optional: bool = False


@dataclass(frozen=True)
class OptionContract:
    """A key the suite passes in a task's or actor's options (Ray's ray_option_utils tables)."""
    name: str
    why: str


ACCELERATOR_MANAGER = "ray._private.accelerators.accelerator.AcceleratorManager"
TENSOR_TRANSPORT_MANAGER = "ray.experimental.rdt.tensor_transport_manager.TensorTransportManager"
BASE_GROUP = "ray.util.collective.collective_group.base_collective_group.BaseGroup"

BASE_CLASSES: tuple[BaseClass, ...] = (
    BaseClass("accelerator.manager", ACCELERATOR_MANAGER,
              "the vendor's manager, injected into Ray's accelerator registry (cluster/injection.py)"),
    BaseClass("transport.manager", TENSOR_TRANSPORT_MANAGER,
              "the vendor's RDT transport, registered with register_tensor_transport (rdt/registration.py)"),
    BaseClass("collective.group_class", BASE_GROUP,
              "the vendor's collective backend, registered with register_collective_backend (collective/members.py)"),
    BaseClass("collective.rdt_transport", TENSOR_TRANSPORT_MANAGER,
              "RDT over the vendor's collective backend (collective/members.py)"),
)

# The classes whose shape the suite relies on beyond a manifest's own class: the metadata an RDT
# transport returns and receives, and the collective transport a backend's RDT subclasses.
RAY_CLASSES: tuple[str, ...] = (
    ACCELERATOR_MANAGER,
    TENSOR_TRANSPORT_MANAGER,
    "ray.experimental.rdt.tensor_transport_manager.TensorTransportMetadata",
    "ray.experimental.rdt.tensor_transport_manager.CommunicatorMetadata",
    "ray.experimental.rdt.collective_tensor_transport.CollectiveTensorTransport",
    BASE_GROUP,
)

CALLS: tuple[CallContract, ...] = (
    CallContract("ray.experimental.rdt.register_tensor_transport", 4, (),
                 "registers the vendor's transport: (name, devices, manager class, data type) (rdt/registration.py)"),
    CallContract("ray.util.collective.backend_registry.register_collective_backend", 2, (),
                 "registers the vendor's collective backend: (name, group class) (collective/members.py)"),
    CallContract("ray.experimental.collective.create_collective_group", 1, ("backend", "name"),
                 "the collective groups the RDT and collective harnesses create (rdt/pool.py, collective/context.py)"),
    CallContract("ray.util.placement_group.placement_group", 1, ("strategy", "bundle_label_selector"),
                 "bundle_label_selector placement (TP checks, topology/placement.py: placement_group(bundles, **kwargs))"),
    CallContract("ray.util.placement_group.placement_group", 1, ("topology_strategy",),
                 "topology-aware packing (the TP packing check is not applicable on a Ray without it)", optional=True),
)

OPTIONS: tuple[OptionContract, ...] = (
    OptionContract("label_selector", "label-selector placement of tasks and actors (topology and recovery checks)"),
    OptionContract("fallback_strategy", "fallback label selectors (topology/placement.py)"),
    OptionContract("enable_tensor_transport", "the RDT endpoints and collective members (rdt/pool.py, collective/context.py)"),
)

# Where Ray keeps the tables `.options()` validates against (moved between releases).
OPTION_MODULES: tuple[str, ...] = ("ray._common.ray_option_utils", "ray._private.ray_option_utils")
