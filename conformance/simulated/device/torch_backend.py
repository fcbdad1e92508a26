"""The one place the suite touches torch's private Python-backend setup.

torch (2.13) can host a device written in Python: `torch.utils.backend_registration.
_setup_privateuseone_for_python_backend(name, backend_module=...)` renames the PrivateUse1
dispatch key to `name`, generates `Tensor.<name>()`/`is_<name>`, installs a Python device guard
and hooks, and registers `backend_module` as `torch.<name>`. It is private and documented as
experimental (pytorch PR #157859; its test is test/test_privateuseone_python_backend.py), so
everything else goes through `register_python_device` here, and tests/unit/test_simacc_device.py
pins what the simulated device relies on. When the function is missing or the key was already
renamed to another name (once per process), this raises DeviceSetupError saying which.
"""
from __future__ import annotations

from types import ModuleType


class DeviceSetupError(RuntimeError):
    """torch cannot host the Python device in this process (and why)."""


def backend_name() -> str:
    """The name PrivateUse1 carries in this process ("privateuseone" until renamed)."""
    import torch

    return str(torch._C._get_privateuse1_backend_name())


def register_python_device(name: str, device_module: ModuleType) -> None:
    """Make `name` a torch device type backed by Python, with `device_module` as torch.<name>.
    Idempotent for the same name; raises DeviceSetupError otherwise."""
    import torch

    current = backend_name()
    if current == name:
        return
    if current != "privateuseone":
        raise DeviceSetupError(f"torch's PrivateUse1 device is already named {current!r} in this process; "
                               f"it can be named once, so {name!r} cannot be registered beside it")
    try:
        from torch.utils.backend_registration import _setup_privateuseone_for_python_backend
    except ImportError as exc:
        raise DeviceSetupError(f"torch {torch.__version__} has no Python PrivateUse1 backend setup "
                               f"(torch.utils.backend_registration._setup_privateuseone_for_python_backend): {exc}") from None
    try:
        _setup_privateuseone_for_python_backend(name, backend_module=device_module)
    except Exception as exc:  # noqa: BLE001 - any failure of the private API is reported as one error
        raise DeviceSetupError(f"torch {torch.__version__} refused the Python device {name!r}: "
                               f"{type(exc).__name__}: {exc}") from None
