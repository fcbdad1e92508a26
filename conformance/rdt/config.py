"""What the manifest says about the transport, and the one size knob of the transport checks.

The size knob exists because a certification run must move >= 256 MiB tensors and sweep the
bandwidth up to 256 MiB, while the project's own tests (`make test`) must stay fast on a
2-core laptop. It is read from the environment so that it reaches the pytest process that
`ray-conformance run` starts:

    RAY_CONFORMANCE_TRANSPORT_MAX_BYTES   largest payload (default 256MiB; e.g. 4MiB in make test)

It sets the large-tensor check's size (TR-005), the top of the bandwidth sweep (PF-*) and the
pairwise-matrix message size (capped at 64 MiB).
"""
from __future__ import annotations

import os
import re
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Mapping

from conformance.catalog.selection import SIZE_KNOB, SIZED
from conformance.errors import UserError
from conformance.jsontypes import Untrusted

if TYPE_CHECKING:
    from conformance.catalog.manifest import Manifest

MAX_BYTES_ENV = SIZE_KNOB   # recorded in the report's run record (conformance.catalog.selection.run_environment)
DEFAULT_MAX_BYTES = 256 * 1024 * 1024
MIN_SWEEP_BYTES = 1024  # knob: the sweep's smallest size (PF-001's method), not a bound
SWEEP_FACTOR = 4
MATRIX_MAX_BYTES = 64 * 1024 * 1024
# here (not in conformance.rdt.context) so that the judges, which import no Ray, read the same figures
INTRA_NODE_ENDPOINTS = 3      # endpoints on one node a check asks for at most (conformance.rdt.context.intra_node)
LATER_DEVICE_BYTES = 4096     # knob: payload size on the second and later device types (each_device)
BUILTIN_TRANSPORTS = ("GLOO", "NCCL", "NIXL", "CUDA_IPC")
COLLECTIVE_TRANSPORTS = {"GLOO": "gloo", "NCCL": "nccl"}   # need a collective group; value = backend
# What Ray's built-in transports' classes return (is_one_sided(), can_abort_transport()): Ray fixes
# them, so a record of a built-in named by the manifest is held to these (the judges' traits rules)
BUILTIN_TRAITS = {"GLOO": {"one_sided": False, "can_abort": False}, "NCCL": {"one_sided": False, "can_abort": False},
                  "NIXL": {"one_sided": True, "can_abort": True}, "CUDA_IPC": {"one_sided": True, "can_abort": False}}
TRAITS = ("one_sided", "can_abort")   # the transport's traits a check records (metrics.transport)


def builtin_traits(manifest: Untrusted) -> dict[str, bool] | None:
    """The traits Ray fixes for the transport the manifest names, when it names a built-in (no
    manager of the vendor's): None for a transport of the vendor's own, whose class answers.
    `manifest`: the manifest as a report records it (JSON a judge reads, so narrowed here)."""
    block = manifest.get("transport") if isinstance(manifest, Mapping) else None
    if not isinstance(block, Mapping) or block.get("manager") or not isinstance(block.get("name"), str):
        return None
    return BUILTIN_TRAITS.get(block["name"].upper())

_UNITS = {"": 1, "b": 1, "k": 1024, "kb": 1024, "kib": 1024, "m": 1024 ** 2, "mb": 1024 ** 2, "mib": 1024 ** 2,
          "g": 1024 ** 3, "gb": 1024 ** 3, "gib": 1024 ** 3}


def parse_size(text: str, *, what: str = MAX_BYTES_ENV) -> int:
    """'256MiB', '4m', '1048576' -> bytes (binary units)."""
    m = re.fullmatch(r"\s*([0-9]+)\s*([a-zA-Z]*)\s*", str(text))
    if not m or m.group(2).lower() not in _UNITS:
        raise UserError(f"{what}: {text!r} is not a size; expected e.g. 1048576, 4KiB, 16MiB, 1GiB")
    value = int(m.group(1)) * _UNITS[m.group(2).lower()]
    if value < MIN_SWEEP_BYTES:
        raise UserError(f"{what}: {text!r} is below the smallest size {MIN_SWEEP_BYTES} bytes")
    return value


def format_size(n: int) -> str:
    for unit, scale in (("GiB", 1024 ** 3), ("MiB", 1024 ** 2), ("KiB", 1024)):
        if n >= scale and n % scale == 0:
            return f"{n // scale} {unit}"
    return f"{n} B"


def size_key(n: int) -> str:
    """A size as a key of the performance sweep's record ("256MiB")."""
    return format_size(n).replace(" ", "")


