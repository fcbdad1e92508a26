"""The report's Workload section (markdown, pure) and its report.html block (charts drawn from
the WL checks' metrics in report.json, so the page shows the evidence a reviewer recomputes).

WL-001's metrics hold, per device type, the per-round seconds through the transport and through
the object store and each actor's memory per round; report.html draws per-round time over the
rounds and memory over the rounds. WL-002's hold, per device type, the seconds of every
data-parallel step; report.html draws them over the steps.
"""
from __future__ import annotations

from typing import TYPE_CHECKING, Any

from conformance.sanitize import markdown_cell as clean_text

if TYPE_CHECKING:
    from conformance.run.check_context import RunView

SECTION = "Workload"
COLOURS = ("#1565c0", "#2e7d32", "#6a1b9a", "#ef6c00", "#00838f", "#ad1457")
MIB = 1 << 20


def publish(run: RunView, data: dict[str, Any]) -> None:
    """Store the section (markdown + data) on the run; the report writer takes it from there.
    Each check publishes its own keys of `data`; what the others published stays."""
    merged = dict(((run.published(SECTION) or {}).get("data")) or {})
    merged.update(data)
    run.publish(SECTION, {"markdown": render(merged), "data": merged})


def publish_data_parallel(run: RunView, devices: dict[str, Any]) -> None:
    """WL-002's figures per device type, under `data_parallel` in the section's data."""
    publish(run, {"data_parallel": devices})


def _num(v: object, fmt: str = ".3g") -> str:
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
    if data.get("data_parallel"):
        lines += render_data_parallel(data["data_parallel"])
    return "\n".join(lines)


def render_data_parallel(devices: Any) -> list[str]:
    """WL-002's table: per device, the job's shape and its seconds per step."""
    lines = ["", "Data-parallel steps (WL-002): workers all-reducing their gradients through the collective backend "
             "every step; figures recorded for a CI's diff, not judged.", "",
             "| device | workers | nodes | parameters | dtype | steps | median step s | median allreduce s |",
             "|---|---|---|---|---|---|---|---|"]
    for device, fig in sorted((devices if isinstance(devices, dict) else {}).items()):
        fig = fig if isinstance(fig, dict) else {}
        lines.append(f"| {clean_text(str(device))} | {_num(fig.get('workers'), 'd')} | {_num(fig.get('nodes'), 'd')} | "
                     f"{_num(fig.get('features'), 'd')} | {clean_text(str(fig.get('dtype')))} | {_num(fig.get('steps'), 'd')} | "
                     f"{_num(fig.get('median_step_s'))} | {_num(fig.get('median_allreduce_s'))} |")
    return lines


def _series(v: object) -> list[float | None]:
    if not isinstance(v, list):
        return []
    return [float(x) if isinstance(x, (int, float)) and not isinstance(x, bool) else None for x in v]


def html_block(report: dict[str, Any]) -> dict[str, Any]:
    """report.html's Workload block: per-round time and memory over rounds, per device type, from
    WL-001's metrics; seconds per data-parallel step from WL-002's. Empty when neither recorded any."""
    out: dict[str, Any] = {"charts": [], "tables": [], "notes": []}
    _weight_sync_block(report, out)
    _data_parallel_block(report, out)
    return out if out["notes"] else {}


def memory_lines(fig: dict[str, Any]) -> list[Any]:
    """The memory chart's lines of one device type's figures (`memory`: actor label -> one snapshot
    per round or wave, WL-001 and WL-003 alike): each actor's held host memory (solid) and device
    memory in use (dotted), in MiB; none for a probe the actor never read."""
    from conformance.report.html import charts

    memory: dict[str, Any] = fig["memory"] if isinstance(fig.get("memory"), dict) else {}
    lines = []
    for i, (label, snaps) in enumerate(sorted(memory.items())):
        snaps = snaps if isinstance(snaps, list) else []
        for probe, style in (("held_bytes", "-"), ("device_used_bytes", ":")):
            ys = [s[probe] / MIB if isinstance(s, dict) and isinstance(s.get(probe), (int, float)) else None
                  for s in snaps]
            if any(y is not None for y in ys):
                lines.append(charts.Line(f"{label} {probe.removesuffix('_bytes')}", ys, COLOURS[i % len(COLOURS)], style))
    return lines


def check_devices(report: dict[str, Any], cid: str) -> tuple[dict[str, Any] | None, dict[str, Any]]:
    """The check's entry in report.json and its per-device metrics ({} when it recorded none)."""
    check = next((c for c in report.get("checks") or [] if isinstance(c, dict) and c.get("id") == cid), None)
    devices = ((check or {}).get("metrics") or {}).get("devices")
    return check, devices if isinstance(devices, dict) else {}


def _data_parallel_block(report: dict[str, Any], out: dict[str, Any]) -> None:
    """WL-002: seconds per step (the driver's, and inside the allreduce) per device type."""
    from conformance.report.html import charts

    check, devices = check_devices(report, "WL-002")
    if check is None or not devices:
        return
    out["notes"].append(f"WL-002: {check.get('outcome')}")
    for device, fig in sorted(devices.items()):
        if not isinstance(fig, dict):
            continue
        lines = [charts.Line("step (dispatch to the last worker's answer)", _series(fig.get("step_seconds")), COLOURS[0]),
                 charts.Line("inside the allreduce (slowest rank)", _series(fig.get("allreduce_seconds")), COLOURS[1], "--")]
        out["charts"].append({"svg": charts.rounds_svg(f"{device}: seconds per data-parallel step", "seconds", lines),
                              "caption": f"WL-002 on {device}: {fig.get('workers')} workers on {fig.get('nodes')} nodes, "
                                         f"{fig.get('features')} {fig.get('dtype')} parameters"})
        out["tables"].append({"caption": f"{device}: data-parallel figures a CI's diff gates",
                              "columns": ["median step s", "median allreduce s"],
                              "rows": [[_num(fig.get("median_step_s")), _num(fig.get("median_allreduce_s"))]]})


def _weight_sync_block(report: dict[str, Any], out: dict[str, Any]) -> None:
    """WL-001: per-round time and memory over rounds, per device type."""
    from conformance.report.html import charts

    check, devices = check_devices(report, "WL-001")
    if check is None or not devices:
        return
    out["notes"].append(f"WL-001: {check.get('outcome')}")
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
        mem_lines = memory_lines(fig)
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
