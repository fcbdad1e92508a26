"""What the device area's judges share: the table, the manifest as they read it, and the shapes of
the evidence (contract and detection probes, calls, descriptions) every check records.
"""
from __future__ import annotations

import math
from typing import Any, Mapping

from conformance.areas.device.evidence import BASIC_METHODS
from conformance.areas.device.host_detection import (
    DETECTION_METHODS,
)
from conformance.catalog.manifest_view import DEFAULT_QUANTITIES
from conformance.report.judges import (
    FAIL,
    PASS,
    JudgeTable,
    MissingEvidence,
    Verdict,
    number,
)

JUDGES = JudgeTable()

Metrics = Mapping[str, Any]


# ------------------------------------------------------------------------------ the manifest
def _accelerator(manifest: Mapping[str, Any]) -> Mapping[str, Any]:
    acc = manifest.get("accelerator") if isinstance(manifest, Mapping) else None
    if not isinstance(acc, Mapping):
        raise MissingEvidence("the manifest has no accelerator block")
    return acc


def manifest_resource(manifest: Mapping[str, Any]) -> str:
    name = _accelerator(manifest).get("resource_name")
    if not isinstance(name, str) or not name:
        raise MissingEvidence("the manifest has no accelerator.resource_name")
    return name


def manifest_type(manifest: Mapping[str, Any]) -> str:
    expected = _accelerator(manifest).get("expected")
    typ = expected.get("accelerator_type") if isinstance(expected, Mapping) else None
    if not isinstance(typ, str) or not typ:
        raise MissingEvidence("the manifest has no accelerator.expected.accelerator_type")
    return typ


def manifest_devices(manifest: Mapping[str, Any]) -> int:
    expected = _accelerator(manifest).get("expected")
    n = expected.get("devices_per_node") if isinstance(expected, Mapping) else None
    if isinstance(n, bool) or not isinstance(n, int) or n < 1:
        raise MissingEvidence("the manifest has no accelerator.expected.devices_per_node")
    return n


def manifest_nodes(manifest: Mapping[str, Any]) -> int:
    cluster = manifest.get("cluster") if isinstance(manifest, Mapping) else None
    n = cluster.get("nodes", 1) if isinstance(cluster, Mapping) else 1   # the schema's default
    return n if isinstance(n, int) and not isinstance(n, bool) and n >= 1 else 1


def manifest_quantities(manifest: Mapping[str, Any]) -> dict[str, list[float]]:
    """accelerator.quantities with the manifest's defaults (conformance.catalog.manifest)."""
    q = _accelerator(manifest).get("quantities") or {}
    if not isinstance(q, Mapping):
        raise MissingEvidence("the manifest's accelerator.quantities is not a mapping")
    out: dict[str, list[float]] = {}
    for k in ("valid", "invalid"):
        values = q.get(k, DEFAULT_QUANTITIES[k])
        if not isinstance(values, list) or not all(isinstance(v, (int, float)) and not isinstance(v, bool)
                                                   and math.isfinite(v) for v in values):
            raise MissingEvidence(f"the manifest's accelerator.quantities.{k} is not a list of numbers")
        out[k] = [float(v) for v in values]
    return out


def _key(q: float) -> str:
    """How the probe and the live checks key a quantity (repr of a float)."""
    return repr(float(q))


# ------------------------------------------------------------------------------ evidence shapes
def _mapping(value: object, where: str) -> Mapping[str, Any]:
    if not isinstance(value, Mapping):
        raise MissingEvidence(f"{where} is missing or not an object")
    return value


def _list(value: object, where: str) -> list[Any]:
    if not isinstance(value, list):
        raise MissingEvidence(f"{where} is missing or not a list")
    return value


def _str_or_none(value: object, where: str) -> str | None:
    if value is not None and not isinstance(value, str):
        raise MissingEvidence(f"{where} is not a string or null")
    return value


def _bool(value: object, where: str) -> bool:
    if not isinstance(value, bool):
        raise MissingEvidence(f"{where} is missing or not true/false")
    return value


def _ids(value: object, where: str) -> list[str]:
    items = _list(value, where)
    if not all(isinstance(i, str) for i in items):
        raise MissingEvidence(f"{where} holds something other than id strings")
    return items


def _typed_value(kind: object, value: object, where: str) -> None:
    """A value beside its recorded Python type name: they must agree (a forged `int` that is NaN,
    a string or a bool is malformed evidence)."""
    if not isinstance(kind, str):
        raise MissingEvidence(f"{where}.type is missing")
    ok = {"int": lambda v: isinstance(v, int) and not isinstance(v, bool),
          "float": lambda v: isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v),
          "bool": lambda v: isinstance(v, bool), "str": lambda v: isinstance(v, str),
          "NoneType": lambda v: v is None}.get(kind)
    if ok is not None and not ok(value):
        raise MissingEvidence(f"{where}.value {value!r} is not a {kind}")


