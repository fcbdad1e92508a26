"""Resolving the 'pkg.module:Attr.Sub' references that manifests and the suite pass around.

One implementation, importable in every process the suite reaches (driver, contract probe,
Ray workers), so that all of them resolve a vendor's reference the same way.
"""
from __future__ import annotations

import importlib
from typing import Any


def import_ref(ref: str) -> Any:
    """'pkg.module:Attr.Sub' -> the object (ImportError/AttributeError propagate)."""
    module_name, _, attr = ref.partition(":")
    obj: Any = importlib.import_module(module_name)
    for part in attr.split("."):
        obj = getattr(obj, part)
    return obj
