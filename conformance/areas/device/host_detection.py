"""Detection on hosts that are not working device hosts, and the node-start rules around it.

Ray calls every registered manager on every node, so a vendor's detection also runs on hosts
without the device or its driver (every real cluster's CPU-only nodes), on hosts whose library
fails, and on devices it does not know. The manifest says how such hosts look (environment
overlays, `accelerator.hosts`); these probes run the manager under them in a fresh process
(conformance.areas.device.contract_probe) or in a worker on such a node, and the pure `problems_*` functions
judge what they saw (DP-017 .. DP-020).
"""
from __future__ import annotations

import logging
import os
import time
import warnings
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any, Callable, Iterator

if TYPE_CHECKING:
    from ray._private.accelerators.accelerator import AcceleratorManager

DETECTION_METHODS = ("get_current_node_num_accelerators", "get_current_node_accelerator_type",
                     "get_current_node_additional_resources")


class _Records(logging.Handler):
    """Collects every log record at WARNING and above, from any logger."""

    def __init__(self) -> None:
        super().__init__(logging.WARNING)
        self.records: list[dict[str, str]] = []

    def emit(self, record: logging.LogRecord) -> None:
        try:
            msg = record.getMessage()
        except Exception:  # noqa: BLE001 - a broken format string is still a record
            msg = str(record.msg)
        self.records.append({"level": record.levelname, "logger": record.name, "message": msg[:300]})


def _loggers() -> list[logging.Logger]:
    """The root logger and every logger that does not propagate to it (Ray's do not)."""
    out = [logging.getLogger()]
    for name in list(logging.root.manager.loggerDict):
        lg = logging.getLogger(name)
        if not lg.propagate:
            out.append(lg)
    return out


@contextmanager
def capture_records() -> Iterator[list[dict[str, str]]]:
    """Collect what is logged (WARNING and above, any logger) or warned inside the block."""
    handler = _Records()
    attached = _loggers()
    for lg in attached:
        lg.addHandler(handler)
    records: list[dict[str, str]] = []
    try:
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            yield records
    finally:
        for lg in attached:
            lg.removeHandler(handler)
        records[:] = handler.records + [{"level": "WARNING", "logger": "warnings", "message": str(w.message)[:300]}
                                        for w in caught]


def observe(fn: Callable[[], Any]) -> dict[str, Any]:
    """Call `fn` and return what it returned or raised, how long it took, and what it logged or warned.
    Runs in a probe process or a worker, where nothing else needs the exception."""
    t0 = time.monotonic()
    out: dict[str, Any] = {}
    with capture_records() as records:
        try:
            value = fn()
            out.update(ok=True, value=value if isinstance(value, (str, int, float, bool, dict)) or value is None
                       else repr(value), type=type(value).__name__)
        except BaseException as exc:  # noqa: BLE001 - report everything, including SystemExit
            out.update(ok=False, error=f"{exc.__class__.__name__}: {exc}".splitlines()[0][:300])
    out["seconds"] = round(time.monotonic() - t0, 3)
    out["records"] = records
    return out


def detect(manager: type[AcceleratorManager]) -> dict[str, Any]:
    """Every node-detection method of `manager`, observed (runs in the host's environment)."""
    return {m: observe(getattr(manager, m)) for m in DETECTION_METHODS}


def overcommit(manager: type[AcceleratorManager], env_var: str, visible: list[str], request: float) -> dict[str, Any]:
    """Resolve a node's resources the way Ray does at node start, asking for `request` units while
    `env_var` makes only `visible` ids visible (Ray: test_user_configured_more_than_visible)."""
    from ray._private.resource_and_label_spec import ResourceAndLabelSpec

    from conformance.cluster.injection import install_managers

    install_managers([manager])
    os.environ[env_var] = ",".join(visible)
    spec = ResourceAndLabelSpec(num_cpus=1, resources={manager.get_resource_name(): request})
    return observe(lambda: dict(spec.resolve(is_head=True, node_ip_address="127.0.0.1").resources or {}))


def noset(manager: type[AcceleratorManager], env_var: str, noset_var: str, preset: str, ids: list[str]) -> dict[str, Any]:
    """With the opt-out variable set, set_current_process_visible_accelerator_ids must leave the
    visible-devices variable as the operator set it."""
    os.environ[env_var] = preset
    os.environ[noset_var] = "1"
    result = observe(lambda: manager.set_current_process_visible_accelerator_ids(list(ids)))
    result["after"] = os.environ.get(env_var)
    os.environ.pop(noset_var, None)
    control = observe(lambda: manager.set_current_process_visible_accelerator_ids(list(ids)))
    control["after"] = os.environ.get(env_var)
    return {"with_noset": result, "without_noset": control}


