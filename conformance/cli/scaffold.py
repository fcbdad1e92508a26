"""`ray-conformance init DIR`: the starting point of a new plugin, written so that it already works.

The manager is complete (it counts devices from an environment variable until the vendor puts
their driver's enumeration in); the topology provider and the transport are stubs that raise
NotImplementedError naming the doc section and the checks that judge them. The manifest
passes `validate-manifest` as written. Existing files are never overwritten.
"""
from __future__ import annotations

import string
from pathlib import Path

MANAGER = '''"""${product}: the Ray AcceleratorManager (written by `ray-conformance init`; yours to edit).

Ray calls these static methods in the process that starts a node (count, type, labels), in every
process that submits work (validate_resource_request_quantity) and in every worker (the
visible-devices variable). docs/writing-a-plugin.md explains what each check expects; the
check ids are named beside each method.
"""
from __future__ import annotations

import logging
import os
from typing import Dict, List, Optional, Tuple

from ray._private.accelerators.accelerator import AcceleratorManager

logger = logging.getLogger(__name__)

RESOURCE_NAME = "${resource}"
VISIBLE_DEVICES_ENV_VAR = "${resource}_VISIBLE_DEVICES"
# Until the driver's enumeration is wired in, the device count and type come from the
# environment (the manifest's accelerator.env sets them for every node the suite starts).
NUM_DEVICES_ENV_VAR = "${resource}_NUM_DEVICES"
TYPE_ENV_VAR = "${resource}_TYPE"
# Stand-ins for the vendor library until it is wired in: the manifest's accelerator.hosts
# overlays set them to show how a host without the driver, a failing library and an unknown
# device look (DP-017, DP-018). Replace _open_library / _product_of with the real calls.
DRIVER_ENV_VAR = "${resource}_DRIVER"            # "absent": no driver; "broken": the library raises
DEVICE_ID_ENV_VAR = "${resource}_DEVICE_ID"
KNOWN_PRODUCTS = {"0x0001": "${accel_type}"}     # device id -> accelerator type
# DP-020: operators who pin devices themselves set this to 1; Ray's RAY_EXPERIMENTAL_NOSET_* convention.
NOSET_ENV_VAR = "RAY_EXPERIMENTAL_NOSET_${resource}_VISIBLE_DEVICES"


def _open_library() -> bool:
    """Whether the vendor library loads on this host (False: no driver here). Raises on a broken one."""
    driver = os.environ.get(DRIVER_ENV_VAR, "present")
    if driver == "broken":
        raise OSError("${resource} library: driver version mismatch")
    return driver != "absent"


def _product_of() -> Optional[str]:
    return KNOWN_PRODUCTS.get(os.environ.get(DEVICE_ID_ENV_VAR, "0x0001"))


class ${cls}(AcceleratorManager):
    """${product}."""

    @staticmethod
    def get_resource_name() -> str:
        # DP-002: a valid Ray resource name, equal to the manifest's accelerator.resource_name.
        return RESOURCE_NAME

    @staticmethod
    def get_visible_accelerator_ids_env_var() -> str:
        # DP-005: the variable named here is the one set_current_process_visible_accelerator_ids writes.
        return VISIBLE_DEVICES_ENV_VAR

    @staticmethod
    def get_current_node_num_accelerators() -> int:
        # DP-001: an int >= 0. Replace with your driver's enumeration; never raise on a node
        # without devices or with a failing library (DP-017, DP-018): warn and return 0.
        try:
            if not _open_library():
                return 0
        except Exception as exc:  # noqa: BLE001 - a failing library means "no accelerator here"
            logger.warning("${resource}: the vendor library failed (%s); no devices detected", exc)
            return 0
        try:
            return max(0, int(os.environ.get(NUM_DEVICES_ENV_VAR, "0")))
        except ValueError:
            return 0

    @staticmethod
    def get_current_node_accelerator_type() -> Optional[str]:
        # DP-001: a str, or None on a node without devices; DP-018: None, with a warning, for a
        # device id that is no known product.
        if ${cls}.get_current_node_num_accelerators() == 0:
            return None
        product = _product_of()
        if product is None:
            logger.warning("${resource}: unknown device id %s; no accelerator type",
                           os.environ.get(DEVICE_ID_ENV_VAR))
            return None
        return os.environ.get(TYPE_ENV_VAR, product)

    @staticmethod
    def get_current_node_additional_resources() -> Optional[Dict[str, float]]:
        # DP-001: None, or a dict of extra resources (e.g. device memory) this node offers.
        return None

    @staticmethod
    def validate_resource_request_quantity(quantity: float) -> Tuple[bool, Optional[str]]:
        # DP-009/DP-010: (True, None) to accept; (False, "why") to refuse. Here: fractions below 1
        # share a device, more than 1 must be whole devices.
        if quantity > 1 and not float(quantity).is_integer():
            return (False, f"{RESOURCE_NAME} requests above 1 must be whole devices, got {quantity}")
        return (True, None)

    @staticmethod
    def get_current_process_visible_accelerator_ids() -> Optional[List[str]]:
        # DP-004: None when the variable is unset ("all devices"); [] when it is set but empty
        # ("no device"); else the ids as str (DP-003).
        value = os.environ.get(VISIBLE_DEVICES_ENV_VAR)
        if value is None:
            return None
        if value == "":
            return []
        return [v.strip() for v in value.split(",")]

    @staticmethod
    def set_current_process_visible_accelerator_ids(ids: List[str]) -> None:
        # DP-003/DP-005: write exactly these ids (as given, comma-separated) to the variable above;
        # DP-020: leave it alone when the operator opted out with NOSET_ENV_VAR=1.
        if os.environ.get(NOSET_ENV_VAR) == "1":
            return
        os.environ[VISIBLE_DEVICES_ENV_VAR] = ",".join(str(i) for i in ids)
'''

