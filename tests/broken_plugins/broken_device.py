"""Deliberately broken variants of the simulated accelerator, one fault each.

Each class breaks one promise of the device-plugin contract the way real plugins do. The
project's tests run the device checks against each and assert that the intended check fails
(and that the checks the fault does not touch still pass). Some faults appear only inside Ray
worker processes, as bugs in per-process state do; the contract probe then cannot see them and
only the live checks can. The folded twins at the end combine several of them, one teeth row each.
"""
from __future__ import annotations

import itertools
import os
from typing import List, Optional, Tuple

from worker_process import in_ray_worker

from conformance.simulated.manager import VISIBLE_DEVICES_ENV_VAR, SimAccManager

_NODE_PRESET = os.environ.get(VISIBLE_DEVICES_ENV_VAR)  # what the node was started with


class FloatCount(SimAccManager):
    """DP-001: the device count comes back as a float."""

    @staticmethod
    def get_current_node_num_accelerators() -> int:
        return float(SimAccManager.get_current_node_num_accelerators())  # type: ignore[return-value]


class WritesOtherName(SimAccManager):
    """DP-005: the ids go into a variable other than the one the manager names."""

    @staticmethod
    def set_current_process_visible_accelerator_ids(ids: List[str]) -> None:
        os.environ["SIMACC_DEVICES"] = ",".join(ids)


class StrayVariable(SimAccManager):
    """DP-016: setting the visible ids also writes a second, unnamed variable."""

    @staticmethod
    def set_current_process_visible_accelerator_ids(ids: List[str]) -> None:
        SimAccManager.set_current_process_visible_accelerator_ids(ids)
        os.environ["SIMACC_LAST_SELECTION"] = ",".join(ids)


class IntIds(SimAccManager):
    """DP-003: visible ids are read back as ints."""

    @staticmethod
    def get_current_process_visible_accelerator_ids() -> Optional[List[str]]:
        ids = SimAccManager.get_current_process_visible_accelerator_ids()
        return None if ids is None else [int(i) for i in ids]  # type: ignore[misc]


class UnsetIsEmpty(SimAccManager):
    """DP-004: an unset variable is reported as 'no devices' instead of None."""

    @staticmethod
    def get_current_process_visible_accelerator_ids() -> Optional[List[str]]:
        ids = SimAccManager.get_current_process_visible_accelerator_ids()
        return [] if ids is None else ids


class CountOffByOne(SimAccManager):
    """DP-006: one device is lost in enumeration."""

    @staticmethod
    def get_current_node_num_accelerators() -> int:
        return max(0, SimAccManager.get_current_node_num_accelerators() - 1)


class WrongType(SimAccManager):
    """DP-007: the node reports another SKU than the manifest."""

    @staticmethod
    def get_current_node_accelerator_type() -> Optional[str]:
        return "SIMACC-X2"


class ExtraIdInWorkers(SimAccManager):
    """DP-008/009/010/011: in workers, one more device than assigned becomes visible."""

    @staticmethod
    def set_current_process_visible_accelerator_ids(ids: List[str]) -> None:
        if in_ray_worker() and ids:
            spare = [str(i) for i in range(SimAccManager.get_current_node_num_accelerators()) if str(i) not in ids]
            ids = list(ids) + spare[:1]
        SimAccManager.set_current_process_visible_accelerator_ids(ids)


class CollidingActors(SimAccManager):
    """DP-009: in actors (not tasks) every process is pointed at device 0."""

    @staticmethod
    def set_current_process_visible_accelerator_ids(ids: List[str]) -> None:
        if in_ray_worker() and ids:
            import ray
            if ray.get_runtime_context().get_actor_id() is not None:
                ids = ["0"] * len(ids)
        SimAccManager.set_current_process_visible_accelerator_ids(ids)


class DriftingView(SimAccManager):
    """DP-010: in workers the plugin's own view of its device changes from call to call."""

    _calls = itertools.count()

    @staticmethod
    def get_current_process_visible_accelerator_ids() -> Optional[List[str]]:
        ids = SimAccManager.get_current_process_visible_accelerator_ids()
        if not in_ray_worker() or not ids:
            return ids
        n = SimAccManager.get_current_node_num_accelerators()
        shift = next(DriftingView._calls)
        return [str((int(i) + shift) % n) for i in ids]