# ------------------------------------------------------------------------------ judging (pure)
def _errors(entry: dict[str, Any]) -> list[dict[str, str]]:
    return [r for r in entry.get("records", []) if r["level"] in ("ERROR", "CRITICAL")]


def _warned(probe: dict[str, Any]) -> bool:
    return any(r["level"] == "WARNING" for e in probe.values() for r in e.get("records", []))


def problems_detection(probe: dict[str, Any], host: str, max_s: float, *, count_zero: bool = True) -> list[str]:
    """Detection on a host of kind `host`: nothing raises, nothing logs at ERROR, each call is quick,
    the count is 0 (when `count_zero`) and the type None whenever the count is 0."""
    problems = []
    for method, e in probe.items():
        if not e["ok"]:
            problems.append(f"on a host {host}, {method}() raised {e['error']}")
            continue
        if e["seconds"] > max_s:
            problems.append(f"on a host {host}, {method}() took {e['seconds']:.1f}s (bound {max_s}s)")
        for r in _errors(e)[:2]:
            problems.append(f"on a host {host}, {method}() logged {r['level']} ({r['logger']}): {r['message']}")
    count = probe.get("get_current_node_num_accelerators", {})
    typ = probe.get("get_current_node_accelerator_type", {})
    extra = probe.get("get_current_node_additional_resources", {})
    if count.get("ok"):
        if count["type"] != "int":
            problems.append(f"on a host {host}, get_current_node_num_accelerators() returned "
                            f"{count['value']!r} ({count['type']}); expected an int")
        elif count_zero and count["value"] != 0:
            problems.append(f"on a host {host}, get_current_node_num_accelerators() returned {count['value']}; "
                            "expected 0")
    if typ.get("ok") and count.get("ok") and count.get("value") == 0 and typ["value"] is not None:
        problems.append(f"on a host {host}, get_current_node_accelerator_type() returned {typ['value']!r} "
                        "with 0 devices; expected None")
    if extra.get("ok") and count.get("ok") and count.get("value") == 0 and extra["value"]:
        problems.append(f"on a host {host}, get_current_node_additional_resources() returned {extra['value']!r} "
                        "with 0 devices; expected None or {}")
    return problems


def problems_unknown_device(probe: dict[str, Any], max_s: float) -> list[str]:
    """An unknown device id: detection does not raise and the type degrades to None."""
    problems = problems_detection(probe, "whose device id is unknown", max_s, count_zero=False)
    typ = probe.get("get_current_node_accelerator_type", {})
    if typ.get("ok") and typ["value"] is not None:
        problems.append(f"on a host whose device id is unknown, get_current_node_accelerator_type() returned "
                        f"{typ['value']!r}; expected None (an unknown product has no type)")
    return problems


def problems_warned(probe: dict[str, Any], host: str) -> list[str]:
    return [] if _warned(probe) else [f"on a host {host}, detection degraded without logging a warning, "
                                      "so an operator cannot tell a failed detection from a host without devices"]


def problems_overcommit(result: dict[str, Any], resource: str, env_var: str, visible: list[str],
                        request: float) -> list[str]:
    """Ray refuses a node asked for more units than the visible-devices variable makes visible."""
    if result["ok"]:
        got = result["value"].get(resource) if isinstance(result["value"], dict) else result["value"]
        return [f"a node started with {resource}={request:g} while {env_var}={','.join(visible)} was accepted "
                f"(it advertises {got}); Ray refuses it only if the manager reports the visible ids at node start"]
    if not result["error"].startswith("ValueError") or resource not in result["error"]:
        return [f"the over-asked node start failed, but not with Ray's clear ValueError naming {resource}: "
                f"{result['error']}"]
    return []


def problems_noset(result: dict[str, Any], env_var: str, noset_var: str, preset: str) -> list[str]:
    problems = []
    w, wo = result["with_noset"], result["without_noset"]
    if not w["ok"]:
        problems.append(f"with {noset_var}=1, set_current_process_visible_accelerator_ids raised {w['error']}")
    elif w["after"] != preset:
        problems.append(f"with {noset_var}=1, set_current_process_visible_accelerator_ids changed {env_var} "
                        f"from {preset!r} to {w['after']!r}; the opt-out must leave it alone")
    if wo["ok"] and wo["after"] == preset:
        problems.append(f"without {noset_var}, set_current_process_visible_accelerator_ids did not write {env_var} "
                        "either; the opt-out cannot be told apart from a manager that never sets it")
    return problems
