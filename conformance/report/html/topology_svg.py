"""The report page's topology picture, written as SVG directly (no matplotlib).

Every report of a run with a cluster has this picture, and drawing it with matplotlib cost each
suite process about 0.8 s of CPU (0.7 s of it importing matplotlib), a certification's largest
fixed cost after Ray itself. The picture is circles, lines, polygons and labels: plain SVG
elements. The other three charts (bandwidth, pairwise, recovery) have axes and scales and stay
with matplotlib (conformance.report.html.charts), imported only by a report that has them.

The output is a pure function of its input (same nodes, same bytes). Every string from the
report (node, device, link kind and domain names) is XML-escaped here, on top of the model's
sanitising, because it lands in element text.
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Callable, Sequence

from conformance.report.html.charts import capped

TITLE = "topology: nodes, devices, links and domains"
KIND_PALETTE = ("#1565c0", "#6a1b9a", "#00838f", "#ef6c00", "#558b2f", "#ad1457", "#4e342e", "#37474f")
DOMAIN_FILLS = ("#bbdefb", "#ffe0b2", "#c8e6c9", "#f8bbd0", "#d1c4e9", "#fff9c4", "#b2dfdb", "#ffccbc")
FONT = "DejaVu Sans, Liberation Sans, Arial, Helvetica, sans-serif"
PANEL_W, PANEL_H = 374.0, 360.0   # one node: the circle of devices, its title and domains above
LEGEND_PER_ROW = 6
SCALE = 118.0                     # pixels per unit of the layout circle (devices sit on radius 1)
DEVICE_R = 13.0


@dataclass(frozen=True)
class NodeTopology:
    """One node as the picture needs it: devices, links (a, b, kind, GB/s), domains, and the
    node's device domains (islands: name, member devices), drawn as shaded groups."""

    name: str
    devices: list[str]
    links: list[tuple[str, str, str, float | None]]
    domains: list[tuple[str, str]]
    device_domains: tuple[tuple[str, tuple[str, ...]], ...] = ()


def kind_colours(kinds: Sequence[str]) -> dict[str, str]:
    """One colour per link kind, stable for a given sorted list of kinds."""
    return {k: KIND_PALETTE[i % len(KIND_PALETTE)] for i, k in enumerate(sorted(set(kinds)))}


def escape(text: str) -> str:
    """Text for an SVG element or attribute."""
    return (str(text).replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")
            .replace('"', "&quot;").replace("'", "&#39;"))


@capped("topology", lambda *args, **kwargs: TITLE)
def topology_svg(nodes: Sequence[NodeTopology], max_nodes: int = 4) -> str:
    """One panel per node: devices on a circle, links coloured by kind, width by bandwidth."""
    shown = list(nodes)[:max_nodes]
    kinds = sorted({k for n in shown for _, _, k, _ in n.links})
    colours = kind_colours(kinds)
    bws = [bw for n in shown for *_, bw in n.links if bw]
    top = max(bws) if bws else 1.0
    width = PANEL_W * max(1, len(shown))
    height = PANEL_H + (legend_height(len(kinds)) if kinds else 0.0)
    parts = [f'<svg role="img" aria-label="{escape(TITLE)}" class="chart" xmlns="http://www.w3.org/2000/svg" '
             f'width="{width:.0f}pt" height="{height:.0f}pt" viewBox="0 0 {width:.0f} {height:.0f}" '
             f'font-family="{FONT}" font-size="9">', f"<title>{escape(TITLE)}</title>"]
    for i, node in enumerate(shown):
        parts.append(_panel(node, i * PANEL_W, colours, top))
    if kinds:
        parts.append(_legend(kinds, colours, width, PANEL_H))
    parts.append("</svg>")
    return "".join(parts)


def _positions(devices: Sequence[str]) -> dict[str, tuple[float, float]]:
    n = len(devices)
    if n == 1:
        return {devices[0]: (0.0, 0.0)}
    return {d: (math.cos(math.pi / 2 - 2 * math.pi * i / n), math.sin(math.pi / 2 - 2 * math.pi * i / n))
            for i, d in enumerate(devices)}


def _panel(node: NodeTopology, left: float, colours: dict[str, str], top: float) -> str:
    cx, cy = left + PANEL_W / 2, 58.0 + SCALE * 1.3

    def at(x: float, y: float) -> tuple[float, float]:
        return cx + SCALE * x, cy - SCALE * y     # layout y points up, SVG y down

    pos = _positions(node.devices)
    out = [f'<text x="{cx:.1f}" y="22" text-anchor="middle" font-size="10" font-weight="bold">{escape(node.name)}</text>']
    if node.domains:
        text = " · ".join(f"{k}: {v}" for k, v in node.domains[:3])
        out.append(f'<text x="{cx:.1f}" y="38" text-anchor="middle" font-size="7.5" fill="#37474f">{escape(text)}</text>')
    out += _device_domains(node, pos, at)
    order = {d: i for i, d in enumerate(node.devices)}
    label_links = len(node.links) <= 16
    labels = []
    for a, b, kind, bw in node.links:
        if a not in pos or b not in pos:
            continue
        (x1, y1), (x2, y2) = at(*pos[a]), at(*pos[b])
        width = 1.0 + 5.0 * (math.log1p(bw) / math.log1p(top) if bw and top > 0 else 0.0)
        out.append(f'<line x1="{x1:.1f}" y1="{y1:.1f}" x2="{x2:.1f}" y2="{y2:.1f}" stroke="{colours.get(kind, "#555")}" '
                   f'stroke-width="{width * 1.33:.2f}" stroke-opacity="0.8" stroke-linecap="round"/>')
        if label_links and bw:
            # neighbours on the circle are labelled mid-link; chords cross in the middle, so a third of the way
            gap = abs(order[a] - order[b])
            t = 0.5 if gap in (1, len(pos) - 1) else 0.3
            labels.append(_boxed_text(x1 + t * (x2 - x1), y1 + t * (y2 - y1), f"{bw:g}", 7.0, "white", "#000"))
    for dev, (x, y) in pos.items():
        px, py = at(x, y)
        name = dev if len(dev) <= 4 else dev[:3] + "…"
        out.append(f'<circle cx="{px:.1f}" cy="{py:.1f}" r="{DEVICE_R}" fill="#263238" stroke="white" stroke-width="1.5"/>'
                   f'<text x="{px:.1f}" y="{py + 3:.1f}" text-anchor="middle" font-size="8" font-weight="bold" '
                   f'fill="white">{escape(name)}</text>')
    out += labels
    if not node.devices:
        out.append(f'<text x="{cx:.1f}" y="{cy:.1f}" text-anchor="middle" fill="#9e9e9e">no devices reported</text>')
    return f'<g class="node">{"".join(out)}</g>'


