"""Activated by the `ray_conformance_inject.pth` file at every interpreter start.

Inert unless RAY_CONFORMANCE_ACCELERATORS is set. Then it waits, without importing Ray, until
`ray._private.accelerators` is imported and installs the managers right after it runs. This is
what makes `ray start` (raylet resources and labels) and its workers see a vendor manager.
With RAY_CONFORMANCE_TORCH_DEVICE set it also registers the vendor's torch device after torch's
import (conformance.cluster.injection.install_torch_device_from_env).
"""
from __future__ import annotations

import os
import sys

TYPE_CHECKING = False   # not typing's: this runs at every interpreter start, and imports nothing it need not
if TYPE_CHECKING:
    from importlib.machinery import ModuleSpec
    from types import ModuleType
    from typing import Sequence

_TARGET = "ray._private.accelerators"


class _InstallAfterImport:
    def find_spec(self, name: str, path: Sequence[str] | None = None,
                  target: ModuleType | None = None) -> ModuleSpec | None:
        if name != _TARGET:
            return None
        sys.meta_path.remove(self)
        import importlib.util

        spec = importlib.util.find_spec(name)
        if spec is None or spec.loader is None:
            return spec
        original_exec = spec.loader.exec_module

        def exec_module(module: ModuleType) -> None:
            original_exec(module)
            from conformance.cluster.injection import install_from_env
            install_from_env(lazy=True)

        spec.loader.exec_module = exec_module  # type: ignore[method-assign]  # the loader's own method, wrapped in place: install right after Ray's module runs
        return spec


if os.environ.get("RAY_CONFORMANCE_ACCELERATORS") and _TARGET not in sys.modules:
    sys.meta_path.insert(0, _InstallAfterImport())
if os.environ.get("RAY_CONFORMANCE_TORCH_DEVICE"):
    # the vendor's torch device, registered once this interpreter imports torch (if it does)
    from conformance.cluster.injection import install_torch_device_from_env

    install_torch_device_from_env()
