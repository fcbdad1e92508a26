"""From report.json to what the page shows: pure functions, no HTML and no drawing here.

Every string in the report came from outside (a manifest, a plugin, a check's reason, a log),
so `clean_tree` passes each one through `conformance.sanitize.terminal` (escape sequences
removed, other control and bidi characters shown as `\\xNN`) before anything reads it; the
template's autoescape then makes it inert HTML. Links are only made from values that
`safe_href` accepts. Every section tolerates missing or malformed data and then says what is
missing instead of failing: a page is written for every run, also an interrupted one.
"""
from __future__ import annotations

import re
from collections import Counter, OrderedDict
from typing import Any, Callable, Mapping
from urllib.parse import quote

from conformance.sanitize import terminal

from . import charts
from .limits import page_budget
from .topology_svg import NodeTopology, topology_svg

OUTCOME_ORDER = ("pass", "fail", "error", "waived", "skip", "not_applicable")
OUTCOME_LABEL = {"pass": "pass", "fail": "FAIL", "error": "ERROR", "waived": "waived", "skip": "skip",
                 "not_applicable": "N/A"}
FAILED = ("fail", "error")
TEXT_LIMIT = 20000
_SCHEME = re.compile(r"^[A-Za-z][A-Za-z0-9+.-]*:")


