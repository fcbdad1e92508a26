"""Contract checks of an AcceleratorManager: run the probe, then judge its output.

The judging functions are pure (probe output in, list of problems out) so they are unit-tested
without Ray and reused for the table of Ray's built-in managers.
"""
from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from typing import TYPE_CHECKING, Any

from conformance.areas.device.contract_probe import MARKER, ROUND_TRIPS
from conformance.areas.device.host_detection import DETECTION_METHODS
from conformance.catalog.vendor_calls import NODE_START_METHODS, HangRecord, KnownHang, hang_text
from conformance.catalog.vendor_calls import knobs as vendor_knobs
from conformance.run.probe_calls import CALLING

if TYPE_CHECKING:
    from conformance.run.check_context import RunView
    from conformance.timing.host_load import MachineryRecord

# Ray's predefined resources and prefixes a custom accelerator must not use.
# "GPU" is not here: Ray reserves it *for* accelerator managers (NVIDIA, AMD, Intel, Apple, Metax).
RESERVED_RESOURCE_NAMES = {"CPU", "memory", "object_store_memory", "node", "bundle"}
RESOURCE_NAME_RE = re.compile(r"^[A-Za-z][A-Za-z0-9_.\-/]*$")


# Which manager methods each probe mode calls (conformance.areas.device.contract_probe): a method known to hang
# (the run's HangRecord) fails a probe that would call it at once.
CONTRACT_METHODS = (*NODE_START_METHODS, "validate_resource_request_quantity",
                    "get_current_process_visible_accelerator_ids", "set_current_process_visible_accelerator_ids")
MODE_METHODS = {"contract": CONTRACT_METHODS, "detect": DETECTION_METHODS, "overcommit": NODE_START_METHODS,
                "noset": ("set_current_process_visible_accelerator_ids",)}


def probe_timeout_s(run: RunView) -> float:
    """How long a contract probe may take in all before it counts as a hang: the check's own
    budget, less what the setup needs, and never more than tiers/run.yaml's probe_timeout_s."""
    return min(vendor_knobs(run.machinery)["probe_timeout_s"], run.default_timeout, 0.75 * run.setup_timeout)


class ProbeFailed(Exception):
    """The probe process itself failed (crash, hang, import error)."""

    def __init__(self, message: str, hung_method: str | None = None) -> None:
        super().__init__(message)
        self.hung_method = hung_method


def last_call(stderr: str | bytes | None) -> str | None:
    """The manager method the probe was calling when it stopped (from its CALLING lines)."""
    text = stderr.decode(errors="replace") if isinstance(stderr, bytes) else (stderr or "")
    calls = [ln[len(CALLING):].strip() for ln in text.splitlines() if ln.startswith(CALLING)]
    return calls[-1] if calls else None


def run_contract_probe(manager_ref: str, *, python_path: list[str], env: dict[str, str],
                       quantities: list[float] | None = None, timeout_s: float = 60.0,  # knob: hang guard; checks pass their bound
                       mode: str = "contract", hangs: HangRecord | None = None, found_by: str = "a contract probe",
                       machinery: MachineryRecord | None = None, **options: Any) -> dict[str, Any]:
    """Run conformance.areas.device.contract_probe in a subprocess with the manifest's environment
    (`mode`/`options`: the host probes of conformance.areas.device.host_detection).

    Each manager call in it has the call bound (tiers/run.yaml vendor_calls.call_bound_s, at most
    `timeout_s`; stretched as the run's `machinery` record stretches it), the whole probe
    `timeout_s`. With the run's `hangs`: a probe that would call a method known to hang fails at
    once, and a hang found here is recorded for later probes."""
    known = hangs.blocking(MODE_METHODS.get(mode, CONTRACT_METHODS)) if hangs is not None else None
    if known is not None:
        raise ProbeFailed(f"contract probe of {manager_ref} not run: {known.reason()}; not called again",
                          hung_method=known.method)
    child_env = dict(os.environ)
    child_env.update(env)
    child_env["PYTHONPATH"] = os.pathsep.join(python_path + [child_env.get("PYTHONPATH", "")]).strip(os.pathsep)
    config = json.dumps({"manager": manager_ref, "python_path": python_path, "quantities": quantities or [1],
                         "mode": mode, **options})
    bound = min(vendor_knobs(machinery)["call_bound_s"], timeout_s)
    returncode, stdout, stderr, hung = _run_bounded([sys.executable, "-m", "conformance.areas.device.contract_probe", config],
                                                    child_env, call_bound_s=bound, timeout_s=timeout_s)
    if hung is not None:
        method, waited = hung
        if hangs is not None and method is not None:
            hangs.add(KnownHang(method, found_by, waited))
        what = hang_text(method, waited) if method else f"did not finish within {waited:.0f}s (a hang)"
        raise ProbeFailed(f"contract probe of {manager_ref}: {what}", hung_method=method)
    lines = [ln for ln in stdout.splitlines() if ln.startswith(MARKER)]
    if not lines:
        tail = (stderr or stdout).strip().splitlines()[-1:] or ["no output"]
        raise ProbeFailed(f"contract probe of {manager_ref} exited {returncode}: {tail[0][:300]}")
    result: dict[str, Any] = json.loads(lines[-1][len(MARKER):])
    if "import_error" in result:
        raise ProbeFailed(f"cannot import {manager_ref}: {result['import_error']}")
    return result


