"""What the device checks record as their evidence: compact, pure-JSON slices of what the probes
saw, so that the check's judge (conformance.areas.device.judges) and `verify` recompute the same
problems from report.json.

The contract probe's output is large (tracebacks, the labels call, every part every check does
not read): each contract check records only the parts its `problems_*` function reads, with
tracebacks dropped and long reprs and lists capped. Pure: no Ray, no I/O.
"""
from __future__ import annotations

from typing import Any

REPR_CAP = 200       # knob: characters of a return value's repr kept (the message quotes it; the judge reads `value`/`type`)
ITEMS_CAP = 16       # knob: list items / dict entries kept of a return value (ids lists are a few items)
RECORDS_CAP = 5      # knob: log records kept per observed call (ERROR first, then WARNING)
ERROR_CAP = 500      # knob: characters of an exception message kept

# The probe's method calls every contract check reads beside its own part (what the manager is:
# its resource name, its variable, its count, type and extra resources).
BASIC_METHODS = ("get_resource_name", "get_visible_accelerator_ids_env_var", "get_current_node_num_accelerators",
                 "get_current_node_accelerator_type", "get_current_node_additional_resources")

# The probe parts each contract check's judge reads, beside `manager`, `env_var` and BASIC_METHODS
# (a contract check not listed reads only those: a new one that judges the basic methods needs no row).
CONTRACT_PARTS: dict[str, tuple[str, ...]] = {
    "DP-001": ("validate",), "DP-002": (), "DP-003": ("round_trips",), "DP-004": ("unset_get",),
    "DP-005": ("round_trips",), "DP-016": ("round_trips",), "DP-007": (), "DP-013": ("validate",),
    "DP-014": ("validate",),
}


def compact_description(desc: object) -> Any:
    """A probe's description of a return value (conformance.run.probe_calls.describe), capped."""
    if not isinstance(desc, dict):
        return desc
    out = dict(desc)
    if isinstance(out.get("repr"), str):
        out["repr"] = out["repr"][:REPR_CAP]
    items = out.get("items")
    if isinstance(items, list):
        out["items"] = [compact_description(i) for i in items[:ITEMS_CAP]]
    elif isinstance(items, dict):   # entries DP-001 refuses (not str -> number) are kept first: capping hides no failure
        entries = sorted(items.items(), key=lambda kv: _number_entry(kv[1]))
        out["items"] = dict(entries[:ITEMS_CAP])
    if isinstance(items, (list, dict)) and len(items) > ITEMS_CAP:
        out["items_dropped"] = len(items) - ITEMS_CAP
    return out


def _number_entry(entry: object) -> bool:
    """A dict entry as DP-001 wants it: a str key to an int or float."""
    return isinstance(entry, dict) and entry.get("key_type") == "str" and entry.get("type") in ("int", "float")


def compact_call(entry: object) -> Any:
    """One probe call (conformance.run.probe_calls.call): its result or error, no traceback."""
    if not isinstance(entry, dict):
        return entry
    out = {k: v for k, v in entry.items() if k != "traceback"}
    if "result" in out:
        out["result"] = compact_description(out["result"])
    return out


def contract_evidence(probe: dict[str, Any], check_id: str) -> dict[str, Any]:
    """The parts of the run's contract probe that `check_id`'s judge reads, compact."""
    methods = probe.get("methods", {})
    out: dict[str, Any] = {"manager": probe.get("manager"), "env_var": probe.get("env_var"),
                           "methods": {m: compact_call(methods[m]) for m in BASIC_METHODS if m in methods}}
    for part in CONTRACT_PARTS.get(check_id, ()):
        if part == "validate" and "validate" in probe:
            out["validate"] = {q: compact_call(e) for q, e in probe["validate"].items()}
        elif part == "unset_get" and "unset_get" in probe:
            out["unset_get"] = compact_call(probe["unset_get"])
        elif part == "round_trips" and "round_trips" in probe:
            out["round_trips"] = [{**t, "set": compact_call(t["set"]), "get": compact_call(t["get"])}
                                  for t in probe["round_trips"]]
    return out


def compact_observed(entry: object) -> Any:
    """One observed call of a host probe (conformance.areas.device.host_detection.observe), with
    its log records capped (ERROR and CRITICAL first, then WARNING), so the judge sees what decides."""
    if not isinstance(entry, dict):
        return entry
    out = dict(entry)
    records = out.get("records")
    if isinstance(records, list):
        rank = {"CRITICAL": 0, "ERROR": 0, "WARNING": 1}
        kept = sorted(records, key=lambda r: rank.get(str(r.get("level")), 2) if isinstance(r, dict) else 3)
        out["records"] = kept[:RECORDS_CAP]
        if len(records) > RECORDS_CAP:
            out["records_dropped"] = len(records) - RECORDS_CAP
    if isinstance(out.get("value"), str):
        out["value"] = out["value"][:REPR_CAP]
    return out


def compact_detection(probe: dict[str, Any]) -> dict[str, Any]:
    """A detection probe (host_detection.detect): each method's observed call, compact."""
    return {m: compact_observed(e) for m, e in probe.items()}


def error_text(exc: BaseException, must_show: str | None = None) -> str:
    """`Type: message` of an exception, capped; when `must_show` is inside, the kept part shows it."""
    text = f"{exc.__class__.__name__}: {exc}"
    if len(text) <= ERROR_CAP:
        return text
    at = text.find(must_show) if must_show else -1
    if at < 0 or at + len(must_show or "") <= ERROR_CAP:
        return text[:ERROR_CAP]
    start = max(0, at - ERROR_CAP // 4)
    return text[:ERROR_CAP // 4] + " ... " + text[start:start + ERROR_CAP // 2 + len(must_show or "")]


def seen(state: dict[str, Any], *, manager_view: bool = False) -> dict[str, Any]:
    """What a task or actor saw (conformance.cluster.probes.visible_state), as the judges read it:
    whether the variable was set, its value, the ids Ray assigned (and the manager's own view)."""
    out = {"env_set": state["env_set"], "env_value": state["env_value"], "assigned": list(state["assigned"])}
    if manager_view:
        view = state.get("manager_view")
        out["manager_view"] = view if view is None or isinstance(view, list) else str(view)[:REPR_CAP]
    return out