def _description(d: object, where: str) -> None:
    """A return value as the contract probe describes it (conformance.run.probe_calls.describe)."""
    d = _mapping(d, where)
    kind = d.get("type")
    if kind in ("list", "tuple"):
        for i, item in enumerate(_list(d.get("items"), f"{where}.items")):
            _description(item, f"{where}.items[{i}]")
    elif kind == "dict":
        for k, item in _mapping(d.get("items"), f"{where}.items").items():
            item = _mapping(item, f"{where}.items.{k}")
            if not isinstance(item.get("key_type"), str) or not isinstance(item.get("type"), str):
                raise MissingEvidence(f"{where}.items.{k} lacks its key and value types")
    else:
        _typed_value(kind, d.get("value"), where)


def _call(entry: object, where: str) -> Mapping[str, Any]:
    """One call of the contract probe: ok and its described result, or the error it raised."""
    entry = _mapping(entry, where)
    if _bool(entry.get("ok"), f"{where}.ok"):
        _description(entry.get("result"), f"{where}.result")
    elif not isinstance(entry.get("error"), str):
        raise MissingEvidence(f"{where}.error is missing")
    return entry


def contract_probe(m: Metrics, parts: tuple[str, ...] = ()) -> dict[str, Any]:
    """The recorded slice of the contract probe, checked to be what the probe writes."""
    probe = dict(_mapping(m.get("probe"), "metric probe"))
    _str_or_none(probe.get("env_var"), "probe.env_var")
    methods = _mapping(probe.get("methods"), "probe.methods")
    for name in BASIC_METHODS:
        _call(methods.get(name), f"probe.methods.{name}")
    if "validate" in parts:
        for q, entry in _mapping(probe.get("validate"), "probe.validate").items():
            _call(entry, f"probe.validate.{q}")
    if "unset_get" in parts and probe.get("env_var") is not None:
        _call(probe.get("unset_get"), "probe.unset_get")
    if "round_trips" in parts and probe.get("env_var") is not None:
        for i, trip in enumerate(_list(probe.get("round_trips"), "probe.round_trips")):
            trip = _mapping(trip, f"probe.round_trips[{i}]")
            _ids(trip.get("ids"), f"probe.round_trips[{i}].ids")
            _ids(trip.get("changed_vars"), f"probe.round_trips[{i}].changed_vars")
            _str_or_none(trip.get("env_value"), f"probe.round_trips[{i}].env_value")
            _call(trip.get("set"), f"probe.round_trips[{i}].set")
            _call(trip.get("get"), f"probe.round_trips[{i}].get")
    return probe


def _observed(entry: object, where: str) -> Mapping[str, Any]:
    """One observed call of a host probe (conformance.areas.device.host_detection.observe)."""
    entry = _mapping(entry, where)
    seconds = number(entry, "seconds") if "seconds" in entry else None
    if seconds is None or seconds < 0:
        raise MissingEvidence(f"{where}.seconds is missing or negative")
    for i, r in enumerate(_list(entry.get("records"), f"{where}.records")):
        r = _mapping(r, f"{where}.records[{i}]")
        if not all(isinstance(r.get(k), str) for k in ("level", "logger", "message")):
            raise MissingEvidence(f"{where}.records[{i}] lacks its level, logger or message")
    if _bool(entry.get("ok"), f"{where}.ok"):
        _typed_value(entry.get("type"), entry.get("value"), where)
    elif not isinstance(entry.get("error"), str):
        raise MissingEvidence(f"{where}.error is missing")
    return entry


def detection_probe(value: object, where: str) -> dict[str, Any]:
    """A host's detection probe: every detection method observed."""
    probe = dict(_mapping(value, where))
    for method in DETECTION_METHODS:
        _observed(probe.get(method), f"{where}.{method}")
    return probe


def _verdict(problems: list[str], passed: str) -> Verdict:
    return Verdict(FAIL, "; ".join(problems)) if problems else Verdict(PASS, passed)


def _resource_recorded(m: Metrics, manifest: Mapping[str, Any]) -> list[str]:
    """The resource the live evidence was taken for is the manifest's."""
    want = manifest_resource(manifest)
    got = m.get("resource")
    if not isinstance(got, str):
        raise MissingEvidence("metric resource is missing")
    return [] if got == want else [f"the evidence is of resource {got!r}; the manifest's is {want!r}"]
