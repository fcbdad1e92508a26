"""The topology description (schemas/topology.schema.json): validation and comparisons.

Pure functions, no Ray. Each returns a list of one-line problems; an empty list means the
description passed. The schema catches shape errors (types, required fields, non-positive
bandwidths); the semantic pass catches what a schema cannot: duplicate ids, links and NICs
that name devices the description does not have, self-links.
"""
from __future__ import annotations

import functools
from typing import Any, Iterable, Mapping

import jsonschema

from conformance.catalog.datafiles import format_validation_error, load_schema
from conformance.catalog.manifest_view import TopologyExpected

MAX_SCHEMA_ERRORS = 8  # knob: how many schema errors a reason shows


@functools.lru_cache(maxsize=1)
def _validator() -> jsonschema.Draft202012Validator:
    return jsonschema.Draft202012Validator(load_schema("topology"))


def schema_problems(desc: object) -> list[str]:
    errors = sorted(_validator().iter_errors(desc), key=lambda e: (list(e.absolute_path), e.message))
    return [format_validation_error(e) for e in errors[:MAX_SCHEMA_ERRORS]]


def device_ids(desc: Mapping[str, Any]) -> list[str]:
    return [str(d.get("id")) for d in desc.get("devices", []) if isinstance(d, Mapping)]


def semantic_problems(desc: Mapping[str, Any]) -> list[str]:
    """Cross-references inside one (schema-valid) description."""
    problems: list[str] = []
    ids = device_ids(desc)
    dupes = sorted({i for i in ids if ids.count(i) > 1})
    if dupes:
        problems.append(f"devices: duplicate ids {dupes}")
    known = set(ids)
    seen: set[tuple[tuple[str, str], str, bool]] = set()
    for n, link in enumerate(desc.get("links", [])):
        a, b = link["a"], link["b"]
        for end in (a, b):
            if end not in known:
                problems.append(f"links[{n}]: {a}-{b} ({link['kind']}) references device {end!r}, "
                                f"which the description does not list (devices: {sorted(known)})")
        if a == b:
            problems.append(f"links[{n}]: links device {a!r} to itself")
        directed = bool(link.get("directed"))
        key = ((a, b) if directed else (min(a, b), max(a, b)), link["kind"], directed)
        if key in seen:
            problems.append(f"links[{n}]: duplicate {link['kind']} link {a}-{b}")
        seen.add(key)
    for n, nic in enumerate(desc.get("nics", [])):
        for dev in nic.get("devices", []):
            if dev not in known:
                problems.append(f"nics[{n}] ({nic['name']}): affinity to device {dev!r}, which the description "
                                "does not list")
    problems += device_domain_problems(desc, known)
    numa = {m["id"] for m in desc.get("numa_nodes", [])}
    if numa:
        for where, items in (("devices", desc.get("devices", [])), ("nics", desc.get("nics", []))):
            for n, item in enumerate(items):
                node = item.get("numa_node")
                if node is not None and node not in numa:
                    problems.append(f"{where}[{n}]: numa_node {node} is not among numa_nodes {sorted(numa)}")
    return problems


def device_domain_problems(desc: Mapping[str, Any], known: set[str]) -> list[str]:
    """The node's device domains (islands) agree with its devices and links: each names described
    devices, no device is in two, names are unique, and with `link_kind` every pair inside is
    joined by a link of that kind while no link of that kind joins devices of different domains
    (an island drawn one way and wired another misleads every placement built on it)."""
    problems: list[str] = []
    domains = desc.get("device_domains") or []
    owner: dict[str, str] = {}
    names: set[str] = set()
    for n, dom in enumerate(domains):
        name, devices = dom["name"], [str(d) for d in dom["devices"]]
        if name in names:
            problems.append(f"device_domains[{n}]: duplicate name {name!r}")
        names.add(name)
        for dev in devices:
            if dev not in known:
                problems.append(f"device_domains[{n}] ({name}): device {dev!r} is not among the described devices")
            elif dev in owner:
                problems.append(f"device_domains[{n}] ({name}): device {dev!r} is already in {owner[dev]!r}")
            else:
                owner[dev] = name
        kind = dom.get("link_kind")
        if kind:
            unlinked = [f"{a}-{b}" for i, a in enumerate(devices) for b in devices[i + 1:]
                        if not any(lk["kind"] == kind for lk in links_between(desc, a, b) + links_between(desc, b, a))]
            if unlinked:
                problems.append(f"device_domains[{n}] ({name}): no {kind} link joins {unlinked[:6]}, though the "
                                f"domain says {kind} joins its devices")
    kinds = {dom.get("link_kind"): dom["name"] for dom in domains if dom.get("link_kind")}
    for n, link in enumerate(desc.get("links", [])):
        if link["kind"] in kinds and owner.get(link["a"]) != owner.get(link["b"]):
            problems.append(f"links[{n}]: a {link['kind']} link joins {link['a']} ({owner.get(link['a']) or 'no domain'})"
                            f" and {link['b']} ({owner.get(link['b']) or 'no domain'}): device_domains say {link['kind']}"
                            " stays inside a domain")
    return problems


