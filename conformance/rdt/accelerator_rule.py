"""The accelerator-exercised rule: a check that runs on each declared device type
(conformance.rdt.each_device) passes only if it ran on the accelerator's own type, unless the
reason it records for not running there is one the suite itself gives and the manifest gives
too.

Why: each_device records a type it could not run on in `metrics.not_applicable_on` with the
reason, and a judge that took that reason as written certified a transport that moved nothing on
the accelerator and worked only on the host (red team X02: "not applicable on simacc: ValueError:
the device cannot hold this payload"). The host is the type every plugin gets from Ray; the
accelerator is what the certificate is about.

The accelerator's type is the first declared type that is not the host, in the block the check
reads (transport.devices, collective.rdt_devices). The reasons the suite gives for a type it cannot
run on are the checks' own, built here (so a record and the rule cannot drift apart) and each
recomputed from the manifest: the units one node offers (accelerator.expected.devices_per_node)
and the nodes with devices the cluster has (cluster.nodes and node_env:
catalog.manifest.declared_device_nodes). A reason the manifest contradicts (a node of 4
units "has too few for 2"), or any other reason (a vendor's exception, an empty string), fails the
check. Every judge that reads per-type records and verify (conformance/signing/evidence.py) apply
this one rule; a manifest that declares only the host narrows what is tested (a signed claim the
release's policy, not a judge, would have to forbid).
"""
from __future__ import annotations

import math
import re
from typing import Any, Callable, Mapping, Sequence

from conformance.catalog.manifest import declared_device_nodes
from conformance.rdt.device import is_host

RULE = "accelerator-exercised"
TWO_NODES = 2   # what a check between two nodes needs (one_node_reason: "needs two"): structure, not a threshold


# ------------------------------------------------------------------ the reasons the suite gives
def endpoints_reason(device: str, n: int) -> str:
    """The transport checks: fewer than n endpoints holding a `device` unit fit on one node."""
    return f"needs {n} endpoints with a {device} device on one node"


def actors_reason(device: str, n: int, have: float, resource: str) -> str:
    """The transport usage checks: n actors each holding a unit on one node."""
    return f"needs {n} actors holding a {device} device on one node; the node has {have:g} {resource}"


def peers_reason(device: str, n: int, resource: str) -> str:
    """The recovery transfer checks: a pair of peers sharing n units on one node."""
    return f"peers on {device} need {n} {resource} unit(s) on one node; no node has them"


def one_node_reason(device: str, resource: str) -> str:
    """A check between two nodes on a cluster with one (with the resource, for a device type)."""
    return f"the cluster has one node{'' if is_host(device) else ' with ' + resource}; needs two"


def members_reason(why: str, n: int, resource: str, per_node: Sequence[float]) -> str:
    """The collective checks: n members each holding one unit, placed round-robin over the nodes."""
    return (f"{why}: {n} members each holding one {resource} unit (so Ray sets their visible devices) over the "
            f"nodes that offer it; the cluster has {', '.join(f'{h:g}' for h in per_node) or 'none'} per node")


def _units(manifest: Mapping[str, Any]) -> int | None:
    acc = manifest.get("accelerator") if isinstance(manifest, Mapping) else None
    expected = acc.get("expected") if isinstance(acc, Mapping) else None
    n = expected.get("devices_per_node") if isinstance(expected, Mapping) else None
    return n if isinstance(n, int) and not isinstance(n, bool) and n > 0 else None


def _device_nodes(manifest: Mapping[str, Any]) -> int:
    """The nodes with devices the suite starts from the manifest (catalog.manifest.declared_device_nodes)."""
    return declared_device_nodes(manifest) if isinstance(manifest, Mapping) else 1


def _needs_units(m: re.Match[str], manifest: Mapping[str, Any]) -> str | None:
    n, units = int(m["n"]), _units(manifest)
    if units is None:
        return None
    return f"the manifest declares {units} unit(s) per node, fewer than {n}" if units < n else None


def _needs_nodes(m: re.Match[str], manifest: Mapping[str, Any]) -> str | None:
    nodes = _device_nodes(manifest)
    return f"the manifest declares {nodes} node(s) with devices" if nodes < TWO_NODES else None


def _needs_members(m: re.Match[str], manifest: Mapping[str, Any]) -> str | None:
    n, units, nodes = int(m["n"]), _units(manifest), _device_nodes(manifest)
    if units is None or nodes < 1:
        return None
    per_node = math.ceil(n / nodes)
    return (f"{n} members over the manifest's {nodes} node(s) need {per_node} unit(s) on one; it declares {units}"
            if per_node > units else None)