def _run_bounded(cmd: list[str], env: dict[str, str], *, call_bound_s: float,
                 timeout_s: float) -> tuple[int, str, str, tuple[str | None, float] | None]:
    """Run the probe; kill it when one call (from its CALLING line on) passes `call_bound_s` or
    the whole passes `timeout_s`. Returns (exit code, stdout, stderr, (hung method, bound) or None)."""
    import threading
    import time

    proc = subprocess.Popen(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    out: list[str] = []
    err: list[str] = []
    calling: list[tuple[float, str]] = []

    def read_err() -> None:
        assert proc.stderr is not None
        for line in proc.stderr:
            err.append(line)
            if line.startswith(CALLING):
                calling.append((time.monotonic(), line[len(CALLING):].strip()))

    readers = [threading.Thread(target=lambda: out.extend(proc.stdout or ()), daemon=True),
               threading.Thread(target=read_err, daemon=True)]
    for t in readers:
        t.start()
    started = time.monotonic()
    hung: tuple[str | None, float] | None = None
    while proc.poll() is None:
        now = time.monotonic()
        if calling and now - calling[-1][0] > call_bound_s:
            hung = (calling[-1][1], call_bound_s)
        elif now - started > timeout_s:
            hung = (calling[-1][1] if calling else None, timeout_s)
        if hung is not None:
            proc.kill()
            break
        time.sleep(0.05)
    proc.wait()
    for t in readers:
        t.join(timeout=5)  # knob: the readers end with the process; a bound, not a threshold
    return proc.returncode, "".join(out), "".join(err), hung


def _ret(probe: dict[str, Any], method: str) -> tuple[bool, dict[str, Any] | str]:
    entry = probe["methods"].get(method)
    if entry is None:
        return False, f"{method} was not called"
    if not entry["ok"]:
        return False, f"{method}() raised {entry['error']}"
    return True, entry["result"]


def problems_types(probe: dict[str, Any]) -> list[str]:
    """DP-001: documented return types of every abstract method."""
    problems: list[str] = []
    expect = {
        "get_resource_name": ({"str"}, "str"),
        "get_visible_accelerator_ids_env_var": ({"str", "NoneType"}, "str or None"),
        "get_current_node_num_accelerators": ({"int"}, "int"),
        "get_current_node_accelerator_type": ({"str", "NoneType"}, "str or None"),
        "get_current_node_additional_resources": ({"dict", "NoneType"}, "dict or None"),
    }
    for method, (types, text) in expect.items():
        ok, res = _ret(probe, method)
        if not ok:
            problems.append(str(res))
            continue
        assert isinstance(res, dict)
        if res["type"] not in types:
            problems.append(f"{method}() returned {res['repr']} ({res['type']}); expected {text}")
        elif method == "get_current_node_num_accelerators" and res["value"] < 0:
            problems.append(f"{method}() returned {res['value']}; expected >= 0")
        elif method == "get_resource_name" and not res["value"]:
            problems.append(f"{method}() returned an empty string")
        elif method == "get_current_node_additional_resources" and res["type"] == "dict":
            for k, item in res["items"].items():
                if item["key_type"] != "str" or item["type"] not in {"int", "float"}:
                    problems.append(f"{method}() entry {k!r}: {item['repr']} ({item['type']}); "
                                    "expected str -> int/float")
    for q, entry in probe.get("validate", {}).items():
        if not entry["ok"]:
            problems.append(f"validate_resource_request_quantity({q}) raised {entry['error']}")
            continue
        res = entry["result"]
        items = res.get("items") or []
        if res["type"] not in {"tuple", "list"} or len(items) != 2:
            problems.append(f"validate_resource_request_quantity({q}) returned {res['repr']}; "
                            "expected a (bool, str or None) pair")
        elif items[0]["type"] != "bool" or items[1]["type"] not in {"str", "NoneType"}:
            problems.append(f"validate_resource_request_quantity({q}) returned {res['repr']}; "
                            "expected (bool, str or None)")
    return problems


def problems_resource_name(probe: dict[str, Any], expected: str | None) -> list[str]:
    """DP-002: a valid, non-reserved resource name equal to the manifest's."""
    ok, res = _ret(probe, "get_resource_name")
    if not ok:
        return [str(res)]
    assert isinstance(res, dict)
    name = res.get("value")
    if not isinstance(name, str):
        return [f"get_resource_name() returned {res['repr']}; expected str"]
    problems = []
    if not RESOURCE_NAME_RE.match(name):
        problems.append(f"resource name {name!r} is not a valid Ray resource name "
                        "(letter first; letters, digits, _ - . / only)")
    if name in RESERVED_RESOURCE_NAMES or name.startswith("accelerator_type:") or "_group_" in name:
        problems.append(f"resource name {name!r} collides with a Ray-reserved resource")
    if expected is not None and name != expected:
        problems.append(f"resource name {name!r} differs from the manifest's {expected!r}")
    return problems


def _zero_devices(probe: dict[str, Any]) -> bool:
    entry = probe["methods"].get("get_current_node_num_accelerators") or {}
    return bool(entry.get("ok")) and entry["result"].get("value") == 0


def _trips(probe: dict[str, Any]) -> list[dict[str, Any]]:
    """The round trips to judge. On a host with no devices, set([]) means "every device" to
    some plugins (TPU unsets its variable when the ids equal the node's count), so it is skipped."""
    trips: list[dict[str, Any]] = probe.get("round_trips", [])
    if _zero_devices(probe):
        trips = [t for t in trips if t["ids"]]
    return trips


def problems_round_trip(probe: dict[str, Any]) -> list[str]:
    """DP-003: set then get returns exactly the ids, as strings."""
    problems = []
    for trip in _trips(probe):
        ids = trip["ids"]
        if not trip["set"]["ok"]:
            problems.append(f"set_current_process_visible_accelerator_ids({ids}) raised {trip['set']['error']}")
            continue
        if not trip["get"]["ok"]:
            problems.append(f"get after set({ids}) raised {trip['get']['error']}")
            continue
        got = trip["get"]["result"]
        if got["type"] != "list":
            problems.append(f"get after set({ids}) returned {got['repr']} ({got['type']}); expected list[str]")
            continue
        values = [i.get("value") for i in got["items"]]
        types = {i["type"] for i in got["items"]}
        if types - {"str"}:
            problems.append(f"get after set({ids}) returned {got['repr']}; ids must be str")
        elif values != ids:
            problems.append(f"get after set({ids}) returned {values}")
    return problems


def problems_unset_is_none(probe: dict[str, Any]) -> list[str]:
    """DP-004: the variable unset reads as None."""
    entry = probe.get("unset_get")
    if entry is None:
        return ["the probe did not read the visible ids"]
    if not entry["ok"]:
        return [f"get_current_process_visible_accelerator_ids() with the variable unset raised {entry['error']}"]
    if entry["result"]["type"] != "NoneType":
        return [f"with {probe['env_var']} unset, get_current_process_visible_accelerator_ids() returned "
                f"{entry['result']['repr']}; expected None"]
    return []


def problems_env_var_written(probe: dict[str, Any]) -> list[str]:
    """DP-005: set writes the variable the manager names (its value format is the vendor's;
    DP-003 checks that it reads back)."""
    env_var = probe["env_var"]
    problems = []
    for trip in probe.get("round_trips", []):
        if not trip["set"]["ok"]:
            problems.append(f"set({trip['ids']}) raised {trip['set']['error']}")
            continue
        if trip["ids"] and trip["env_value"] is None:
            others = ", ".join(trip["changed_vars"]) or "nothing"
            problems.append(f"set({trip['ids']}) did not write {env_var} (it changed {others})")
    return problems


def problems_no_stray_vars(probe: dict[str, Any]) -> list[str]:
    """DP-016: set changes no variable but the named one (Ray restores only that one between tasks)."""
    env_var = probe["env_var"]
    problems = []
    for trip in _trips(probe):
        others = [v for v in trip["changed_vars"] if v != env_var]
        if others:
            problems.append(f"set({trip['ids']}) also changed {', '.join(others)}")
    return problems


def env_var_applicable(probe: dict[str, Any]) -> tuple[bool, str]:
    if probe.get("env_var") is None:
        return False, ("the manager names no visible-devices variable (get_visible_accelerator_ids_env_var() "
                       "is None), so Ray never sets per-task visibility")
    return True, ""


def validation_result(probe: dict[str, Any], quantity: float) -> tuple[bool | None, str | None, str | None]:
    """(accepted, message, problem) for a quantity the probe validated."""
    entry = probe.get("validate", {}).get(repr(float(quantity)))
    if entry is None:
        return None, None, f"quantity {quantity} was not probed"
    if not entry["ok"]:
        return None, None, f"validate_resource_request_quantity({quantity}) raised {entry['error']}"
    items = entry["result"].get("items") or []
    if len(items) != 2:
        return None, None, f"validate_resource_request_quantity({quantity}) returned {entry['result']['repr']}"
    return bool(items[0].get("value")), items[1].get("value"), None


__all__ = ["run_contract_probe", "ProbeFailed", "ROUND_TRIPS"]
