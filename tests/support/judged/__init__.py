"""Evidence for every judged check, per area (tests/support/judged/<area>.py): what its judge
passes and what it must fail, with the manifest both were measured under.

One module per area, so each area's judges and their evidence change together without touching
another's table.
"""
from __future__ import annotations

import importlib
from types import ModuleType
from typing import Any

from conformance.areas import AREAS as REGISTRY


def _area_module(name: str) -> ModuleType:
    """tests/support/judged/<name>.py, or a ModuleNotFoundError that names the file to write."""
    try:
        return importlib.import_module(f"judged.{name}")
    except ModuleNotFoundError as exc:
        if exc.name != f"judged.{name}":
            raise
        raise ModuleNotFoundError(f"tests/support/judged/{name}.py is missing: the {name} area declares judges, "
                                  "their evidence (PASSING, FAILING) goes there (docs/architecture.md, Add an area)",
                                  name=exc.name) from exc


# One module per area that declares judges, found by the area's name (conformance.areas.AREAS).
AREAS = tuple(_area_module(a.name) for a in REGISTRY if a.judges)
PASSING: dict[str, dict[str, Any]] = {k: v for a in AREAS for k, v in a.PASSING.items()}
FAILING: dict[str, list[dict[str, Any]]] = {k: v for a in AREAS for k, v in a.FAILING.items()}


def manifest(nodes: int = 2, transport: bool = True) -> dict[str, Any]:
    """A manifest the release's manifest schema accepts, the one PASSING's evidence was measured
    under (the hand-made reports of the signing tests carry it)."""
    out: dict[str, Any] = {
        "schema_version": 1, "vendor": "ExampleCorp", "product": "NPU X1",
        "accelerator": {"manager": "ray_npu.manager:NPUManager", "resource_name": "NPU",
                        "expected": {"devices_per_node": 4, "accelerator_type": "NPU-X1"},
                        # what the device checks exercised (DP-013/014 quantities, DP-017/018 hosts, DP-020)
                        "quantities": {"valid": [0.5, 1, 2], "invalid": [1.5]},
                        "hosts": {"without_device": {"NPU_DRIVER": "absent"}, "library_error": {"NPU_DRIVER": "broken"},
                                  "unknown_device": {"NPU_DEVICE_ID": "0xffff"}},
                        "noset_env_var": "RAY_EXPERIMENTAL_NOSET_NPU_VISIBLE_DEVICES"},
        "cluster": {"nodes": nodes},
        # the reference CC-010's PASSING evidence was measured against
        "collective": {"backend": "GLOO", "nominal_link_gbps": 4.0},
        # the provider and expectation the topology area's PASSING evidence was described under
        # (no expected domains: a manifest expecting them claims domain labels the trust table
        # wants corroborated by the report's environment, which the hand-made reports do not carry)
        "topology": {"provider": "ray_npu.topology:describe_node",
                     "expected": {"devices_per_node": 4, "fully_connected": True}}}
    if transport:
        out["transport"] = {"name": "NPUXFER"}
    return out


MANIFEST = manifest()