class TruncateMultiInWorkers(SimAccManager):
    """DP-011: in workers, only the first of several assigned devices is made visible."""

    @staticmethod
    def set_current_process_visible_accelerator_ids(ids: List[str]) -> None:
        SimAccManager.set_current_process_visible_accelerator_ids(list(ids)[:1] if in_ray_worker() else ids)


class LeakVisibilityInWorkers(SimAccManager):
    """DP-012: the plugin makes every device visible to any worker that imports it."""

    @staticmethod
    def get_current_node_num_accelerators() -> int:
        return SimAccManager.get_current_node_num_accelerators()


if in_ray_worker() and VISIBLE_DEVICES_ENV_VAR not in os.environ and os.environ.get("SIMACC_FAULT") == "leak":
    os.environ[VISIBLE_DEVICES_ENV_VAR] = ",".join(str(i) for i in range(SimAccManager.get_current_node_num_accelerators()))


class RejectFractional(SimAccManager):
    """DP-013: the plugin refuses fractional requests it documents as valid."""

    @staticmethod
    def validate_resource_request_quantity(quantity: float) -> Tuple[bool, Optional[str]]:
        if not float(quantity).is_integer():
            return False, "SIMACC does not support fractional requests"
        return SimAccManager.validate_resource_request_quantity(quantity)


class AcceptAll(SimAccManager):
    """DP-014: the plugin accepts every quantity, leaving refusal to chance."""

    @staticmethod
    def validate_resource_request_quantity(quantity: float) -> Tuple[bool, Optional[str]]:
        return True, None


class RenumberInWorkers(SimAccManager):
    """DP-015: in workers the plugin renumbers devices from 0, ignoring the node's pre-selection."""

    @staticmethod
    def set_current_process_visible_accelerator_ids(ids: List[str]) -> None:
        if in_ray_worker() and _NODE_PRESET:
            preset = _NODE_PRESET.split(",")
            ids = [str(preset.index(i)) if i in preset else i for i in ids]
        SimAccManager.set_current_process_visible_accelerator_ids(ids)


class HangingEnumeration(SimAccManager):
    """Hang while the node starts (counting devices in the node-starting process)."""

    @staticmethod
    def get_current_node_num_accelerators() -> int:
        if os.environ.get("SIMACC_FAULT") == "hang-start" and not in_ray_worker():
            import time
            time.sleep(3600)
        return SimAccManager.get_current_node_num_accelerators()


class SpaceInName(SimAccManager):
    """DP-002: a resource name Ray users cannot write in a request."""

    @staticmethod
    def get_resource_name() -> str:
        return "SIM ACC"


# ------------------------------------------------------------------ other hosts (DP-017 .. DP-020)
# Written from the contract: the manifest's accelerator.hosts overlays say how a host without
# the device, with a failing library or an unknown device id looks (conformance.simulated.manager
# simulates them with SIMACC_DRIVER / SIMACC_DEVICE_ID); each variant mishandles one of them.
def _driver() -> str:
    return os.environ.get("SIMACC_DRIVER", "ok")


class RaisesWithoutDriver(SimAccManager):
    """DP-017: detection imports the vendor library unguarded, so a host without it raises."""

    @staticmethod
    def get_current_node_num_accelerators() -> int:
        if _driver() == "absent":
            raise ModuleNotFoundError("No module named 'simacc_driver'")
        return SimAccManager.get_current_node_num_accelerators()


class ErrorLogWithoutDriver(SimAccManager):
    """DP-017: a host without the driver returns 0 but logs an ERROR on every call (pages operators)."""

    @staticmethod
    def get_current_node_num_accelerators() -> int:
        if _driver() == "absent":
            import logging
            logging.getLogger("simacc").error("SIMACC driver not found")
            return 0
        return SimAccManager.get_current_node_num_accelerators()


class CrashOnLibraryError(SimAccManager):
    """DP-018: a library error propagates out of detection instead of degrading to 0."""

    @staticmethod
    def get_current_node_num_accelerators() -> int:
        from conformance.simulated.manager import _enumerate_devices
        try:
            return _enumerate_devices()
        except ModuleNotFoundError:
            return 0


class SilentUnknownType(SimAccManager):
    """DP-018: an unknown device id becomes a made-up type ("SIMACC-UNKNOWN"), silently."""

    @staticmethod
    def get_current_node_accelerator_type() -> Optional[str]:
        device_id = os.environ.get("SIMACC_DEVICE_ID")
        if device_id is not None and SimAccManager.get_current_node_num_accelerators() > 0:
            from conformance.simulated.manager import DEVICE_ID_TYPES
            return DEVICE_ID_TYPES.get(device_id.lower(), "SIMACC-UNKNOWN")
        return SimAccManager.get_current_node_accelerator_type()


