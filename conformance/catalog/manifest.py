"""The vendor manifest: parse, validate against the schema, resolve paths, and import checks.

Every problem becomes a one-line UserError that names the field (exit 2 in the CLI).
"""
from __future__ import annotations

import copy
import importlib
import importlib.resources
import re
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Mapping

from conformance.catalog.datafiles import read_yaml_or_json, sha256_bytes, validate
from conformance.catalog.manifest_view import ManifestView
from conformance.catalog.vendor_calls import IMPORT, VendorHang, bounded_call
from conformance.errors import UserError

if TYPE_CHECKING:  # hints only: importing Ray here would slow every CLI command
    from ray._private.accelerators.accelerator import AcceleratorManager


@dataclass
class Manifest:
    """A validated manifest plus where it came from; `view` is its typed form (built once, here)."""

    data: dict[str, Any]
    path: Path
    sha256: str
    view: ManifestView = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        self.view = ManifestView.from_json(self.data)

    @property
    def base_dir(self) -> Path:
        return self.path.parent

    @property
    def product_slug(self) -> str:
        return slugify(self.view.product)

    @property
    def resource_name(self) -> str:
        return self.view.accelerator.resource_name

    @property
    def devices_per_node(self) -> int:
        return int(self.view.accelerator.expected.devices_per_node)

    @property
    def accelerator_type(self) -> str:
        return self.view.accelerator.expected.accelerator_type

    @property
    def quantities(self) -> dict[str, list[float]]:
        q = self.view.accelerator.quantities
        return {"valid": list(q.valid), "invalid": list(q.invalid)}

    @property
    def accelerator_env(self) -> dict[str, str]:
        return dict(self.view.accelerator.env)

    def host_overlay(self, kind: str) -> dict[str, str] | None:
        """accelerator.env with the manifest's overlay for a host of `kind` (accelerator.hosts), or None."""
        overlay = self.view.accelerator.hosts.overlay(kind)
        return None if overlay is None else {**self.accelerator_env, **overlay}

    @property
    def torch_device(self) -> str | None:
        """accelerator.torch_device: "pkg.mod:fn" registering the vendor's torch device, or None."""
        return self.view.accelerator.torch_device

    @property
    def noset_env_var(self) -> str | None:
        return self.view.accelerator.noset_env_var

    @property
    def python_path(self) -> list[str]:
        """Absolute folders to put on sys.path / PYTHONPATH for driver, nodes and workers."""
        return [str((self.base_dir / p).resolve()) for p in self.view.plugin.python_path]


def slugify(text: str) -> str:
    slug = re.sub(r"[^a-z0-9]+", "-", text.lower()).strip("-")
    return slug or "product"


BUILTIN_PREFIX = "builtin:"


def builtin_manifests() -> dict[str, Path]:
    """The manifests shipped in the package, by name: `simulated`, `simulated-2node`, ...

    They let an installed wheel certify the simulated accelerator without a source checkout
    (`ray-conformance run --manifest builtin:simulated-2node`).
    """
    folder = Path(str(importlib.resources.files("conformance") / "simulated"))
    found = {}
    for f in sorted(folder.glob("manifest*.yaml")):
        found["simulated" + f.stem[len("manifest"):]] = f
    return found


def resolve_manifest_path(path: str | Path) -> Path:
    """A file path, or `builtin:NAME` for a manifest shipped in the package."""
    text = str(path)
    if text.startswith(BUILTIN_PREFIX):
        name = text[len(BUILTIN_PREFIX):]
        known = builtin_manifests()
        if name not in known:
            raise UserError(f"manifest: unknown built-in manifest {name!r}; expected one of "
                            f"{', '.join(BUILTIN_PREFIX + n for n in known)}")
        return known[name]
    return Path(path).resolve() if text else Path("")


def _check_names(raw: dict[str, Any]) -> None:
    """The vendor and product a report shows must print as they compare (verify's `names` line
    would refuse the report): refused here, before a run is spent on them."""
    from conformance import identity

    problems = identity.report_name_problems({"manifest": raw})
    if problems:
        raise UserError(f"manifest: {problems[0]}; write names with visible characters and plain spaces "
                        "(verify refuses a report whose names could print like another's)")


def cross_problems(raw: Mapping[str, Any]) -> list[str]:
    """What a schema-valid manifest contradicts in itself (pure): the checks the loader makes after
    the schema, which verify makes again on the manifest a report embeds (a run could not have
    accepted one that fails them)."""
    found = raw.get("cluster")
    cluster: Mapping[str, Any] = found if isinstance(found, Mapping) else {}
    nodes, node_env = cluster.get("nodes", 1), cluster.get("node_env", [])
    if isinstance(nodes, int) and isinstance(node_env, list) and len(node_env) > nodes:
        return [f"cluster.node_env: {len(node_env)} entries for {nodes} node(s); expected at most one per node"]
    return []


