"""How a check asks Ray for accelerator units in task and actor options.

Ray refuses `resources={"GPU": n}` ("use num_gpus"), so a vendor whose manager uses Ray's
GPU resource name (NVIDIA, AMD, Intel, Metax) must be asked through `num_gpus`. Found on the
first real-GPU run of the suite. Placement-group bundles take "GPU" as a plain key.
"""
from __future__ import annotations

from typing import Any, Mapping

KEYWORD_RESOURCES = {"GPU": "num_gpus", "CPU": "num_cpus"}


def demand(resource: str, quantity: float) -> dict[str, Any]:
    """Options for .options(): `quantity` units of `resource` (nothing for 0)."""
    if not quantity:
        return {}
    keyword = KEYWORD_RESOURCES.get(resource)
    if keyword:
        return {keyword: quantity}
    return {"resources": {resource: quantity}}


def demand_all(resources: Mapping[str, float]) -> dict[str, Any]:
    """Options for several resources at once (keyword resources split out)."""
    opts: dict[str, Any] = {}
    for name, qty in resources.items():
        for key, value in demand(name, qty).items():
            if key == "resources":
                opts.setdefault("resources", {}).update(value)
            else:
                opts[key] = value
    return opts
