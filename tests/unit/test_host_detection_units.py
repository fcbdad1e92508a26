"""conformance.areas.device.host_detection without Ray: what `observe` records, and the DP-017..DP-020 judges."""
from __future__ import annotations

import logging
import warnings

from conformance.areas.device import host_detection as h


def entry(value: object, *, ok: bool = True, records: list[dict[str, str]] | None = None,
          seconds: float = 0.0) -> dict[str, object]:
    e: dict[str, object] = {"ok": ok, "seconds": seconds, "records": records or []}
    if ok:
        e.update(value=value, type=type(value).__name__)
    else:
        e["error"] = str(value)
    return e


def probe(count: object = 0, typ: object = None, extra: object = None, **over: dict[str, object]) -> dict[str, object]:
    p = {"get_current_node_num_accelerators": entry(count), "get_current_node_accelerator_type": entry(typ),
         "get_current_node_additional_resources": entry(extra)}
    p.update(over)
    return p


def test_observe_records_logs_warnings_and_errors() -> None:
    def noisy() -> int:
        logging.getLogger("vendor.sdk").error("driver missing")
        warnings.warn("old firmware", stacklevel=2)
        return 0

    seen = h.observe(noisy)
    assert seen["ok"] and seen["value"] == 0
    levels = {(r["level"], r["message"]) for r in seen["records"]}
    assert ("ERROR", "driver missing") in levels and ("WARNING", "old firmware") in levels
    boom = h.observe(lambda: 1 / 0)
    assert not boom["ok"] and boom["error"].startswith("ZeroDivisionError")


def test_a_quiet_host_without_devices_passes() -> None:
    assert h.problems_detection(probe(), "without the device", 5.0) == []


def test_raise_error_log_slowness_count_and_type_are_each_named() -> None:
    bad = probe(count=2, typ="X1", extra={"X": 1})
    got = " ".join(h.problems_detection(bad, "without the device", 5.0))
    assert "returned 2; expected 0" in got
    raised = probe(get_current_node_num_accelerators=entry("ImportError: sdk", ok=False))
    assert "raised ImportError" in " ".join(h.problems_detection(raised, "x", 5.0))
    loud = probe(get_current_node_num_accelerators=entry(0, records=[{"level": "ERROR", "logger": "v", "message": "m"}]))
    assert "logged ERROR" in " ".join(h.problems_detection(loud, "x", 5.0))
    slow = probe(get_current_node_num_accelerators=entry(0, seconds=9.0))
    assert "took 9.0s" in " ".join(h.problems_detection(slow, "x", 5.0))
    typed = probe(typ="X1")
    assert "expected None" in " ".join(h.problems_detection(typed, "x", 5.0))


def test_unknown_device_needs_no_type_and_a_warning() -> None:
    assert "expected None" in " ".join(h.problems_unknown_device(probe(count=4, typ="MADE-UP"), 5.0))
    assert h.problems_unknown_device(probe(count=4), 5.0) == []
    assert h.problems_warned(probe(), "x")
    warned = probe(get_current_node_accelerator_type=entry(None, records=[{"level": "WARNING", "logger": "v",
                                                                            "message": "unknown id"}]))
    assert h.problems_warned(warned, "x") == []


def test_overcommit_must_be_refused_with_rays_value_error() -> None:
    refused = {"ok": False, "error": "ValueError: Attempting to start raylet with 2.0 SIMACC, but ..."}
    assert h.problems_overcommit(refused, "SIMACC", "V", ["0"], 2.0) == []
    assert "was accepted" in h.problems_overcommit({"ok": True, "value": {"SIMACC": 2.0}}, "SIMACC", "V", ["0"], 2.0)[0]
    assert "not with Ray's clear ValueError" in h.problems_overcommit({"ok": False, "error": "KeyError: x"},
                                                                       "SIMACC", "V", ["0"], 2.0)[0]


def test_noset_must_leave_the_variable_and_unset_must_write_it() -> None:
    good = {"with_noset": {"ok": True, "after": "0"}, "without_noset": {"ok": True, "after": "1"}}
    assert h.problems_noset(good, "V", "N", "0") == []
    ignored = {"with_noset": {"ok": True, "after": "1"}, "without_noset": {"ok": True, "after": "1"}}
    assert "must leave it alone" in h.problems_noset(ignored, "V", "N", "0")[0]
    never = {"with_noset": {"ok": True, "after": "0"}, "without_noset": {"ok": True, "after": "0"}}
    assert "cannot be told apart" in h.problems_noset(never, "V", "N", "0")[0]