def load_manifest(path: str | Path) -> Manifest:
    """Read and schema-validate a manifest (no imports), and build its typed view."""
    path = resolve_manifest_path(path)
    raw = read_yaml_or_json(path, what="manifest")
    if not isinstance(raw, dict):
        raise UserError(f"manifest: {path}: expected a mapping at the top level, got {type(raw).__name__}")
    validate(raw, "manifest", what="manifest")
    _check_names(raw)
    manifest = Manifest(data=copy.deepcopy(raw), path=path, sha256=sha256_bytes(path.read_bytes()))
    for problem in cross_problems(raw):
        raise UserError(f"manifest: {problem}")
    for folder in manifest.view.plugin.python_path:
        if not (path.parent / folder).is_dir():
            raise UserError(f"manifest: plugin.python_path: folder not found: {folder} (relative to {path.parent})")
    return manifest


def import_object(ref: str, *, field: str, python_path: list[str]) -> Any:
    """Import 'module.path:Attr' with the manifest's python_path first on sys.path."""
    for p in reversed(python_path):
        if p not in sys.path:
            sys.path.insert(0, p)
    module_name, _, attr = ref.partition(":")
    try:
        module = bounded_call(importlib.import_module, module_name, method=IMPORT + module_name,
                              where=f"manifest: {field}: ")
    except VendorHang:
        raise
    except Exception as exc:  # noqa: BLE001 - any import failure is the user's input problem
        raise UserError(f"manifest: {field}: cannot import module {module_name!r}: "
                        f"{exc.__class__.__name__}: {exc}".splitlines()[0]) from None
    obj: Any = module
    for part in attr.split("."):
        if not hasattr(obj, part):
            raise UserError(f"manifest: {field}: module {module_name!r} has no attribute {attr!r}")
        obj = getattr(obj, part)
    return obj


def resolve_manager(manifest: Manifest) -> type[AcceleratorManager]:
    """Import the AcceleratorManager class and check it against the manifest (resource name)."""
    from ray._private.accelerators.accelerator import AcceleratorManager

    ref = manifest.view.accelerator.manager
    cls = import_object(ref, field="accelerator.manager", python_path=manifest.python_path)
    if not (isinstance(cls, type) and issubclass(cls, AcceleratorManager)):
        raise UserError(f"manifest: accelerator.manager: {ref} is not an AcceleratorManager subclass")
    # Abstract methods left unimplemented are not refused here: Ray never instantiates managers
    # (all static methods), and Ray's own NvidiaGPUAcceleratorManager leaves
    # get_current_node_additional_resources to the base class. DP-001 judges what they return.
    try:
        name = bounded_call(cls.get_resource_name, method="get_resource_name", where="manifest: accelerator.manager: ")
    except VendorHang:
        raise
    except Exception as exc:  # noqa: BLE001
        raise UserError(f"manifest: accelerator.manager: {ref}.get_resource_name() raised "
                        f"{exc.__class__.__name__}") from None
    if name != manifest.resource_name:
        raise UserError(f"manifest: accelerator.resource_name: {manifest.resource_name!r} does not equal "
                        f"{ref}.get_resource_name() = {name!r}")
    return cls


def resolve_transport(manifest: Manifest) -> type | None:
    """Import the TensorTransportManager class of a custom transport (None for built-ins)."""
    t = manifest.view.transport
    if t is None or not t.manager:
        return None
    from ray.experimental.rdt.tensor_transport_manager import TensorTransportManager

    cls = import_object(t.manager, field="transport.manager", python_path=manifest.python_path)
    if not (isinstance(cls, type) and issubclass(cls, TensorTransportManager)):
        raise UserError(f"manifest: transport.manager: {t.manager} is not a TensorTransportManager subclass")
    return cls


def resolve_collective(manifest: Manifest) -> None:
    """Import what the collective block names (group_class, register, rdt_transport) and check each
    is what Ray takes: a name that does not exist is refused here, not found by CC-001 mid-run."""
    block = manifest.view.collective
    if block is None:
        return
    from ray.util.collective.collective_group.base_collective_group import BaseGroup

    if block.group_class:
        cls = import_object(block.group_class, field="collective.group_class", python_path=manifest.python_path)
        if not (isinstance(cls, type) and issubclass(cls, BaseGroup)):
            raise UserError(f"manifest: collective.group_class: {block.group_class} is not a "
                            "ray.util.collective BaseGroup subclass")
    if block.register:
        helper = import_object(block.register, field="collective.register", python_path=manifest.python_path)
        if isinstance(helper, type) or not callable(helper):
            raise UserError(f"manifest: collective.register: {block.register} is not a function (expected a "
                            "helper the suite calls with no arguments to register the backend)")
    if block.rdt_transport:
        from ray.experimental.rdt.tensor_transport_manager import TensorTransportManager

        rdt = import_object(block.rdt_transport, field="collective.rdt_transport", python_path=manifest.python_path)
        if not (isinstance(rdt, type) and issubclass(rdt, TensorTransportManager)):
            raise UserError(f"manifest: collective.rdt_transport: {block.rdt_transport} is not a "
                            "TensorTransportManager subclass")