TOPOLOGY = '''"""${product}: the topology provider named in the manifest's topology.provider.

The suite calls describe_node() in a task pinned to every node, holding all of the node's
devices, and checks what it returns against schemas/topology.schema.json and what Ray sees
(TL-004 .. TL-008; docs/topology.md, "The topology description").
"""
from __future__ import annotations

from typing import Any, Dict, Optional


def describe_node() -> Optional[Dict[str, Any]]:
    """This node's devices, links and domains (None on a node without devices)."""
    raise NotImplementedError(
        "describe_node: return this node's topology description (devices, links, domains) as "
        "docs/topology.md describes it; the reference is conformance/simulated/topology.py. "
        "Or remove topology.provider from the manifest (the TL description checks are then not applicable).")
'''

TRANSPORT = '''"""${product}: the Ray Direct Transport (RDT) tensor transport named in the manifest's transport.

Every method raises NotImplementedError until it is written; docs/transport.md explains when Ray
calls each one and what TR-001 .. TR-020 check. The references are conformance/simulated/transport.py
(one-sided: the receiver reads the source's buffer) and conformance/simulated/two_sided.py (two-sided:
the source sends, the receiver receives; docs/transport.md, "Declaring the transport").
Or remove `transport:` from the manifest (beta and stable then need a transport).
"""
from __future__ import annotations

from typing import Any, List, Optional

from ray.experimental.rdt import CommunicatorMetadata, TensorTransportManager, TensorTransportMetadata

TRANSPORT_NAME = "${transport}"


def _todo(method: str) -> NotImplementedError:
    return NotImplementedError(f"${transport}.{method}: not written yet; see docs/transport.md and "
                               "conformance/simulated/transport.py")


class ${transport_cls}(TensorTransportManager):
    def tensor_transport_backend(self) -> str:
        return TRANSPORT_NAME

    @staticmethod
    def is_one_sided() -> bool:
        raise _todo("is_one_sided")

    @staticmethod
    def can_abort_transport() -> bool:
        raise _todo("can_abort_transport")

    def actor_has_tensor_transport(self, actor: Any) -> bool:
        raise _todo("actor_has_tensor_transport")

    def extract_tensor_transport_metadata(self, obj_id: str, rdt_object: List[Any]) -> TensorTransportMetadata:
        raise _todo("extract_tensor_transport_metadata")

    def get_communicator_metadata(self, src_actor: Any, dst_actor: Any,
                                  backend: Optional[str] = None) -> CommunicatorMetadata:
        raise _todo("get_communicator_metadata")

    def recv_multiple_tensors(self, obj_id: str, tensor_transport_metadata: TensorTransportMetadata,
                              communicator_metadata: CommunicatorMetadata,
                              target_buffers: Optional[List[Any]] = None) -> List[Any]:
        raise _todo("recv_multiple_tensors")

    def send_multiple_tensors(self, tensors: List[Any], tensor_transport_metadata: TensorTransportMetadata,
                              communicator_metadata: CommunicatorMetadata) -> None:
        raise _todo("send_multiple_tensors")

    def garbage_collect(self, obj_id: str, tensor_transport_meta: TensorTransportMetadata,
                        tensors: List[Any]) -> None:
        raise _todo("garbage_collect")

    def abort_transport(self, obj_id: str, communicator_metadata: CommunicatorMetadata) -> None:
        raise _todo("abort_transport")
'''

