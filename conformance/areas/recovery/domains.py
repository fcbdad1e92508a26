"""FR-019's plan: a group packed into one failure domain of the node shape by Ray's
topology-aware placement, the node of that domain that dies, and where its lost bundle may go.
Pure: the live check plans with it from the cluster view, and the judge plans again from the
record, so a record that moved the group or the victim is refused.

Ray's contract (Ray >= 2.57, `placement_group(..., topology_strategy={<label>: "STRICT_PACK"})`;
the fault-tolerance part of "Topology aware scheduling" in Ray's placement-group docs, ray#63740):
when some nodes of the label value a group was packed into die (a partial failure), Ray places
the lost bundles again on surviving nodes **with the same value**; when that value has no room,
they stay pending until room appears in it. (When every node of the group dies, Ray places the
whole group again on any value: not what FR-019 makes.)

What decides whether a lost bundle can come back into its domain is the plugin's label on the
nodes: above all on the node that comes back. The host that died is started again with its own
environment, so it is in the domain it was in (the same stance as FR-011); a plugin that labels it
with another value (a default while its fabric is not up, a stale cache) leaves the group
pending for good, or, where that value is another domain's, packs it across domains.

The layout record, by role: {"devices": n, "domains": {packing key: value, ...}}.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Mapping, Sequence

from conformance.cluster.faults import ROLES

NODE_LEVEL_KEY = "ray.io/node-id"   # Ray's node-level entry of topology_strategy
BUNDLES = 2                           # knob: structure: two one-device bundles on two nodes of one domain
Layout = Mapping[str, Mapping[str, Any]]


def layout_of(nodes_by_role: Mapping[str, Mapping[str, Any]], resource: str, keys: Sequence[str]) -> dict[str, Any]:
    """The layout record of live nodes (ray.nodes() entries by role): each role's device count and
    the packing keys (`keys`, the vocabulary's, in its order) its labels carry."""
    out: dict[str, Any] = {}
    for role, node in sorted(nodes_by_role.items(), key=lambda kv: _rank(kv[0])):
        labels = node.get("Labels") or {}
        out[role] = {"devices": float((node.get("Resources") or {}).get(resource, 0.0)),
                     "domains": {k: str(labels[k]) for k in keys if k in labels}}
    return out


def _rank(role: str) -> int:
    return ROLES.index(role) if role in ROLES else len(ROLES)


def device_roles(layout: Layout) -> list[str]:
    return sorted((r for r, n in layout.items() if float(n.get("devices") or 0) >= 1), key=_rank)


def domain_of(layout: Layout, role: str, key: str) -> str | None:
    value = (layout.get(role) or {}).get("domains", {}).get(key)
    return None if value is None else str(value)


def packing_key(layout: Layout, keys: Sequence[str]) -> str | None:
    """The first packing key (the vocabulary's order) a role with devices carries: TL-014's rule."""
    for key in keys:
        if any(domain_of(layout, r, key) is not None for r in device_roles(layout)):
            return key
    return None


def members(layout: Layout, key: str) -> dict[str, list[str]]:
    """The roles with devices of each value of `key`, by their labels."""
    out: dict[str, list[str]] = {}
    for r in device_roles(layout):
        value = domain_of(layout, r, key)
        if value is not None:
            out.setdefault(value, []).append(r)
    return out


def why_not_applicable(layout: Layout, keys: Sequence[str]) -> str | None:
    """Why the shape cannot make FR-019's scenario (None: it can): no packing label on a node
    with devices, or no value of it shared by two of them (one of them one the driver may kill)."""
    key = packing_key(layout, keys)
    if key is None:
        return (f"no node of the recovery-nodes shape with devices carries a packing domain label ({', '.join(keys)}): "
                "nothing to pack into")
    shared = {v: rs for v, rs in members(layout, key).items() if len(rs) >= BUNDLES and any(r != ROLES[0] for r in rs)}
    if not shared:
        return (f"no two nodes of the recovery-nodes shape with devices share a {key} value "
                f"({ {v: rs for v, rs in members(layout, key).items()} }): no group packs into one domain of two nodes")
    return None


def strategy(key: str) -> dict[str, str]:
    """The group's topology_strategy: one value of `key` (STRICT_PACK), one bundle per node there
    (STRICT_SPREAD), so that losing one node loses one bundle and the survivor cannot take it."""
    return {key: "STRICT_PACK", NODE_LEVEL_KEY: "STRICT_SPREAD"}


@dataclass(frozen=True)
class Plan:
    """Where the group landed and what the scenario does about it."""

    domain: str                  # the value of the key the group was packed into
    victim: str                  # the role that dies (a bundle's node the driver may kill)
    survivor: str                # the other bundle's node
    lost: int                    # the victim's bundle index
    filled: tuple[str, ...]      # other roles of the domain: held full, so the domain has no room left
    outside: tuple[str, ...]     # roles of other values (or none): free, and never the bundle's


def plan_after_placement(layout: Layout, key: str, placed: Mapping[int, str]) -> Plan | str:
    """The plan for the group's bundles on `placed` (bundle index -> role), or what is wrong with
    that placement: not BUNDLES distinct nodes with devices of one value of `key`."""
    roles = [placed[i] for i in sorted(placed)]
    if sorted(placed) != list(range(BUNDLES)) or len(set(roles)) != BUNDLES:
        return f"the {BUNDLES} bundles were placed on {roles}, not on {BUNDLES} distinct nodes"
    values = {r: domain_of(layout, r, key) for r in roles}
    if None in values.values() or len(set(values.values())) != 1:
        return f"the group packed with topology_strategy={strategy(key)} spans {key} labels {values}"
    if any(r not in device_roles(layout) for r in roles):
        return f"a bundle was placed on a node without devices ({roles})"
    victim = next((r for r in sorted(roles, key=_rank) if r != ROLES[0]), None)
    if victim is None:   # two distinct nodes, at most one the head
        return f"no bundle on a node the driver may kill ({roles})"
    domain = str(values[victim])
    rest = [r for r in device_roles(layout) if r not in roles]
    return Plan(domain=domain, victim=victim, survivor=next(r for r in roles if r != victim),
                lost=next(i for i, r in placed.items() if r == victim),
                filled=tuple(r for r in rest if domain_of(layout, r, key) == domain),
                outside=tuple(r for r in rest if domain_of(layout, r, key) != domain))
