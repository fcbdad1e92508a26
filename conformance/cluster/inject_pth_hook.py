"""Activated by the `ray_conformance_inject.pth` file at every interpreter start.

Inert unless RAY_CONFORMANCE_ACCELERATORS is set. Then it waits, without importing Ray, until
`ray._private.accelerators` is imported and installs the managers right after it runs. This is
what makes `ray start` (raylet resources and labels) and its workers see a vendor manager.
With RAY_CONFORMANCE_TORCH_DEVICE set it also registers the vendor's torch device after torch's
import (conformance.cluster.injection.install_torch_device_from_env).
"""
import os
import sys

_TARGET = "ray._private.accelerators"


class _InstallAfterImport:
    def find_spec(self, name, path=None, target=None):
        if name != _TARGET:
            return None
        sys.meta_path.remove(self)
        import importlib.util

        spec = importlib.util.find_spec(name)
        if spec is None or spec.loader is None:
            return spec
        original_exec = spec.loader.exec_module

        def exec_module(module):
            original_exec(module)
            from conformance.cluster.injection import install_from_env
            install_from_env(lazy=True)

        spec.loader.exec_module = exec_module
        return spec


if os.environ.get("RAY_CONFORMANCE_ACCELERATORS") and _TARGET not in sys.modules:
    sys.meta_path.insert(0, _InstallAfterImport())
if os.environ.get("RAY_CONFORMANCE_TORCH_DEVICE"):
    # the vendor's torch device, registered once this interpreter imports torch (if it does)
    from conformance.cluster.injection import install_torch_device_from_env

    install_torch_device_from_env()
