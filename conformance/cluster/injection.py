"""Make a vendor AcceleratorManager visible to Ray without editing Ray's files.

Ray 2.60 finds managers through a hard-coded set (`ray._private.accelerators.
get_all_accelerator_managers`); there is no plug-in point (ray-project/ray#40880). We add the
manifest's manager to that set in every process that needs it:

* the process that starts a node (driver for `ray.init`/`cluster_utils`, or `ray start`):
  resources, `accelerator_type:<T>` and the `ray.io/accelerator-type` label;
* every submitter: `validate_resource_request_quantity` at `.options()`/`.remote()`;
* every worker: Ray sets the per-task visible-devices variable through the manager.

The managers to add are named in the environment variable RAY_CONFORMANCE_ACCELERATORS
("pkg.module:Class[,pkg.module:Other]"), so the same mechanism works in all three places:
workers inherit the variable from their raylet, and the suite preloads
`conformance.cluster.inject_autoinstall` into workers (`preload_python_modules`). For `ray start` on a
real cluster, `ray-conformance inject install` writes a `.pth` file that activates the same
hook at interpreter start, inert unless the variable is set.

Also: the resource must be a *unit-instance* resource or every task sees device "0"; see
`unit_instance_resources()`.

The vendor's torch device (the manifest's `accelerator.torch_device`, "pkg.mod:fn") travels the
same way in RAY_CONFORMANCE_TORCH_DEVICE: every process that imports torch calls the function
right after torch's import completes (as importing torch_npu registers npu), and a process that
never imports torch never pays for it.
"""
from __future__ import annotations

import os
import sys
from typing import TYPE_CHECKING, Callable, Iterable, Sequence

if TYPE_CHECKING:
    from importlib.machinery import ModuleSpec
    from types import ModuleType

ENV_VAR = "RAY_CONFORMANCE_ACCELERATORS"
DEVICE_ENV_VAR = "RAY_CONFORMANCE_TORCH_DEVICE"
# Ray 2.60's default custom_unit_instance_resources (read from the raylet's RAY_CONFIG defaults).
# The system config value *replaces* the default, so we keep these and append the vendor's.
RAY_DEFAULT_UNIT_INSTANCE_RESOURCES = ("neuron_cores", "TPU", "NPU", "HPU", "RBLN", "FURIOSA", "TTNPU", "MBLT")
AUTOINSTALL_MODULE = "conformance.cluster.inject_autoinstall"
PTH_NAME = "ray_conformance_inject.pth"

_installed: list[type] = []


# Ray's predefined_unit_instance_resources: already unit-instance, never listed again.
RAY_PREDEFINED_UNIT_INSTANCE_RESOURCES = ("GPU",)


def unit_instance_resources(resource_name: str) -> str:
    """Value for `custom_unit_instance_resources` (system config or RAY_custom_unit_instance_resources)."""
    names = list(RAY_DEFAULT_UNIT_INSTANCE_RESOURCES)
    if resource_name not in names and resource_name not in RAY_PREDEFINED_UNIT_INSTANCE_RESOURCES:
        names.append(resource_name)
    return ",".join(names)


def _import_ref(ref: str) -> type:
    from conformance.imports import import_ref
    cls: type = import_ref(ref)
    return cls


_pending_refs: list[str] = []


def _patch_registry() -> None:
    """Wrap Ray's registry once: Ray's managers, ours, and refs resolved on first use."""
    import ray._private.accelerators as acc

    if getattr(acc, "_conformance_original_get_all", None):
        return
    acc._conformance_original_get_all = acc.get_all_accelerator_managers  # type: ignore[attr-defined]  # Ray's hints: pyproject.toml

    def get_all_accelerator_managers() -> set[type]:
        _resolve_pending()
        return set(acc._conformance_original_get_all()) | set(_installed)  # type: ignore[attr-defined]  # Ray's hints: pyproject.toml

    acc.get_all_accelerator_managers = get_all_accelerator_managers  # type: ignore[assignment]  # Ray's hints: pyproject.toml


def _resolve_pending() -> None:
    for ref in list(_pending_refs):
        module_name = ref.partition(":")[0]
        module = sys.modules.get(module_name)
        if module is not None and getattr(getattr(module, "__spec__", None), "_initializing", False):
            continue  # the vendor's module is importing Ray right now; resolve on a later call
        manager = _import_ref(ref)
        _pending_refs.remove(ref)
        if manager not in _installed:
            _installed.append(manager)


