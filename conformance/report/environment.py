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


def fingerprint(devices: dict[str, Any] | None = None) -> dict[str, Any]:
    try:
        import ray
        ray_version = ray.__version__
    except Exception:  # noqa: BLE001
        ray_version = "unknown"
    try:
        import torch
        torch_version: str | None = torch.__version__
    except Exception:  # noqa: BLE001
        torch_version = None
    import os
    return {
        "ray": ray_version,
        "torch": torch_version,
        "python": sys.version.split()[0],
        "os": f"{platform.system()} {platform.release()}",
        "cpu": cpu_model(),
        "cpu_count": os.cpu_count() or 0,
        "machine": platform.machine(),
        "hostname": socket.gethostname(),
        "devices": devices or {},
    }