class VisibleIgnoredAtStart(SimAccManager):
    """DP-019: outside workers the manager ignores the visible-devices variable (reports None), so
    Ray cannot refuse a node asked for more devices than the operator made visible."""

    @staticmethod
    def get_current_process_visible_accelerator_ids() -> Optional[List[str]]:
        if not in_ray_worker():
            return None
        return SimAccManager.get_current_process_visible_accelerator_ids()


class IgnoresNoset(SimAccManager):
    """DP-020: the declared opt-out variable is ignored; the ids are always written."""

    @staticmethod
    def set_current_process_visible_accelerator_ids(ids: List[str]) -> None:
        os.environ[VISIBLE_DEVICES_ENV_VAR] = ",".join(str(i) for i in ids)


# ---- folded twins
# Several defects in one class, for one teeth row each (tests/teeth.yaml): every defect acts in its
# own method or situation (a method only the contract probe judges, worker-side visibility only for
# actors or only for several ids or only on a preset node, detection only on a host without the
# driver or with a failing library, ...), so each check of the row fails for its own defect's
# reason. The single-defect classes above stay (tests import them); these only combine them.
class FloatCountSpaceInName(FloatCount, SpaceInName):
    """FloatCount (get_current_node_num_accelerators: DP-001) and SpaceInName (get_resource_name: DP-002)."""


class IntIdsStrayVariable(IntIds, StrayVariable):
    """IntIds (get_current_process_visible_accelerator_ids: DP-003) and StrayVariable
    (set_current_process_visible_accelerator_ids: DP-016)."""


class UnsetIsEmptyIgnoresNoset(UnsetIsEmpty, IgnoresNoset):
    """UnsetIsEmpty (get_current_process_visible_accelerator_ids with the variable unset: DP-004) and
    IgnoresNoset (set_current_process_visible_accelerator_ids under the opt-out: DP-020)."""


class OffByOneWrongTypeRejectFractional(CountOffByOne, WrongType, RejectFractional):
    """CountOffByOne (get_current_node_num_accelerators: DP-006), WrongType
    (get_current_node_accelerator_type: DP-007) and RejectFractional
    (validate_resource_request_quantity: DP-013)."""


class ExtraIdAcceptAllRaisesSilentType(ExtraIdInWorkers, AcceptAll, RaisesWithoutDriver, SilentUnknownType):
    """ExtraIdInWorkers (set_current_process_visible_accelerator_ids in workers given devices: DP-008),
    AcceptAll (validate_resource_request_quantity: DP-014), RaisesWithoutDriver
    (get_current_node_num_accelerators on a host without the driver: DP-017) and SilentUnknownType
    (get_current_node_accelerator_type on a host with an unknown device id: DP-018)."""


class CollidingTruncateErrorLogCrash(SimAccManager):
    """CollidingActors (actors: DP-009) and TruncateMultiInWorkers (several ids: DP-011), both in
    set_current_process_visible_accelerator_ids, one after the other (an actor's ids are pointed at
    device 0, then a worker's ids cut to the first); ErrorLogWithoutDriver (a host without the
    driver: DP-017) and CrashOnLibraryError (a failing library: DP-018), both in
    get_current_node_num_accelerators, each on its own host."""

    @staticmethod
    def set_current_process_visible_accelerator_ids(ids: List[str]) -> None:
        if in_ray_worker() and ids:
            import ray
            if ray.get_runtime_context().get_actor_id() is not None:
                ids = ["0"] * len(ids)                      # CollidingActors
        TruncateMultiInWorkers.set_current_process_visible_accelerator_ids(ids)

    @staticmethod
    def get_current_node_num_accelerators() -> int:
        if _driver() == "absent":
            return ErrorLogWithoutDriver.get_current_node_num_accelerators()
        return CrashOnLibraryError.get_current_node_num_accelerators()


class DriftingLeakRenumber(DriftingView, LeakVisibilityInWorkers, RenumberInWorkers):
    """DriftingView (get_current_process_visible_accelerator_ids in workers: DP-010),
    LeakVisibilityInWorkers (this module's import in a worker, with SIMACC_FAULT=leak: DP-012) and
    RenumberInWorkers (set_current_process_visible_accelerator_ids on a node started with preset
    visible ids: DP-015)."""
