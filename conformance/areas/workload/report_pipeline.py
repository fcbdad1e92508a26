"""report.html's Workload block, extended with the pipeline (WL-003) and the lost worker (WL-004).

The weight sync's charts come from conformance.areas.workload.report; this adds, per device type,
the seconds per wave and each stage's memory over the waves (WL-003), and the lost worker's
rounds, kill round and restart (WL-004), all from the checks' metrics in report.json.
"""
from __future__ import annotations

from typing import Any

from conformance.areas.workload import report as sync_report
from conformance.areas.workload.report import COLOURS, _num, _series, check_devices


def html_block(report: dict[str, Any]) -> dict[str, Any]:
    """The Workload block: WL-001's, then WL-003's and WL-004's. Empty when none recorded figures."""
    from conformance.report.html import charts

    out = sync_report.html_block(report) or {"charts": [], "tables": [], "notes": []}
    added = False
    check, devices = check_devices(report, "WL-003")
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
        lines = sync_report.memory_lines(fig)
        if lines:
            out["charts"].append({"svg": charts.rounds_svg(f"{device}: stages' memory over waves", "MiB", lines, first_round=0),
                                  "caption": "held host memory (solid) and device memory in use (dotted) of each stage "
                                             "after every wave (0: before the first)"})
        out["tables"].append({"caption": f"{device}: pipeline figures a CI's diff gates (WL-003)",
                              "columns": ["median wave s", "bytes/s"],
                              "rows": [[_num(fig.get("median_wave_s")), _num(fig.get("pipeline_bytes_per_s"), ".4g")]]})
    check, devices = check_devices(report, "WL-004")
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