COLLECTIVE = '''\"\"\"${product}: the ray.util.collective backend named in the manifest's collective block.

Every op raises NotImplementedError until it is written; docs/collective.md explains what
CC-001 .. CC-012 check. What Ray 2.60 passes (from its ray/util/collective/collective.py):
* every tensor arrives wrapped in a list: allreduce([tensor], opts), broadcast([tensor], opts);
* barrier() is called with NO arguments (g.barrier()): keep the options parameter's default;
* allgather(tensor_lists, tensors, opts): tensor_lists = [[out_0, ..., out_{world-1}]] to fill,
  tensors = [input];
* reducescatter(tensors, tensor_lists, opts): tensors = [output] to fill,
  tensor_lists = [[in_0, ..., in_{world-1}]] (the other way round from allgather);
* the options arrive as the options *class* when the caller gives none: read fields, do not
  expect an instance of your own.
For RDT over this backend (collective.rdt_transport, CC-011/CC-012): subclass Ray's
CollectiveTensorTransport and override tensor_transport_backend() only; a subclass of Ray's
TensorTransportMetadata / CommunicatorMetadata dataclasses needs a default on every field it adds.
\"\"\"
from __future__ import annotations

from typing import Any, List

from ray.util.collective.collective_group.base_collective_group import BaseGroup
from ray.util.collective.types import (AllGatherOptions, AllReduceOptions, BarrierOptions, BroadcastOptions,
                                       ReduceOptions, ReduceScatterOptions)

BACKEND_NAME = "${collective}"


def _todo(method: str) -> NotImplementedError:
    return NotImplementedError(f"${collective}.{method}: not written yet; see docs/collective.md")


class ${collective_cls}(BaseGroup):
    def __init__(self, world_size: int, rank: int, group_name: str) -> None:   # exactly what Ray passes
        super().__init__(world_size, rank, group_name)

    @classmethod
    def backend(cls) -> str:
        return BACKEND_NAME

    @classmethod
    def check_backend_availability(cls) -> bool:
        # True only where your library and device are usable; False (never raising) elsewhere (CC-002)
        raise _todo("check_backend_availability")

    def allreduce(self, tensors: List[Any], allreduce_options: Any = AllReduceOptions()) -> None:
        raise _todo("allreduce")

    def barrier(self, barrier_options: Any = BarrierOptions()) -> None:
        raise _todo("barrier")

    def reduce(self, tensors: List[Any], reduce_options: Any = ReduceOptions()) -> None:
        raise _todo("reduce")

    def allgather(self, tensor_lists: List[List[Any]], tensors: List[Any],
                  allgather_options: Any = AllGatherOptions()) -> None:
        raise _todo("allgather")

    def broadcast(self, tensors: List[Any], broadcast_options: Any = BroadcastOptions()) -> None:
        raise _todo("broadcast")

    def reducescatter(self, tensors: List[Any], tensor_lists: List[List[Any]],
                      reducescatter_options: Any = ReduceScatterOptions()) -> None:
        raise _todo("reducescatter")

    def send(self, tensors: List[Any], send_options: Any) -> None:
        raise _todo("send")

    def recv(self, tensors: List[Any], recv_options: Any) -> None:
        raise _todo("recv")


def register() -> None:
    \"\"\"Register the backend in this process. The suite calls it with no arguments, in the driver
    and in every member actor, and again in a job's worker_process_setup_hook (CC-003): Ray's
    register_collective_backend raises on a second registration of a name, so look first.\"\"\"
    from ray.util.collective.backend_registry import _global_registry, register_collective_backend

    if not _global_registry.is_registered(BACKEND_NAME):
        register_collective_backend(BACKEND_NAME, ${collective_cls})
'''

