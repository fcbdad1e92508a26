"""Deliberately broken topology variants of the simulated accelerator, one fault each.

Managers (subclasses of SimAccManager) break the node labels; providers (alternatives to
conformance.simulated.topology.describe_node) break the description. Each fault is one a real
plugin makes: a label computed from the wrong source, a label set where it does not belong, a
description in another numbering, a link to a device that is not there.
tests/teeth.yaml runs the topology checks against each and asserts what fails.
"""
from __future__ import annotations

import copy
import os
from typing import Any, Dict, Optional

from worker_process import in_ray_worker

from conformance.simulated import topology as sim_topology
from conformance.simulated.manager import DEFAULT_TYPE, TYPE_ENV_VAR, SimAccManager


# ------------------------------------------------------------------ managers (labels)
class WrongTypeLabel(SimAccManager):
    """TL-001: returns ray.io/accelerator-type with another SKU's name (it overrides Ray's)."""

    @staticmethod
    def get_current_node_accelerator_labels() -> Dict[str, str]:
        labels = SimAccManager.get_current_node_accelerator_labels()
        return {**labels, "ray.io/accelerator-type": "SIMACC-X2"} if labels else labels


class TypeOnEmptyNode(SimAccManager):
    """TL-001/TL-009/TL-011: labels every node with the type, also nodes without devices."""

    @staticmethod
    def get_current_node_accelerator_labels() -> Dict[str, str]:
        labels = SimAccManager.get_current_node_accelerator_labels()
        return {**labels, "ray.io/accelerator-type": os.environ.get(TYPE_ENV_VAR, DEFAULT_TYPE)}


class InvalidLabelValue(SimAccManager):
    """TL-002: a vendor label whose value Ray's label rules refuse (spaces, '+')."""

    @staticmethod
    def get_current_node_accelerator_labels() -> Dict[str, str]:
        labels = SimAccManager.get_current_node_accelerator_labels()
        return {**labels, "simacc.example.com/firmware": "1.2.3+build 7"} if labels else labels


class LabelsNotApplied(SimAccManager):
    """TL-003: the labels exist only in worker processes; the node was started without them
    (what a --ray-address cluster looks like when the operator forgot `ray start --labels`)."""

    @staticmethod
    def get_current_node_accelerator_labels() -> Dict[str, str]:
        return SimAccManager.get_current_node_accelerator_labels() if in_ray_worker() else {}


class DomainLie(SimAccManager):
    """TL-007 and the placement checks: claims every node is in the first node's interconnect
    domain (a hard-coded value) while the description reports the node's real one."""

    @staticmethod
    def get_current_node_accelerator_labels() -> Dict[str, str]:
        labels = SimAccManager.get_current_node_accelerator_labels()
        return {**labels, "ray.io/accelerator-domain": "simlink-a"} if labels else labels


# ------------------------------------------------------------------ providers (description)
def describe_one_based_ids() -> Optional[Dict[str, Any]]:
    """TL-005: numbers devices from 1 (as a vendor tool does) instead of Ray's ids."""
    desc = sim_topology.describe_node()
    if desc is None:
        return None
    rename = {d["id"]: str(int(d["id"]) + 1) for d in desc["devices"]}
    for d in desc["devices"]:
        d["id"] = rename[d["id"]]
    for link in desc["links"]:
        link["a"], link["b"] = rename[link["a"]], rename[link["b"]]
    for nic in desc["nics"]:
        nic["devices"] = [rename[i] for i in nic["devices"]]
    for dom in desc.get("device_domains", []):
        dom["devices"] = [rename[i] for i in dom["devices"]]
    return desc


def describe_dangling_link() -> Optional[Dict[str, Any]]:
    """TL-004: a link to a device the description does not list."""
    desc = sim_topology.describe_node()
    if desc is not None:
        desc["links"].append({"a": desc["devices"][0]["id"], "b": "9", "kind": "simlink", "bandwidth_gbps": 200.0})
    return desc


def describe_zero_bandwidth() -> Optional[Dict[str, Any]]:
    """TL-004: a host link with no bandwidth (0 GB/s) — an unfilled field."""
    desc = sim_topology.describe_node()
    if desc is not None:
        host = [lk for lk in desc["links"] if lk["kind"] == sim_topology.HOST_LINK]
        host[0]["bandwidth_gbps"] = 0
    return desc


def describe_without_islands() -> Optional[Dict[str, Any]]:
    """TL-006: misses the fast links (every pair via host), unlike the manifest's expectation."""
    desc = sim_topology.describe_node()
    if desc is not None:
        desc = copy.deepcopy(desc)
        for link in desc["links"]:
            if link["kind"] == sim_topology.FAST_LINK:
                link.update(kind=sim_topology.HOST_LINK, bandwidth_gbps=sim_topology.HOST_GBPS)
    return desc


def describe_misdrawn_islands() -> Optional[Dict[str, Any]]:
    """TL-004 (and TL-006): the device domains group the devices one way ({0,2} and {1,3}) while
    the fast links join them another (0-1, 2-3): an island map that would pack work wrongly."""
    desc = sim_topology.describe_node()
    if desc is not None and desc.get("device_domains"):
        desc = copy.deepcopy(desc)
        ids = [d["id"] for d in desc["devices"]]
        halves = [ids[0::2], ids[1::2]]
        for dom, devices in zip(desc["device_domains"], halves):
            dom["devices"] = devices
    return desc
