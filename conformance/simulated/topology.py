"""SimAcc's topology provider: the reference for the manifest's `topology.provider`.

The suite calls `describe_node()` inside a task pinned to each node (holding all of the node's
devices), so it reads the node's own environment, just as a real provider would ask its
driver library (NVML, amdsmi, hwloc) on that host. It returns the node's description
(schemas/topology.schema.json), or None on a node without devices.

Simulated hardware, all from the environment (accelerator.env / cluster.node_env):
* SIMACC_ISLANDS   "0,1;2,3": devices in one group are joined by the fast `simlink`
                   (SIMACC_LINK_GBPS, default 200 GB/s); every other pair goes through host
                   memory (`host`, 25 GB/s). Unset: no islands, every pair via host. Each
                   island is also described as a device domain (`device_domains`).
* SIMACC_DOMAIN / SIMACC_RACK   the node's interconnect domain and rack (the manager
                   publishes the same values as labels).
* SIMACC_MEMORY_MB (default 16384), SIMACC_NUMA_NODES (default 1): per-device memory and how
                   many NUMA nodes the devices are spread over.
"""
from __future__ import annotations

import os
from typing import Any, Dict, List, Optional, Set

from conformance.simulated.manager import DOMAIN_ENV_VAR, RACK_ENV_VAR, SimAccManager

ISLANDS_ENV_VAR = "SIMACC_ISLANDS"
LINK_GBPS_ENV_VAR = "SIMACC_LINK_GBPS"
MEMORY_MB_ENV_VAR = "SIMACC_MEMORY_MB"
NUMA_NODES_ENV_VAR = "SIMACC_NUMA_NODES"
FAST_LINK = "simlink"
HOST_LINK = "host"
HOST_GBPS = 25.0
DEFAULT_LINK_GBPS = 200.0


def node_device_ids() -> List[str]:
    """The ids Ray assigns on this node: the visible-devices list if set (Ray caps the count by
    it), else 0..n-1."""
    n = SimAccManager.get_current_node_num_accelerators()
    visible = SimAccManager.get_current_process_visible_accelerator_ids()
    return visible[:n] if visible is not None else [str(i) for i in range(n)]


def islands() -> List[Set[str]]:
    spec = os.environ.get(ISLANDS_ENV_VAR, "")
    return [{i.strip() for i in group.split(",") if i.strip()} for group in spec.split(";") if group.strip()]


def _env_number(name: str, default: float) -> float:
    try:
        return float(os.environ.get(name, default))
    except ValueError:
        return default


def describe_node() -> Optional[Dict[str, Any]]:
    ids = node_device_ids()
    if not ids:
        return None
    n_numa = max(1, int(_env_number(NUMA_NODES_ENV_VAR, 1)))
    numa_of = {dev: i * n_numa // len(ids) for i, dev in enumerate(ids)}
    cpus = os.cpu_count() or 1
    per = max(1, cpus // n_numa)
    devices = [{
        "id": dev,
        "model": SimAccManager.get_current_node_accelerator_type() or "SIMACC",
        "memory_mb": int(_env_number(MEMORY_MB_ENV_VAR, 16384)),
        "numa_node": numa_of[dev],
        "pci_bus_id": f"0000:{0x10 + i:02x}:00.0",
        "pcie_root": f"pci0000:{(0x40 * numa_of[dev]) & 0xff:02x}",  # one root complex per NUMA node
    } for i, dev in enumerate(ids)]
    groups = islands()
    fast = _env_number(LINK_GBPS_ENV_VAR, DEFAULT_LINK_GBPS)
    links = []
    for i, a in enumerate(ids):
        for b in ids[i + 1:]:
            if any(a in g and b in g for g in groups):
                links.append({"a": a, "b": b, "kind": FAST_LINK, "bandwidth_gbps": fast})
            else:
                links.append({"a": a, "b": b, "kind": HOST_LINK, "bandwidth_gbps": HOST_GBPS,
                              "path": "hostbridge" if numa_of[a] == numa_of[b] else "system"})
    domains = {kind: os.environ[var] for kind, var in (("interconnect", DOMAIN_ENV_VAR), ("rack", RACK_ENV_VAR))
               if os.environ.get(var)}
    desc: Dict[str, Any] = {
        "schema_version": 1,
        "accelerator_type": SimAccManager.get_current_node_accelerator_type(),
        "devices": devices,
        "links": links,
        "nics": [{"name": f"simnic{m}", "numa_node": m, "bandwidth_gbps": 12.5, "rdma": False,
                  "devices": [d for d in ids if numa_of[d] == m]} for m in range(n_numa)],
        "numa_nodes": [{"id": m, "cpus": f"{m * per}-{(m + 1) * per - 1}" if per > 1 else str(m)}
                       for m in range(n_numa)],
        "source": {"provider": "conformance.simulated.topology", "method": "environment"},
    }
    if domains:
        desc["domains"] = domains
    described = [sorted((g & set(ids)), key=ids.index) for g in groups]
    if any(described):
        desc["device_domains"] = [{"name": f"island{k}", "devices": g, "link_kind": FAST_LINK}
                                  for k, g in enumerate(described) if g]
    return desc