def description_problems(desc: Any) -> list[str]:
    """Schema first; the semantic pass only runs on a schema-valid description."""
    problems = schema_problems(desc)
    return problems or semantic_problems(desc)


def ray_view_problems(desc: Mapping[str, Any], ray_ids: Iterable[str], node_type: str | None) -> list[str]:
    """The description must describe exactly the devices Ray schedules on the node."""
    problems = []
    ids, ray_set = device_ids(desc), sorted(str(i) for i in ray_ids)
    if sorted(ids) != ray_set:
        missing = sorted(set(ray_set) - set(ids))
        extra = sorted(set(ids) - set(ray_set))
        detail = "; ".join(x for x in (f"Ray's ids missing from it: {missing}" if missing else "",
                                       f"ids Ray never assigns: {extra}" if extra else "") if x)
        problems.append(f"describes devices {sorted(ids)} but Ray hands out {ray_set} on this node ({detail})")
    if node_type is not None and desc.get("accelerator_type") != node_type:
        problems.append(f"accelerator_type {desc.get('accelerator_type')!r} differs from the manager's type "
                        f"{node_type!r} on this node")
    return problems


def links_between(desc: Mapping[str, Any], a: str, b: str) -> list[Mapping[str, Any]]:
    out = []
    for link in desc.get("links", []):
        ends = (link["a"], link["b"])
        if ends == (a, b) or (not link.get("directed") and ends == (b, a)):
            out.append(link)
    return out


def expected_problems(desc: Mapping[str, Any], expected: TopologyExpected) -> list[str]:
    """Compare with the manifest's topology.expected (its typed view: catalog/manifest_view.py)."""
    problems = []
    ids = device_ids(desc)
    want = expected.devices_per_node
    if want is not None and len(ids) != want:
        problems.append(f"describes {len(ids)} devices; topology.expected.devices_per_node is {want}")
    for spec in expected.links or ():
        a, b, kind = spec.a, spec.b, spec.kind
        found = [lk for lk in links_between(desc, a, b) if lk["kind"] == kind]
        floor = spec.min_bandwidth_gbps
        if not found:
            kinds = sorted({lk["kind"] for lk in links_between(desc, a, b)})
            problems.append(f"no {kind} link {a}-{b} described (kinds between them: {kinds or 'none'})")
        elif floor is not None and max(lk["bandwidth_gbps"] for lk in found) < floor:
            best = max(lk["bandwidth_gbps"] for lk in found)
            problems.append(f"{kind} link {a}-{b} is described at {best:g} GB/s; expected at least {floor:g} GB/s")
    if expected.fully_connected:
        lonely = [f"{a}-{b}" for i, a in enumerate(ids) for b in ids[i + 1:]
                  if not links_between(desc, a, b) and not links_between(desc, b, a)]
        if lonely:
            problems.append(f"expected every device pair to be linked; no link for {lonely[:6]}"
                            + (f" (+{len(lonely) - 6} more)" if len(lonely) > 6 else ""))
    want_islands = sorted(sorted(str(d) for d in group) for group in expected.device_domains or ())
    if want_islands:
        have = sorted(sorted(str(d) for d in dom["devices"]) for dom in desc.get("device_domains") or [])
        if have != want_islands:
            problems.append(f"device_domains group the devices as {have or 'nothing'}; topology.expected.device_domains "
                            f"is {want_islands}")
    domains = desc.get("domains", {})
    for kind in expected.domains or ():
        if not domains.get(kind):
            problems.append(f"describes no {kind} domain; topology.expected.domains requires it")
    return problems


def described_value(desc: Mapping[str, Any] | None, field: str) -> str | None:
    """The description's value for a vocabulary `describes` field, as a label-style string."""
    if desc is None:
        return None
    if field == "device_count":
        return str(len(desc.get("devices", [])))
    obj: Any = desc
    for part in field.split("."):
        if not isinstance(obj, Mapping) or part not in obj:
            return None
        obj = obj[part]
    return None if obj is None else str(obj)
