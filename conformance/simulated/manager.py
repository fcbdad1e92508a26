"""The SimAcc AcceleratorManager: the reference a vendor copies from.

Everything Ray needs from a device plugin, in the smallest honest form:

* the resource name users request (`SIMACC`),
* the environment variable that tells a process which devices it may use
  (`SIMACC_VISIBLE_DEVICES`, like CUDA_VISIBLE_DEVICES),
* how many devices this node has and of which type (a real plugin asks its driver/SDK; the
  simulation reads `SIMACC_NUM_DEVICES` and `SIMACC_TYPE`),
* the request policy: fractions below 1 share a device, more than 1 must be whole,
* how detection degrades on hosts without the device, its driver or a known device id: 0 /
  None and a warning, never an exception (`SIMACC_DRIVER`, `SIMACC_DEVICE_ID` simulate them),
* an opt-out variable (`RAY_EXPERIMENTAL_NOSET_SIMACC_VISIBLE_DEVICES`) that stops Ray from
  setting the visible ids, like Ray's own managers,
* node labels for topology-aware scheduling: device count, interconnect domain and rack
  (the simulation reads `SIMACC_DOMAIN` and `SIMACC_RACK`; keys: tiers/labels.yaml).

Ray calls these as static methods in the process that starts a node (count, type), in every
submitter (validation), and in every worker (visible ids per task).
"""
from __future__ import annotations

import logging
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
# The simulated driver: unset or "ok" = installed; "absent" = not installed (a CPU-only host);
# "broken" = installed, but enumerating devices raises (a library error).
DRIVER_ENV_VAR = "SIMACC_DRIVER"
# The simulated PCI device id; when set, the type comes from this table, like real SKU tables.
DEVICE_ID_ENV_VAR = "SIMACC_DEVICE_ID"
DEVICE_ID_TYPES = {"0x51a1": "SIMACC-X1", "0x51a2": "SIMACC-X2"}
NOSET_VISIBLE_DEVICES_ENV_VAR = "RAY_EXPERIMENTAL_NOSET_SIMACC_VISIBLE_DEVICES"

logger = logging.getLogger(__name__)


class DriverError(RuntimeError):
    """What the simulated vendor library raises when it cannot talk to its devices."""


def _enumerate_devices() -> int:
    """The simulated vendor library's device enumeration (a real plugin calls its SDK here)."""
    driver = os.environ.get(DRIVER_ENV_VAR, "ok")
    if driver == "absent":
        raise ModuleNotFoundError("simacc driver library is not installed")
    if driver == "broken":
        raise DriverError("simacc_enumerate() failed: device firmware not responding")
    return max(0, int(os.environ.get(NUM_DEVICES_ENV_VAR, DEFAULT_NUM_DEVICES)))


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
        # A real plugin enumerates devices here (driver API, sysfs). Ray calls this on every
        # node, including nodes without the device or its driver: it must return 0 there,
        # quickly, and never raise (a raise stops the node from starting).
        try:
            return _enumerate_devices()
        except ModuleNotFoundError:
            return 0  # no driver: a host without the device, nothing to warn about
        except (DriverError, ValueError) as exc:
            logger.warning("SIMACC detection failed, reporting 0 devices: %s", exc)
            return 0

    @staticmethod
    def get_current_node_accelerator_type() -> Optional[str]:
        if SimAccManager.get_current_node_num_accelerators() == 0:
            return None
        device_id = os.environ.get(DEVICE_ID_ENV_VAR)
        if device_id is not None:
            known = DEVICE_ID_TYPES.get(device_id.lower())
            if known is None:
                logger.warning("SIMACC device id %s is not a known product; reporting no type", device_id)
            return known
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
        if os.environ.get(NOSET_VISIBLE_DEVICES_ENV_VAR, "").lower() in ("1", "true"):
            return  # the operator manages the variable itself (Ray's RAY_EXPERIMENTAL_NOSET_* convention)
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
