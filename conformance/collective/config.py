"""What the manifest's optional `collective:` block says, as one frozen value (pure; no Ray).

    collective:
      backend: SIMCOLL                       # the name given to register_collective_backend
      group_class: "pkg.module:MyGroup"      # the BaseGroup subclass; omit for Ray's built-in GLOO
      register: "pkg.module:register"        # optional: the vendor's idempotent registration helper
      dtypes: [float32, int64]               # torch dtype names the backend claims
      ops: [allreduce, broadcast]            # the ops it claims (default: all seven of ALL_OPS; sendrecv is send + recv)
      nominal_link_gbps: 25                  # optional: the link the bandwidth is judged against
      rdt_transport: "pkg.module:MyRdt"      # optional: its CollectiveTensorTransport subclass (RDT over it)
      rdt_devices: [cpu]                     # the torch device types that transport moves (default: cpu)
      requires_device: true                  # availability needs the vendor device/library (GLOO: false)
      devices: [cpu]                         # torch device types the ops take tensors on (default: cpu)

A manifest without the block declares no collective backend: every collective check is then
not applicable, and no tier of the ladder needs one (the capability is simply not certified).
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from conformance.catalog.manifest_view import COLLECTIVE_DEFAULTS

if TYPE_CHECKING:
    from conformance.catalog.manifest import Manifest

# the schema's defaults of an absent `ops` / `dtypes` (catalog/manifest_view.py COLLECTIVE_DEFAULTS)
ALL_OPS: tuple[str, ...] = tuple(COLLECTIVE_DEFAULTS["ops"])
REDUCE_OPS = ("SUM", "PRODUCT", "MIN", "MAX")
BUILTIN_BACKENDS = ("GLOO",)
DEFAULT_DTYPES: tuple[str, ...] = tuple(COLLECTIVE_DEFAULTS["dtypes"])
POOL_SIZE = 3     # the members the checks start, rank i on node i mod nodes (CC-005: "a group of three")
NO_BACKEND = "the manifest declares no collective backend (add a `collective` block to certify one)"


@dataclass(frozen=True)
class CollectiveConfig:
    backend: str                     # upper-cased, as Ray's registry keys it
    group_class: str | None          # import ref, None for a built-in backend
    register: str | None
    dtypes: tuple[str, ...]
    ops: tuple[str, ...]
    nominal_link_gbps: float | None
    rdt_transport: str | None = None   # import ref of the CollectiveTensorTransport subclass; None: no RDT claimed
    rdt_devices: tuple[str, ...] = ("cpu",)
    requires_device: bool = True
    devices: tuple[str, ...] = ("cpu",)

    @property
    def builtin(self) -> bool:
        return self.group_class is None

    @property
    def ray_backend(self) -> str:
        """The backend string Ray's group APIs take (GLOO is spelled in lower case there)."""
        return self.backend.lower() if self.builtin else self.backend

    def claims(self, op: str) -> bool:
        return op in self.ops


def collective_config(manifest: Manifest) -> CollectiveConfig | None:
    """The manifest's collective block (already schema-validated), or None when it has none."""
    view = getattr(manifest, "view", None)
    block = view.collective if view is not None else None
    if block is None:
        return None
    return CollectiveConfig(backend=block.backend.upper(), group_class=block.group_class, register=block.register,
                            dtypes=block.dtypes, ops=block.ops, nominal_link_gbps=block.nominal_link_gbps,
                            rdt_transport=block.rdt_transport, rdt_devices=block.rdt_devices,
                            requires_device=block.requires_device, devices=block.devices)