def _refresh_caches() -> None:
    import ray._private.accelerators as acc

    # get_accelerator_manager_for_resource caches its name -> manager map; rebuild it.
    try:
        del acc.get_accelerator_manager_for_resource._resource_name_to_accelerator_manager  # type: ignore[attr-defined]  # Ray's hints: pyproject.toml
    except AttributeError:
        pass
    # ray._private.worker snapshots the visible-ids variables at import; refresh it so a
    # pre-set <VENDOR>_VISIBLE_DEVICES is remapped exactly like CUDA_VISIBLE_DEVICES.
    # The .pth hook can run this while ray._private.worker is still being imported (the vendor's
    # module imported Ray through the hook): its global_worker does not exist yet, and the
    # snapshot it takes when it does already sees the installed managers.
    global_worker = getattr(sys.modules.get("ray._private.worker"), "global_worker", None)
    if global_worker is not None:
        import ray._private.utils as utils
        global_worker.original_visible_accelerator_ids = utils.get_visible_accelerator_ids()


def install_managers(managers: Iterable[type]) -> None:
    """Add manager classes to Ray's registry in this process (idempotent)."""
    _patch_registry()
    new = [m for m in managers if m not in _installed]
    _installed.extend(new)
    if new:
        _refresh_caches()


def install_from_env(*, lazy: bool = False) -> list[str]:
    """Add the managers named in RAY_CONFORMANCE_ACCELERATORS; no-op when unset.

    lazy=True (the .pth hook) defers importing them until Ray first asks for its managers: the
    hook fires while `ray._private.accelerators` is being imported, possibly *by* the vendor's
    own module, which an eager import would re-enter.
    """
    refs = [r.strip() for r in os.environ.get(ENV_VAR, "").split(",") if r.strip()]
    if not refs:
        return []
    _patch_registry()
    _pending_refs.extend(r for r in refs if r not in _pending_refs)
    if not lazy:
        _resolve_pending()
        _refresh_caches()
    return refs


def pth_line() -> str:
    """The line of the .pth file: cheap at start-up, does nothing unless the variable is set."""
    return "import conformance.cluster.inject_pth_hook\n"


def install_pth(site_packages: str | None = None) -> str:
    """Write the .pth hook into site-packages (for `ray start` nodes). Returns its path."""
    import sysconfig
    folder = site_packages or sysconfig.get_paths()["purelib"]
    path = os.path.join(folder, PTH_NAME)
    with open(path, "w") as f:
        f.write(pth_line())
    return path


def uninstall_pth(site_packages: str | None = None) -> str | None:
    import sysconfig
    folder = site_packages or sysconfig.get_paths()["purelib"]
    path = os.path.join(folder, PTH_NAME)
    if os.path.exists(path):
        os.remove(path)
        return path
    return None


# ---------------------------------------------------------------------------- the torch device
def call_torch_device_setup(ref: str) -> None:
    """Call the vendor's device setup function ("pkg.mod:fn") in this process."""
    _import_ref(ref)()


class _AfterImport:
    """A meta-path finder that runs `then` once `module` has finished importing."""

    def __init__(self, module: str, then: Callable[[], None]) -> None:
        self.module, self.then = module, then

    def find_spec(self, name: str, path: Sequence[str] | None = None,
                  target: ModuleType | None = None) -> ModuleSpec | None:
        if name != self.module:
            return None
        sys.meta_path.remove(self)
        import importlib.util

        spec = importlib.util.find_spec(name)
        if spec is None or spec.loader is None:
            return spec
        original_exec = spec.loader.exec_module
        then = self.then

        def exec_module(module: ModuleType) -> None:
            original_exec(module)
            then()

        spec.loader.exec_module = exec_module  # type: ignore[method-assign]  # the loader's own method, wrapped in place: `then` runs right after the module
        return spec


def install_torch_device_from_env() -> str | None:
    """Register the torch device named in RAY_CONFORMANCE_TORCH_DEVICE now if torch is imported,
    else right after torch's import; None when the variable is unset. A failing setup in a worker
    is written to stderr (the worker's log) and the worker goes on: checks that need the device
    then fail with its error."""
    ref = os.environ.get(DEVICE_ENV_VAR, "").strip()
    if not ref:
        return None

    def setup() -> None:
        try:
            call_torch_device_setup(ref)
        except Exception as exc:  # noqa: BLE001 - reported where the worker's errors go
            print(f"ray-conformance: the torch device setup {ref} failed: {type(exc).__name__}: {exc}",
                  file=sys.stderr)

    torch = sys.modules.get("torch")
    if torch is not None and not getattr(getattr(torch, "__spec__", None), "_initializing", False):
        setup()
    elif not any(isinstance(f, _AfterImport) and f.module == "torch" for f in sys.meta_path):
        sys.meta_path.insert(0, _AfterImport("torch", setup))
    return ref
