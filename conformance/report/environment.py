"""Environment fingerprint for the report: what software and hardware produced the results."""
from __future__ import annotations

import platform
import socket
import sys
from typing import Any


def cpu_model() -> str:
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def installed_torch_version() -> str | None:
    """The torch this run can import, without importing it when nothing has yet.

    Importing torch costs seconds of CPU, and a run of the device or topology areas never
    needs it. A torch already imported (the transport's checks) says its own version; otherwise
    the installed distribution's metadata does, which is the same string (`2.13.0+cpu`). A
    vendor's own build installed under the name `torch` is found the same way; no distribution
    of that name means torch is not there.
    """
    module = sys.modules.get("torch")
    if module is not None:
        return str(getattr(module, "__version__", "unknown"))
    from importlib.metadata import PackageNotFoundError, version
    try:
        return version("torch")
    except PackageNotFoundError:
        return None


def fingerprint(devices: dict[str, Any] | None = None) -> dict[str, Any]:
    try:
        import ray
        ray_version = ray.__version__
    except Exception:  # noqa: BLE001
        ray_version = "unknown"
    import os
    return {
        "ray": ray_version,
        "torch": installed_torch_version(),
        "python": sys.version.split()[0],
        "os": f"{platform.system()} {platform.release()}",
        "cpu": cpu_model(),
        "cpu_count": os.cpu_count() or 0,
        "machine": platform.machine(),
        "hostname": socket.gethostname(),
        "devices": devices or {},
    }