MANIFEST_HEAD = '''# The manifest of ${product} (written by `ray-conformance init`). Schema:
# conformance/catalog/schemas/manifest.schema.json. Check it: ray-conformance validate-manifest manifest.yaml
schema_version: 1
vendor: "${vendor}"
product: "${product}"
plugin:
  python_path: ["."]              # folders relative to this file, importable in driver, nodes and workers
  version: "0.1.0"
accelerator:
  manager: "${package}.manager:${cls}"
  resource_name: ${resource}
  env: {${resource}_NUM_DEVICES: "4", ${resource}_TYPE: "${accel_type}"}   # drop once the driver enumerates
  expected:
    devices_per_node: 4
    accelerator_type: ${accel_type}
  quantities:                     # your request policy, as examples the checks try
    valid: [0.5, 1, 2]
    invalid: [1.5]                # DP-014 (a MUST) is not applicable without an invalid quantity
  # How other hosts look, as environment overlays over accelerator.env. Without them DP-017 (a MUST of
  # experimental) and DP-018 are not applicable, and a not_applicable never counts as passed.
  hosts:
    without_device: {${resource}_DRIVER: absent}        # a CPU-only host: no device, no driver
    library_error: {${resource}_DRIVER: broken}         # the vendor library raises during detection
    unknown_device: {${resource}_DEVICE_ID: "0xffff"}   # a device id that is no known product
  noset_env_var: RAY_EXPERIMENTAL_NOSET_${resource}_VISIBLE_DEVICES   # DP-020: the opt-out the manager honours
'''
MANIFEST_TOPOLOGY = '''topology:
  provider: "${package}.topology:describe_node"   # TL-004..TL-008 are not applicable without it
  expected:                       # what every node must describe; TL-006 is not applicable without it
    devices_per_node: 4
'''
MANIFEST_TRANSPORT = '''transport:                        # every TR and PF check (and FR-012..FR-016) needs one
  name: ${transport}
  manager: "${package}.transport:${transport_cls}"
  devices: [cpu]
  # expected: {link_bandwidth_gbps: 25}   # once devices names your device: PF-002's reference (not applicable without)
'''
MANIFEST_COLLECTIVE = '''collective:                       # CC-001..CC-012, the collective profile (docs/collective.md)
  backend: ${collective}
  group_class: "${package}.collective:${collective_cls}"
  register: "${package}.collective:register"   # called with no arguments, maybe more than once
  # dtypes: [float32]             # the default; name every dtype you claim
  # ops: [allreduce, reduce, broadcast, allgather, reducescatter, barrier, sendrecv]   # the default: all seven
  requires_device: true           # CC-002 then reads accelerator.hosts: hide your collective library there too
'''
MANIFEST_TAIL = '''cluster:
  nodes: 1
'''


def _class_name(package: str, suffix: str) -> str:
    return "".join(part.capitalize() for part in package.split("_") if part) + suffix


def skeleton_files(*, vendor: str, product: str, resource: str, package: str, topology: bool,
                   transport: bool, collective: bool = True) -> dict[str, str]:
    """Relative path -> text of every file of the skeleton (pure)."""
    values = {"vendor": vendor.replace('"', "'"), "product": product.replace('"', "'"), "resource": resource,
              "package": package, "cls": _class_name(package, "Manager"),
              "accel_type": f"{resource.replace('_', '-')}-1", "transport": f"{resource.replace('_', '')}XFER",
              "transport_cls": _class_name(package, "Transport"),
              "collective": f"{resource.replace('_', '')}COLL", "collective_cls": _class_name(package, "Group")}

    def fill(template: str) -> str:
        return string.Template(template).substitute(values)

    files = {f"{package}/__init__.py": f'"""{values["product"]}: a Ray accelerator plugin."""\n',
             f"{package}/manager.py": fill(MANAGER)}
    manifest = fill(MANIFEST_HEAD)
    if topology:
        files[f"{package}/topology.py"] = fill(TOPOLOGY)
        manifest += fill(MANIFEST_TOPOLOGY)
    if transport:
        files[f"{package}/transport.py"] = fill(TRANSPORT)
        manifest += fill(MANIFEST_TRANSPORT)
    if collective:
        files[f"{package}/collective.py"] = fill(COLLECTIVE)
        manifest += fill(MANIFEST_COLLECTIVE)
    files["manifest.yaml"] = manifest + fill(MANIFEST_TAIL)
    return files


def write_skeleton(folder: Path, **options: object) -> tuple[list[Path], list[Path]]:
    """Write the skeleton into `folder`; returns (written, kept because they existed)."""
    written, kept = [], []
    for rel, text in skeleton_files(**options).items():  # type: ignore[arg-type]  # skeleton_files' keywords, passed through
        path = folder / rel
        if path.exists():
            kept.append(path)
            continue
        path.parent.mkdir(parents=True, exist_ok=True)
        with open(path, "x") as f:  # "x": never replaces a file created meanwhile
            f.write(text)
        written.append(path)
    return written, kept