def max_bytes() -> int:
    """The largest payload of this run (RAY_CONFORMANCE_TRANSPORT_MAX_BYTES, default 256 MiB)."""
    raw = os.environ.get(MAX_BYTES_ENV)
    return parse_size(raw) if raw else DEFAULT_MAX_BYTES


SIZE_CAP = SIZED   # the metric a check sized by max_bytes() records when the knob is set


def size_cap_record() -> dict[str, Any] | None:
    """What a check sized by max_bytes() records of the knob (metric SIZE_CAP), None when unset:
    the run's sizes then are the release's (DEFAULT_MAX_BYTES). The same value is in the report's
    run record (selection.environment), and `verify` shows every check that ran capped."""
    raw = os.environ.get(MAX_BYTES_ENV)
    return {"env": MAX_BYTES_ENV, "value": raw, "bytes": parse_size(raw)} if raw else None


def record_size_cap(metrics: dict[str, Any]) -> None:
    """Record the run's size knob in a check's metrics when it is set (what its judge reads)."""
    cap = size_cap_record()
    if cap is not None:
        metrics[SIZE_CAP] = cap


def recorded_max_bytes(metrics: object) -> int:
    """The largest payload a check's evidence must show: the release's DEFAULT_MAX_BYTES, unless
    the evidence records that the run's knob set another (its SIZE_CAP record, which must say the
    knob's name and a value that parses to the bytes it states). ValueError: a record that does not.

    A capped run moved smaller payloads than the release's: its checks are judged at the cap (the
    project's own tests run capped, and a capped pass is still evidence of what moved), but it is
    not evidence of the release's sizes, so the cap is part of the evidence `verify` shows beside
    the pass; a record without one is held to the release's sizes exactly."""
    cap = metrics.get(SIZE_CAP) if isinstance(metrics, Mapping) else None
    if cap is None:
        return DEFAULT_MAX_BYTES
    if not isinstance(cap, Mapping) or cap.get("env") != MAX_BYTES_ENV or not isinstance(cap.get("value"), str):
        raise ValueError(f"{SIZE_CAP} {str(cap)[:120]} is not a record of {MAX_BYTES_ENV} (env, value, bytes)")
    try:
        value = parse_size(cap["value"])
    except UserError as exc:
        raise ValueError(f"{SIZE_CAP}: {exc}") from None
    if cap.get("bytes") != value:
        raise ValueError(f"{SIZE_CAP} says {cap.get('bytes')} bytes but {MAX_BYTES_ENV}={cap['value']!r} is {value}")
    return value


def sweep_sizes(top: int, bottom: int = MIN_SWEEP_BYTES, factor: int = SWEEP_FACTOR) -> list[int]:
    """bottom, bottom*factor, ... up to and including top (top is always the last size)."""
    sizes, n = [], bottom
    while n < top:
        sizes.append(n)
        n *= factor
    sizes.append(top)
    return sizes


@dataclass(frozen=True)
class TransportConfig:
    """The manifest's `transport` block, normalised."""

    name: str                      # as Ray knows it (upper case)
    manager_ref: str | None        # "pkg.mod:Class" for a custom transport, None for a built-in
    devices: tuple[str, ...]       # torch device types the transport moves
    link_bandwidth_gbps: float | None        # transport.expected.link_bandwidth_gbps
    topology_link_gbps: float | None = None  # slowest min_bandwidth_gbps in topology.expected.links

    @property
    def builtin(self) -> bool:
        return self.manager_ref is None and self.name in BUILTIN_TRANSPORTS

    @property
    def collective_backend(self) -> str | None:
        """The collective backend a group must be created with (GLOO/NCCL), else None."""
        return COLLECTIVE_TRANSPORTS.get(self.name) if self.builtin else None

    @property
    def host_memory(self) -> bool:
        """Moves host memory only: the bandwidth reference is the same-run host copy."""
        return set(self.devices) == {"cpu"}

    @property
    def device_types(self) -> tuple[str, ...]:
        return self.devices


def transport_config(manifest: Manifest) -> TransportConfig | None:
    """None when the manifest declares no transport."""
    t, topology = manifest.view.transport, manifest.view.topology
    if t is None:
        return None
    nominal = t.expected.link_bandwidth_gbps
    links = (topology.expected.links if topology is not None and topology.expected is not None else None) or ()
    declared = [link.min_bandwidth_gbps for link in links if link.min_bandwidth_gbps]
    return TransportConfig(name=t.name.upper(), manager_ref=t.manager, devices=t.devices,
                           link_bandwidth_gbps=float(nominal) if nominal else None,
                           topology_link_gbps=float(min(declared)) if declared else None)