def clean_tree(value: Any) -> Any:
    """The same structure with every string (keys too) made safe to show; multi-line text kept."""
    if isinstance(value, str):
        return terminal(value, limit=TEXT_LIMIT, one_line=False)
    if isinstance(value, Mapping):
        return {clean_tree(str(k)): clean_tree(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [clean_tree(v) for v in value]
    return value


def safe_href(value: Any) -> str | None:
    """A link target only for https/http URLs and relative paths; never javascript:, data: or file:."""
    if not isinstance(value, str) or not value.strip() or any(c.isspace() for c in value.strip()):
        return None
    v = value.strip()
    if _SCHEME.match(v):
        return v if v.lower().startswith(("https://", "http://")) else None
    if v.startswith(("/", "\\")) or ".." in v.split("/"):
        return None
    return v


def url_href(value: Any) -> str | None:
    """A link target only for https/http URLs (a doc reference that is a path stays text: it is
    relative to the project, not to wherever the page is opened)."""
    href = safe_href(value)
    return href if href and href.lower().startswith(("https://", "http://")) else None


def _under(base: str, href: str | None) -> str | None:
    """A relative file link (percent-encoded) below `base`, itself a percent-encoded relative URL."""
    if not href or href.lower().startswith(("https://", "http://")):
        return href
    return (base.rstrip("/") + "/" if base else "") + quote(href, safe="/")


def _dict(value: Any) -> dict[str, Any]:
    return value if isinstance(value, dict) else {}


def _list(value: Any) -> list[Any]:
    return value if isinstance(value, list) else []


def _num(value: Any) -> float | None:
    return float(value) if isinstance(value, (int, float)) and not isinstance(value, bool) else None


def section(draw: Callable[[], dict[str, Any]], missing: str) -> dict[str, Any]:
    """Run one section's builder; a builder returning {} or raising gives a notice, not a failure."""
    try:
        result = draw()
    except Exception as exc:  # noqa: BLE001 - one bad section must not cost the page
        return {"missing": f"this section could not be drawn: {type(exc).__name__}: {terminal(exc, limit=300)}"}
    return result or {"missing": missing}


# ---------------------------------------------------------------------- header and ladder
def checks_by_id(report: Mapping[str, Any]) -> dict[str, dict[str, Any]]:
    return {str(c.get("id")): c for c in _list(report.get("checks")) if isinstance(c, dict)}


def _blocking(entry: Mapping[str, Any], by_id: Mapping[str, dict[str, Any]]) -> list[dict[str, Any]]:
    """A tier's or a capability's blocking checks, each with its outcome label and title."""
    return [{"id": b.get("id"), "outcome": b.get("outcome"),
             "label": OUTCOME_LABEL.get(str(b.get("outcome")), b.get("outcome")),
             "title": _dict(by_id.get(str(b.get("id")))).get("title", "")}
            for b in _list(entry.get("blocking")) if isinstance(b, dict)]


def ladder(report: Mapping[str, Any]) -> list[dict[str, Any]]:
    """One rung per tier, lowest first: achieved, what blocks it, which conditions are unmet."""
    by_id = checks_by_id(report)
    rungs = []
    for t in _list(report.get("tiers")):
        if not isinstance(t, dict):
            continue
        blocking = _blocking(t, by_id)
        conditions = [c for c in _list(t.get("conditions")) if isinstance(c, dict)]
        rungs.append({"name": t.get("name"), "achieved": bool(t.get("achieved")),
                      "current": t.get("name") == report.get("tier"), "below": t.get("below"),
                      "required": len(_list(t.get("required_checks"))), "blocking": blocking,
                      "unmet": [c.get("detail") for c in conditions if not c.get("met")],
                      "met": [c.get("detail") for c in conditions if c.get("met")]})
    return rungs


def capabilities(report: Mapping[str, Any]) -> list[dict[str, Any]]:
    """One entry per capability profile the report records: its state and what blocks it."""
    by_id = checks_by_id(report)
    out = []
    for c in _list(report.get("capabilities")):
        if not isinstance(c, dict):
            continue
        blocking = _blocking(c, by_id)
        out.append({"name": c.get("name"), "state": str(c.get("state") or "?"),
                    "required": len(_list(c.get("required_checks"))), "blocking": blocking})
    return out


def next_steps(report: Mapping[str, Any]) -> dict[str, Any] | None:
    """The run's advice on the next tier, when the report carries it."""
    ns = report.get("next_steps")
    if not isinstance(ns, dict):
        return None
    blocking = []
    for b in _list(ns.get("blocking")):
        if isinstance(b, dict):
            blocking.append({**b, "href": url_href(b.get("doc"))})
    ceiling = _dict(ns.get("shape_ceiling"))
    return {"next_tier": ns.get("next_tier"), "blocking": blocking,
            "ceiling": ceiling if ceiling.get("tier") or ceiling.get("reason") else None}


def summary(report: Mapping[str, Any]) -> list[tuple[str, str, int]]:
    counts = _dict(report.get("summary"))
    return [(o, OUTCOME_LABEL[o], int(counts.get(o) or 0)) for o in OUTCOME_ORDER if counts.get(o)]


# ---------------------------------------------------------------------- checks
def area_grid(report: Mapping[str, Any]) -> list[dict[str, Any]]:
    """Areas in checklist order, each with its checks (one tile each) and outcome counts."""
    areas: OrderedDict[str, list[dict[str, Any]]] = OrderedDict()
    for c in _list(report.get("checks")):
        if isinstance(c, dict):
            areas.setdefault(str(c.get("area") or "other"), []).append(c)
    rows = []
    for name, checks in areas.items():
        counts = Counter(str(c.get("outcome")) for c in checks)
        rows.append({"name": name, "checks": checks,
                     "counts": [(o, OUTCOME_LABEL[o], counts[o]) for o in OUTCOME_ORDER if counts[o]]})
    return rows


def problems(report: Mapping[str, Any], link_base: str = "") -> dict[str, list[dict[str, Any]]]:
    """Failed/errored checks (with reason, log excerpt and log links) and waived ones.

    Log files are relative to the report's folder; `link_base` leads there from the page."""
    failed, waived = [], []
    for c in _list(report.get("checks")):
        if not isinstance(c, dict):
            continue
        entry = {**c, "label": OUTCOME_LABEL.get(str(c.get("outcome")), c.get("outcome")),
                 "logs": [{"name": f, "href": _under(link_base, safe_href(f))}
                          for f in _list(c.get("log_files")) if isinstance(f, str)],
                 "waiver_href": url_href(_dict(c.get("waiver")).get("issue"))}
        if c.get("outcome") in FAILED:
            failed.append(entry)
        elif c.get("outcome") == "waived":
            waived.append(entry)
    return {"failed": failed, "waived": waived}


# ---------------------------------------------------------------------- topology
def _node_name(index: int, node: Mapping[str, Any]) -> str:
    node_id = str(node.get("node_id") or "")
    return f"node {index}" + (f" · {node_id[:8]}" if node_id else "")


def topology(report: Mapping[str, Any]) -> dict[str, Any]:
    """Nodes, devices, links by kind and bandwidth, and domains; from the topology section, else
    from the environment's device census (devices only)."""
    data = _dict(_dict(_dict(report.get("sections")).get("Topology")).get("data"))
    nodes: list[NodeTopology] = []
    link_rows: Counter[tuple[str, str]] = Counter()
    link_pairs: dict[tuple[str, str], list[str]] = {}
    notes = [str(n) for n in _list(data.get("notes"))]
    source = "the plugin's topology provider"
    for i, node in enumerate(n for n in _list(data.get("nodes")) if isinstance(n, dict)):
        plugin = _dict(node.get("plugin"))
        desc = _dict(plugin.get("description"))
        ray_view = _dict(node.get("ray"))
        devices = [str(d.get("id")) for d in _list(desc.get("devices")) if isinstance(d, dict)]
        if not devices:
            devices = [str(d) for d in _list(ray_view.get("device_ids"))]
            source = "Ray's view (no topology description from the plugin)"
        links = []
        for link in page_budget().points(_list(desc.get("links")), f"topology: links of node {i}"):
            if isinstance(link, dict):
                kind = str(link.get("kind") or "?")
                bw = _num(link.get("bandwidth_gbps"))
                links.append((str(link.get("a")), str(link.get("b")), kind, bw))
                key = (kind, f"{bw:g} GB/s" if bw is not None else "bandwidth not stated")
                link_rows[key] += 1
                link_pairs.setdefault(key, []).append(f"n{i}:{link.get('a')}–{link.get('b')}")
        domains = [(str(k), str(v)) for k, v in _dict(desc.get("domains")).items()]
        if not domains:
            domains = [(k.split("/")[-1], str(v)) for k, v in _dict(plugin.get("labels") or ray_view.get("labels")).items()
                       if "domain" in k or "rack" in k]
        islands = tuple((str(d.get("name")), tuple(str(x) for x in _list(d.get("devices"))))
                        for d in _list(desc.get("device_domains")) if isinstance(d, dict))
        nodes.append(NodeTopology(_node_name(i, node), devices, links, domains, islands))
        if node.get("probe_error"):
            notes.append(f"node {i}: probe error: {node.get('probe_error')}")
        for diff in _list(node.get("differences")):
            notes.append(f"node {i}: Ray and the plugin differ: {diff}")
    if not nodes:
        census = _dict(_dict(report.get("environment")).get("devices"))
        for i, node in enumerate(n for n in _list(census.get("nodes")) if isinstance(n, dict)):
            count = int(_num(node.get("count")) or 0)
            domains = [(k.split("/")[-1], str(v)) for k, v in _dict(node.get("labels")).items()
                       if "domain" in k or "rack" in k]
            nodes.append(NodeTopology(_node_name(i, node), [str(d) for d in range(count)], [], domains))
        source = "the run's device census (the topology checks did not run: no links known)"
    if not nodes:
        return {}
    return {"svg": topology_svg(nodes), "source": source, "notes": notes,
            "shown": min(len(nodes), 4), "total": len(nodes),
            "links": [{"kind": k, "bandwidth": b, "count": n, "pairs": ", ".join(link_pairs[(k, b)][:12])
                       + (" …" if len(link_pairs[(k, b)]) > 12 else "")}
                      for (k, b), n in sorted(link_rows.items())]}


# ---------------------------------------------------------------------- transport
def _transport(report: Mapping[str, Any]) -> dict[str, Any]:
    return _dict(_dict(_dict(report.get("sections")).get("Transport")).get("data"))


def _stat(row: Mapping[str, Any], key: str) -> tuple[float | None, float | None, float | None]:
    s = _dict(row.get(key))
    iqr = _list(s.get("iqr_gbps"))
    lo, hi = (_num(iqr[0]), _num(iqr[1])) if len(iqr) == 2 else (None, None)
    return _num(s.get("median_gbps")), lo, hi


def bandwidth(report: Mapping[str, Any]) -> dict[str, Any]:
    """One curve chart per device: RDT, object store and in-process clone by size, host copy line."""
    data = _transport(report)
    name = str(_dict(data.get("transport")).get("name") or "transport")
    charts_out = []
    for device, sweep in _dict(data.get("sweep")).items():
        sweep = _dict(sweep)
        rows = [r for r in _list(sweep.get("rows")) if isinstance(r, dict) and _num(r.get("bytes"))]
        if not rows:
            continue
        series = []
        for key, label, colour, style in (("rdt", f"{name} (RDT)", "#1565c0", "-"),
                                          ("object_store", "Ray object store", "#ef6c00", "-"),
                                          ("clone", "torch clone on the source host", "#757575", "--")):
            stats = [_stat(r, key) for r in rows]
            series.append(charts.Series(label, [float(r["bytes"]) for r in rows], [s[0] or 0.0 for s in stats],
                                        [s[1] or 0.0 for s in stats], [s[2] or 0.0 for s in stats], colour, style))
        if not any(y > 0 for s in series for y in s.gbps):
            continue
        host = _dict(sweep.get("host_copy"))
        ref = None
        if _num(host.get("median_gbps")):
            ref = (f"host copy, {charts.human_bytes(_num(host.get('bytes')) or 0)}: "
                   f"{_num(host.get('median_gbps')):.2f} GB/s", float(host["median_gbps"]))
        title = f"{device}: {sweep.get('pair') or ''}".rstrip(": ")
        unverified = [charts.human_bytes(float(r["bytes"])) for r in rows if r.get("verified") is False]
        charts_out.append({"device": device, "svg": charts.bandwidth_svg(title, series, ref),
                           "trials": sweep.get("trials"), "warmup": sweep.get("warmup"),
                           "unverified": unverified})
    return {"charts": charts_out} if charts_out else {}


def _no_transport(report: Mapping[str, Any]) -> str:
    return ("The manifest declares no transport, so" if not _dict(report.get("manifest")).get("transport")
            else "The transport checks did not run or recorded nothing, so")


def bandwidth_section(report: Mapping[str, Any]) -> dict[str, Any]:
    """The transport's bandwidth charts with its dtype x shape correctness grid (either may be absent)."""
    charts, grid = bandwidth(report), correctness(report)
    if not charts and not grid:
        return {"missing": f"{_no_transport(report)} this report has no bandwidth sweep."}
    return {**(charts or {"missing": f"{_no_transport(report)} this report has no bandwidth sweep."}),
            "correctness": grid}


def pairwise_section(report: Mapping[str, Any]) -> dict[str, Any]:
    return pairwise(report) or {"missing": f"{_no_transport(report)} this report has no pairwise matrix (it "
                                           "also needs at least two devices)."}


def pairwise(report: Mapping[str, Any]) -> dict[str, Any]:
    """One heatmap per device of the all-pairs bandwidth matrix, and any pair that moved wrong data."""
    out = []
    for device, pairs in _dict(_transport(report).get("pairs")).items():
        pairs = _dict(pairs)
        labels = [str(x) for x in _list(pairs.get("labels"))]
        grid = [[_num(v) for v in _list(row)] for row in _list(pairs.get("gbps"))]
        if not labels or len(grid) != len(labels) or any(len(r) != len(labels) for r in grid):
            continue
        order = sorted(range(len(labels)), key=lambda i: _natural(labels[i]))
        labels = [labels[i] for i in order]
        grid = [[grid[i][j] for j in order] for i in order]
        nodes = [label.split(":", 1)[0] for label in labels]
        blocks = [k for k in range(1, len(nodes)) if nodes[k] != nodes[k - 1]] if all(":" in x for x in labels) else []
        size = charts.human_bytes(_num(pairs.get("bytes")) or 0)
        title = f"{device}: GB/s at {size}, median of {pairs.get('trials', '?')} trials"
        out.append({"device": device, "svg": charts.pairwise_svg(title, labels, grid, blocks),
                    "wrong": sorted(_dict(pairs.get("wrong")).items())})
    return {"charts": out} if out else {}


def _natural(text: str) -> list[Any]:
    """Sort key that orders n2 before n10."""
    return [(0, int(part), "") if part.isdigit() else (1, 0, part) for part in re.split(r"(\d+)", text)]


def correctness(report: Mapping[str, Any]) -> list[dict[str, Any]]:
    """Per device, the dtype × shape grid of transfer results ('ok' or what went wrong)."""
    grids = []
    for device, by_dtype in _dict(_transport(report).get("correctness")).items():
        by_dtype = _dict(by_dtype)
        shapes: list[str] = []
        for cells in by_dtype.values():
            shapes += [s for s in _dict(cells) if s not in shapes]
        rows = [(dtype, [str(_dict(cells).get(s, "")) for s in shapes]) for dtype, cells in by_dtype.items()]
        if rows:
            grids.append({"device": device, "shapes": shapes, "rows": rows})
    return grids


# ---------------------------------------------------------------------- recovery
def recovery(report: Mapping[str, Any]) -> dict[str, Any]:
    """Each recovery scenario's elapsed time against its bound, and the details of any that failed."""
    data = _dict(_dict(_dict(report.get("sections")).get("Recovery")).get("data"))
    scenarios = [s for s in _list(data.get("scenarios")) if isinstance(s, dict)]
    if not scenarios:
        return {}
    outcome_of = {cid: str(c.get("outcome")) for cid, c in checks_by_id(report).items()}
    bars = [charts.Scenario(f"{s.get('check', '?')} {s.get('scenario', '')}".strip(), _num(s.get("elapsed_s")),
                            _num(s.get("bound_s")),
                            "waived" if outcome_of.get(str(s.get("check"))) == "waived" else str(s.get("outcome")))
            for s in scenarios]
    failed = [s for s in scenarios if s.get("outcome") != "ok"]
    return {"svg": charts.recovery_svg(bars), "failed": failed, "total_s": _num(data.get("total_elapsed_s")),
            "count": len(scenarios)}


# ---------------------------------------------------------------------- run facts
def facts(report: Mapping[str, Any]) -> list[tuple[str, str]]:
    """Label/value pairs for the run's header: suite, manifest, cluster, environment, times."""
    m, env, suite, cluster = (_dict(report.get(k)) for k in ("manifest", "environment", "suite", "cluster"))
    plugin = _dict(m.get("plugin"))
    rows = [
        ("suite", f"{suite.get('name', '?')} {suite.get('version', '?')}"),
        ("plugin", f"{_dict(m.get('accelerator')).get('resource_name', '?')} · version {plugin.get('version', '?')}"),
        ("manifest", f"{report.get('manifest_path', '?')} (sha256 {str(report.get('manifest_sha256', ''))[:16]}…)"),
        ("cluster", f"{cluster.get('mode', '?')}, {cluster.get('nodes', '?')} node(s)"),
        ("Ray", str(env.get("ray", "?"))),
        ("environment", f"torch {env.get('torch', '?')}, Python {env.get('python', '?')}, {env.get('os', '?')}, "
                        f"{env.get('cpu', '?')} ({env.get('cpu_count', '?')} CPUs)"),
        ("run", f"{report.get('started_at', '?')} → {report.get('finished_at', '?')} ({report.get('duration_s', '?')} s)"),
    ]
    if _dict(report.get("plugin_artifact")):
        art = _dict(report.get("plugin_artifact"))
        rows.insert(2, ("artifact", f"{art.get('name', '?')} (sha256 {str(art.get('sha256', ''))[:16]}…)"))
    return rows
