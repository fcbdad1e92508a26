"""The report's Workload section (markdown, pure) and its report.html block (charts drawn from
the WL checks' metrics in report.json, so the page shows the evidence a reviewer recomputes).

WL-001's metrics hold, per device type, the per-round seconds through the transport and through
the object store and each actor's memory per round; report.html draws per-round time over the
rounds and memory over the rounds.
"""
from __future__ import annotations

from typing import Any

from conformance.sanitize import markdown_cell as clean_text

SECTION = "Workload"
COLOURS = ("#1565c0", "#2e7d32", "#6a1b9a", "#ef6c00", "#00838f", "#ad1457")
MIB = 1 << 20


def publish(run: Any, data: dict[str, Any]) -> None:
    """Store the section (markdown + data) on the run; the report writer takes it from there."""
    run.publish(SECTION, {"markdown": render(data), "data": data})


def _num(v: Any, fmt: str = ".3g") -> str:
    return format(v, fmt) if isinstance(v, (int, float)) and not isinstance(v, bool) else "-"


def render(data: dict[str, Any]) -> str:
    """Per device: what the weight sync moved and how long a round took beside the object store."""
    lines = ["RL weight sync (WL-001): one trainer publishing a model-shaped state to its inference actors "
             "every round; figures recorded for a CI's diff, not judged.", "",
             "| device | state | tensors | receivers | rounds | median round s | object store s | speedup over store | bytes/s |",
             "|---|---|---|---|---|---|---|---|---|"]
    for device, fig in sorted((data.get("devices") or {}).items()):
        fig = fig if isinstance(fig, dict) else {}
        lines.append(f"| {clean_text(str(device))} | {clean_text(str(fig.get('size')))} | {_num(fig.get('tensors'), 'd')} | "
                     f"{_num(fig.get('receivers'), 'd')} | {_num(fig.get('rounds'), 'd')} | {_num(fig.get('median_round_s'))} | "
                     f"{_num(fig.get('median_store_round_seconds'))} | {_num(fig.get('object_store_speedup'))} | "
                     f"{_num(fig.get('sync_bytes_per_s'), '.4g')} |")
    return "\n".join(lines)


def _series(v: Any) -> list[float | None]:
    if not isinstance(v, list):
        return []
    return [float(x) if isinstance(x, (int, float)) and not isinstance(x, bool) else None for x in v]


def html_block(report: dict[str, Any]) -> dict[str, Any]:
    """report.html's Workload block: per-round time and memory over rounds, per device type, from
    WL-001's metrics. Empty when WL-001 recorded none."""
    from conformance.report.html import charts

    check = next((c for c in report.get("checks") or [] if isinstance(c, dict) and c.get("id") == "WL-001"), None)
    devices = ((check or {}).get("metrics") or {}).get("devices")
    if check is None or not isinstance(devices, dict) or not devices:
        return {}
    out: dict[str, Any] = {"charts": [], "tables": [], "notes": [f"WL-001: {check.get('outcome')}"]}
    for device, fig in sorted(devices.items()):
        if not isinstance(fig, dict):
            continue
        rounds = _series(fig.get("round_seconds"))
        store = _series(fig.get("store_round_seconds"))
        time_lines = [charts.Line("through the transport", rounds + [None] * len(store), COLOURS[0]),
                      charts.Line("through Ray's object store", [None] * len(rounds) + store, COLOURS[3], "--")]
        out["charts"].append({"svg": charts.rounds_svg(f"{device}: seconds per round", "seconds (publish to last receiver)",
                                                       time_lines),
                              "caption": f"WL-001 on {device}: {fig.get('size')} in {fig.get('tensors')} tensors to "
                                         f"{fig.get('receivers')} receivers; the object store's rounds follow"})
        memory: dict[str, Any] = fig["memory"] if isinstance(fig.get("memory"), dict) else {}
        mem_lines = []
        for i, (label, snaps) in enumerate(sorted(memory.items())):
            snaps = snaps if isinstance(snaps, list) else []
            for probe, style in (("held_bytes", "-"), ("device_used_bytes", ":")):
                ys = [s[probe] / MIB if isinstance(s, dict) and isinstance(s.get(probe), (int, float)) else None
                      for s in snaps]
                if any(y is not None for y in ys):
                    mem_lines.append(charts.Line(f"{label} {probe.removesuffix('_bytes')}", ys,
                                                 COLOURS[i % len(COLOURS)], style))
        if mem_lines:
            out["charts"].append({"svg": charts.rounds_svg(f"{device}: memory over rounds", "MiB", mem_lines, first_round=0),
                                  "caption": "host RSS (solid) and device memory in use (dotted) of each actor after "
                                             "every round (round 0: before the first)"})
        out["tables"].append({"caption": f"{device}: figures a CI's diff gates",
                              "columns": ["median round s", "object store s", "speedup over store", "bytes/s"],
                              "rows": [[_num(fig.get("median_round_s")), _num(fig.get("median_store_round_seconds")),
                                        _num(fig.get("object_store_speedup")), _num(fig.get("sync_bytes_per_s"), ".4g")]]})
        for note in fig.get("notes") or []:
            out["notes"].append(f"{device}: {note}")
        if fig.get("dtypes_not_held"):
            out["notes"].append(f"{device}: dtypes the device does not hold, left out: "
                                f"{', '.join(sorted(fig['dtypes_not_held']))}")
    return out