_D, _W = r"(?P<device>[^\s;]+)", r"[^\s;]+"
# (the reason's shape, what the manifest must declare for it to hold); each shape is one builder's above
_REASONS: tuple[tuple[re.Pattern[str], Callable[[re.Match[str], Mapping[str, Any]], str | None]], ...] = (
    (re.compile(rf"needs (?P<n>\d+) endpoints with a {_D} device on one node"), _needs_units),
    (re.compile(rf"needs (?P<n>\d+) actors holding a {_D} device on one node; the node has {_W} {_W}"), _needs_units),
    (re.compile(rf"peers on {_D} need (?P<n>\d+) {_W} unit\(s\) on one node; no node has them"), _needs_units),
    (re.compile(rf"the cluster has one node(?: with {_W})?; needs two"), _needs_nodes),
    (re.compile(rf".+ on {_D}: (?P<n>\d+) members each holding one {_W} unit \(so Ray sets their visible devices\) "
                r"over the nodes that offer it; the cluster has .* per node"), _needs_members),
)


def recomputed(reason: str, device: str, manifest: Mapping[str, Any]) -> str | None:
    """What in the manifest gives `reason` for not running on `device` (None: the suite gives no
    such reason, it names another type, or the manifest declares enough for the check to run)."""
    for pattern, holds in _REASONS:
        m = pattern.fullmatch(reason.strip())
        if m is None:
            continue
        if "device" in pattern.groupindex and m["device"] != device:
            return None
        return holds(m, manifest)
    return None


# ------------------------------------------------------------------ the rule
def accelerator_type(declared: Sequence[str]) -> str | None:
    """The accelerator's type in a declared list: its first type that is not the host."""
    return next((str(d) for d in declared if not is_host(str(d))), None)


def _list(block: object, key: str) -> list[str]:
    value = block.get(key) if isinstance(block, Mapping) else None
    return [str(v) for v in value] if isinstance(value, list) else []


def accelerator_types(manifest: Mapping[str, Any]) -> set[str]:
    """The accelerator's type in every block whose checks run on each declared type (the
    transport's devices, the collective block's RDT devices): what verify holds every record to."""
    if not isinstance(manifest, Mapping):
        return set()
    lists = (_list(manifest.get("transport"), "devices"), _list(manifest.get("collective"), "rdt_devices"))
    return {a for a in (accelerator_type(d) for d in lists) if a is not None}


def not_run_problem(device: str, skipped: object, manifest: Mapping[str, Any]) -> str | None:
    """Why `device` (the accelerator's type) not running fails the check (None: the manifest gives
    the recorded reason)."""
    why = skipped.get(device) if isinstance(skipped, Mapping) else None
    if not isinstance(why, str) or not why.strip():
        return (f"the accelerator's type {device} was not exercised and no reason is recorded ({RULE}: a pass "
                "needs the accelerator exercised)")
    if recomputed(why, device, manifest) is not None:
        return None
    return (f"the accelerator's type {device} was not exercised ({why[:160]!r}): not a reason the suite gives that "
            f"the manifest bears out ({RULE}: a pass needs the accelerator exercised)")


def coverage_problem(declared: Sequence[str], exercised: object, skipped: object, manifest: Mapping[str, Any]) -> str | None:
    """The rule on one check's per-type record: every declared type exercised or recorded not
    applicable with a reason, and the accelerator's type exercised unless the manifest gives its
    reason (None: it holds)."""
    ran = [str(d) for d in exercised] if isinstance(exercised, list) else []
    acc = accelerator_type(declared)
    for d in declared:
        if str(d) in ran or str(d) == acc:
            continue
        why = skipped.get(str(d)) if isinstance(skipped, Mapping) else None
        if not isinstance(why, str) or not why.strip():
            return f"the declared device type {d} was neither exercised nor recorded not applicable with a reason"
    if acc is None or acc in ran:
        return None
    return not_run_problem(acc, skipped, manifest)


def recorded_problem(metrics: Mapping[str, Any], manifest: Mapping[str, Any]) -> str | None:
    """verify's reading of the rule on any check's record, whatever its judge: an accelerator type
    the record says the check did not run on needs a reason the manifest gives."""
    skipped = metrics.get("not_applicable_on") if isinstance(metrics, Mapping) else None
    if not isinstance(skipped, Mapping) or not skipped:
        return None
    ran = metrics.get("devices")
    ran_on = {str(d) for d in ran} if isinstance(ran, (list, Mapping)) else set()
    for acc in sorted(accelerator_types(manifest)):
        if acc in skipped and acc not in ran_on:
            problem = not_run_problem(acc, skipped, manifest)
            if problem is not None:
                return problem
    return None