Place = Callable[[float, float], tuple[float, float]]   # layout coordinates -> the panel's pixels


def _device_domains(node: NodeTopology, pos: dict[str, tuple[float, float]], place: Place) -> list[str]:
    """Each device domain as a shaded hull around its devices, named beside it (behind the links)."""
    out = []
    for k, (name, members) in enumerate(node.device_domains):
        pts = [pos[d] for d in members if d in pos]
        if not pts:
            continue
        fill = DOMAIN_FILLS[k % len(DOMAIN_FILLS)]
        # a small circle of points around each member: their hull encloses the device markers
        ring = [(x + 0.2 * math.cos(t * math.pi / 4), y + 0.2 * math.sin(t * math.pi / 4)) for x, y in pts
                for t in range(8)]
        corners = " ".join(f"{px:.1f},{py:.1f}" for px, py in (place(x, y) for x, y in hull(ring)))
        out.append(f'<polygon points="{corners}" fill="{fill}" fill-opacity="0.55" stroke="#90a4ae" stroke-width="0.8"/>')
        mx, my = sum(x for x, _ in pts) / len(pts), sum(y for _, y in pts) / len(pts)
        r = math.hypot(mx, my)
        lx, ly = (mx / r * 1.32, my / r * 1.32) if r > 0.05 else (0.0, -1.32)
        out.append(_boxed_text(*place(lx, ly), name, 7.5, fill, "#37474f"))
    return out


def _boxed_text(x: float, y: float, text: str, size: float, box: str, colour: str) -> str:
    """A label centred on (x, y) over a rounded box about as wide as the text."""
    w, h = 0.6 * size * len(text) + 4, size + 4
    return (f'<rect x="{x - w / 2:.1f}" y="{y - h / 2:.1f}" width="{w:.1f}" height="{h:.1f}" rx="2" fill="{box}" '
            f'fill-opacity="0.85"/><text x="{x:.1f}" y="{y + size / 3:.1f}" text-anchor="middle" '
            f'font-size="{size:g}" fill="{colour}">{escape(text)}</text>')


def legend_height(kinds: int) -> float:
    return 24.0 + 16.0 * math.ceil(kinds / LEGEND_PER_ROW)


def _legend(kinds: Sequence[str], colours: dict[str, str], width: float, top: float) -> str:
    """A line swatch and the name of each link kind, up to LEGEND_PER_ROW a row."""
    per_row = min(len(kinds), LEGEND_PER_ROW)
    step = min(140.0, (width - 40) / per_row)
    out = [f'<text x="{width / 2:.1f}" y="{top + 12:.1f}" text-anchor="middle">link kind (line width ∝ bandwidth)</text>']
    for i, kind in enumerate(kinds):
        row, col = divmod(i, LEGEND_PER_ROW)
        in_row = min(per_row, len(kinds) - row * LEGEND_PER_ROW)
        x = (width - step * in_row) / 2 + col * step
        y = top + 30 + 16 * row
        out.append(f'<line x1="{x:.1f}" y1="{y:.1f}" x2="{x + 22:.1f}" y2="{y:.1f}" stroke="{colours[kind]}" '
                   f'stroke-width="3.3"/><text x="{x + 28:.1f}" y="{y + 3:.1f}">{escape(kind)}</text>')
    return f'<g class="legend">{"".join(out)}</g>'


def hull(points: Sequence[tuple[float, float]]) -> list[tuple[float, float]]:
    """Convex hull (Andrew's monotone chain) of a few points."""
    pts = sorted(set(points))
    if len(pts) <= 2:
        return list(pts)

    def cross(o: tuple[float, float], a: tuple[float, float], b: tuple[float, float]) -> float:
        return (a[0] - o[0]) * (b[1] - o[1]) - (a[1] - o[1]) * (b[0] - o[0])

    lower: list[tuple[float, float]] = []
    for p in pts:
        while len(lower) >= 2 and cross(lower[-2], lower[-1], p) <= 0:
            lower.pop()
        lower.append(p)
    upper: list[tuple[float, float]] = []
    for p in reversed(pts):
        while len(upper) >= 2 and cross(upper[-2], upper[-1], p) <= 0:
            upper.pop()
        upper.append(p)
    return lower[:-1] + upper[:-1]