def resolve_provider(manifest: Manifest) -> Any:
    """Import the topology provider (a callable the suite runs on every node), if one is named."""
    ref = manifest.view.topology.provider if manifest.view.topology else None
    if not ref:
        return None
    obj = import_object(ref, field="topology.provider", python_path=manifest.python_path)
    if isinstance(obj, type) or not callable(obj):
        raise UserError(f"manifest: topology.provider: {ref} is not a function (expected a callable that "
                        "returns the node's topology description)")
    return obj


def expected_contradictions(manifest: Manifest, manager: type[AcceleratorManager]) -> list[str]:
    """Where accelerator.expected contradicts what the manager reports on this machine.

    Only judged where the manager sees devices here: on a laptop driving a remote cluster it
    reports none, and the preflight compares on every node instead.
    """
    with manifest_environment(manifest):
        where = "manifest: accelerator.manager: "
        try:
            count = bounded_call(manager.get_current_node_num_accelerators,
                                 method="get_current_node_num_accelerators", where=where)
            kind = bounded_call(manager.get_current_node_accelerator_type, method="get_current_node_accelerator_type",
                                where=where) if count else None
        except VendorHang:
            raise
        except Exception as exc:  # noqa: BLE001 - a raising manager is DP-001's to judge; say it here too
            return [f"accelerator.expected: cannot compare, the manager raised {exc.__class__.__name__}"]
    if not isinstance(count, int) or isinstance(count, bool) or count <= 0:
        return []
    out = []
    want = manifest.devices_per_node
    if count != want:
        out.append(f"accelerator.expected.devices_per_node: {want}, but get_current_node_num_accelerators() "
                   f"reports {count} here")
    if kind != manifest.accelerator_type:
        out.append(f"accelerator.expected.accelerator_type: {manifest.accelerator_type!r}, but "
                   f"get_current_node_accelerator_type() reports {kind!r} here")
    return out


BUILTIN_TRANSPORTS = ("GLOO", "NCCL", "NIXL", "CUDA_IPC")


def check_manifest(path: str | Path) -> Manifest:
    """Full validation: schema, files, imports and cross-checks. What `validate-manifest` runs."""
    manifest = load_manifest(path)
    with manifest_environment(manifest):
        resolve_manager(manifest)
        t = manifest.view.transport
        if t is not None and not t.manager and t.name.upper() not in BUILTIN_TRANSPORTS:
            raise UserError(f"manifest: transport.manager: required for custom transport {t.name!r} "
                            f"(built-ins: {', '.join(BUILTIN_TRANSPORTS)})")
        resolve_transport(manifest)
        resolve_provider(manifest)
        resolve_collective(manifest)
    return manifest


class manifest_environment:
    """Temporarily apply the manifest's accelerator.env while importing/validating."""

    def __init__(self, manifest: Manifest) -> None:
        self.env = manifest.accelerator_env
        self.saved: dict[str, str | None] = {}

    def __enter__(self) -> None:
        import os
        for k, v in self.env.items():
            self.saved[k] = os.environ.get(k)
            os.environ[k] = v

    def __exit__(self, *exc: object) -> None:
        import os
        for k, v in self.saved.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v


def declared_device_nodes(data: Mapping[str, Any]) -> int:
    """How many of the nodes the suite starts from the manifest `data` run under the accelerator
    environment it declares (cluster.node_env overrides none of accelerator.env's values): each
    of those holds accelerator.expected.devices_per_node (the preflight's rule), so a record of
    such a cluster with fewer nodes with devices has dropped or zeroed one. A node whose
    node_env changes a declared value (SIMACC_NUM_DEVICES: "0", a CPU-only node) may hold none."""
    acc = data.get("accelerator") if isinstance(data, Mapping) else None
    env = acc.get("env") if isinstance(acc, Mapping) else None
    env = env if isinstance(env, Mapping) else {}
    cluster = data.get("cluster") if isinstance(data, Mapping) else None
    cluster = cluster if isinstance(cluster, Mapping) else {}
    nodes = cluster.get("nodes", 1)
    nodes = nodes if isinstance(nodes, int) and not isinstance(nodes, bool) and nodes >= 1 else 1
    per_node = cluster.get("node_env")
    per_node = per_node if isinstance(per_node, list) else []
    changed = sum(1 for entry in per_node[:nodes] if isinstance(entry, Mapping)   # never range(nodes): a report's count is untrusted
                  and any(k in env and not same_env_value(v, env[k]) for k, v in entry.items()))
    return nodes - changed


def same_env_value(a: object, b: object) -> bool:
    """Two spellings of one environment value: equal as text once trimmed, or as numbers ("04" and
    "4", "4.0"): a node_env entry that restates a declared value is not a change (held-out round 34,
    M1: `SIMACC_NUM_DEVICES: "04"` made a node of 4 devices one that may hold none)."""
    x, y = str(a).strip(), str(b).strip()
    if x == y:
        return True
    try:
        return float(x) == float(y)
    except ValueError:
        return False
