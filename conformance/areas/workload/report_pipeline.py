"""report.html's Workload block, extended with the pipeline (WL-003) and the lost worker (WL-004).

The weight sync's charts come from conformance.areas.workload.report; this adds, per device type,
the seconds per wave and each stage's memory over the waves (WL-003), and the lost worker's
rounds, kill round and restart (WL-004), all from the checks' metrics in report.json.
"""
from __future__ import annotations

from typing import Any

from conformance.areas.workload import report as sync_report
from conformance.areas.workload.report import COLOURS, MIB, _num, _series


def _devices(report: dict[str, Any], check_id: str) -> tuple[dict[str, Any] | None, dict[str, Any]]:
    check = next((c for c in report.get("checks") or [] if isinstance(c, dict) and c.get("id") == check_id), None)
    devices = ((check or {}).get("metrics") or {}).get("devices")
    return check, devices if isinstance(devices, dict) else {}


def html_block(report: dict[str, Any]) -> dict[str, Any]:
    """The Workload block: WL-001's, then WL-003's and WL-004's. Empty when none recorded figures."""
    from conformance.report.html import charts

    out = sync_report.html_block(report) or {"charts": [], "tables": [], "notes": []}
    added = False
    check, devices = _devices(report, "WL-003")
    if check is not None and devices:
        added = True
        out["notes"].append(f"WL-003: {check.get('outcome')}")
    for device, fig in sorted(devices.items()):
        if not isinstance(fig, dict):
            continue
        waves = _series(fig.get("wave_seconds"))
        out["charts"].append({"svg": charts.rounds_svg(f"{device}: seconds per pipeline wave", "seconds (a wave)",
                                                       [charts.Line("through the transport", waves, COLOURS[0])]),
                              "caption": f"WL-003 on {device}: {fig.get('in_flight')} microbatches in flight through "
                                         f"{fig.get('stages')} stages, {fig.get('size')} per activation (x: wave)"})
        memory: dict[str, Any] = fig["memory"] if isinstance(fig.get("memory"), dict) else {}
        lines = []
        for i, (label, snaps) in enumerate(sorted(memory.items())):
            snaps = snaps if isinstance(snaps, list) else []
            for probe, style in (("held_bytes", "-"), ("device_used_bytes", ":")):
                ys = [s[probe] / MIB if isinstance(s, dict) and isinstance(s.get(probe), (int, float)) else None
                      for s in snaps]
                if any(y is not None for y in ys):
                    lines.append(charts.Line(f"{label} {probe.removesuffix('_bytes')}", ys, COLOURS[i % len(COLOURS)], style))
        if lines:
            out["charts"].append({"svg": charts.rounds_svg(f"{device}: stages' memory over waves", "MiB", lines, first_round=0),
                                  "caption": "held host memory (solid) and device memory in use (dotted) of each stage "
                                             "after every wave (0: before the first)"})
        out["tables"].append({"caption": f"{device}: pipeline figures a CI's diff gates (WL-003)",
                              "columns": ["median wave s", "bytes/s"],
                              "rows": [[_num(fig.get("median_wave_s")), _num(fig.get("pipeline_bytes_per_s"), ".4g")]]})
    check, devices = _devices(report, "WL-004")
    if check is not None and devices:
        added = True
        out["notes"].append(f"WL-004: {check.get('outcome')}")
    for device, fig in sorted(devices.items()):
        if not isinstance(fig, dict):
            continue
        out["tables"].append({"caption": f"{device}: the weight sync with a receiver killed in round "
                                         f"{_num(fig.get('kill_round'), 'd')} (WL-004)",
                              "columns": ["median round s (other rounds)", "kill round s", "restart s", "killed take"],
                              "rows": [[_num(fig.get("median_round_s")), _num(fig.get("kill_round_seconds")),
                                        _num(fig.get("restart_seconds")), str(fig.get("killed_take") or "-")[:120]]]})
    if not added and not out["charts"] and not out["tables"]:
        return {}
    return out
