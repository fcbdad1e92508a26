"""The SimAcc AcceleratorManager: the reference a vendor copies from.

Everything Ray needs from a device plugin, in the smallest honest form:

* the resource name users request (`SIMACC`),
* the environment variable that tells a process which devices it may use
  (`SIMACC_VISIBLE_DEVICES`, like CUDA_VISIBLE_DEVICES),
* how many devices this node has and of which type (a real plugin asks its driver/SDK; the
  simulation reads `SIMACC_NUM_DEVICES` and `SIMACC_TYPE`),
* the request policy: fractions below 1 share a device, more than 1 must be whole,
* node labels for topology-aware scheduling: device count, interconnect domain and rack
  (the simulation reads `SIMACC_DOMAIN` and `SIMACC_RACK`; keys: tiers/labels.yaml).

Ray calls these as static methods in the process that starts a node (count, type), in every
submitter (validation), and in every worker (visible ids per task).
"""
from __future__ import annotations

import os
from typing import Dict, List, Optional, Tuple

from ray._private.accelerators.accelerator import AcceleratorManager

RESOURCE_NAME = "SIMACC"
VISIBLE_DEVICES_ENV_VAR = "SIMACC_VISIBLE_DEVICES"
NUM_DEVICES_ENV_VAR = "SIMACC_NUM_DEVICES"
TYPE_ENV_VAR = "SIMACC_TYPE"
DEFAULT_NUM_DEVICES = 4
DEFAULT_TYPE = "SIMACC-X1"
DOMAIN_ENV_VAR = "SIMACC_DOMAIN"  # the interconnect domain this node's devices belong to
RACK_ENV_VAR = "SIMACC_RACK"


class SimAccManager(AcceleratorManager):
    """Simulated accelerator: devices and type come from the environment."""

    @staticmethod
    def get_resource_name() -> str:
        return RESOURCE_NAME

    @staticmethod
    def get_visible_accelerator_ids_env_var() -> str:
        return VISIBLE_DEVICES_ENV_VAR

    @staticmethod
    def get_current_node_num_accelerators() -> int:
        # A real plugin enumerates devices here (driver API, sysfs). It must not fail when the
        # node has none: return 0.
        try:
            return max(0, int(os.environ.get(NUM_DEVICES_ENV_VAR, DEFAULT_NUM_DEVICES)))
        except ValueError:
            return 0

    @staticmethod
    def get_current_node_accelerator_type() -> Optional[str]:
        if SimAccManager.get_current_node_num_accelerators() == 0:
            return None
        return os.environ.get(TYPE_ENV_VAR, DEFAULT_TYPE)

    @staticmethod
    def get_current_node_additional_resources() -> Optional[Dict[str, float]]:
        return None

    @staticmethod
    def validate_resource_request_quantity(quantity: float) -> Tuple[bool, Optional[str]]:
        if quantity > 1 and not float(quantity).is_integer():
            return (False, f"{RESOURCE_NAME} resource quantity {quantity} is invalid: requests above 1 "
                           "must be whole numbers of devices")
        return (True, None)

    @staticmethod
    def get_current_process_visible_accelerator_ids() -> Optional[List[str]]:
        value = os.environ.get(VISIBLE_DEVICES_ENV_VAR)
        if value is None:
            return None  # unset: every device of the node is visible
        if value == "":
            return []  # set but empty: no device is visible
        return [v.strip() for v in value.split(",")]

    @staticmethod
    def set_current_process_visible_accelerator_ids(ids: List[str]) -> None:
        os.environ[VISIBLE_DEVICES_ENV_VAR] = ",".join(str(i) for i in ids)

    @staticmethod
    def get_current_node_accelerator_labels() -> Dict[str, str]:
        # Labels beyond ray.io/accelerator-type (Ray derives that one from the type above).
        # Ray 2.60 applies this method only for TPU: the suite applies it on nodes it starts;
        # on other clusters the operator passes the same labels to `ray start --labels`.
        visible = SimAccManager.get_current_process_visible_accelerator_ids()
        count = SimAccManager.get_current_node_num_accelerators()
        if visible is not None:
            count = min(count, len(visible))  # Ray caps the node's devices by the visible list
        if count == 0:
            return {}  # no devices: nothing to label
        labels = {"ray.io/accelerator-count": str(count)}
        for key, var in (("ray.io/accelerator-domain", DOMAIN_ENV_VAR), ("ray.io/rack", RACK_ENV_VAR)):
            if os.environ.get(var):
                labels[key] = os.environ[var]
        return labels
