"""The report page's measured charts (bandwidth, pairwise, recovery), drawn with matplotlib and
returned as inline SVG text; the topology picture is plain SVG (conformance.report.html.topology_svg).
matplotlib is imported by the first chart drawn, so a report without one never pays for it.

Each function takes plain data already taken from report.json (strings already sanitised by
`conformance.report.html.model`) and returns one `<svg>` element. Drawing uses matplotlib's
object API (`Figure`, no pyplot), so no global backend is chosen and nothing is shown on a screen.

Why these settings:
* `svg.fonttype: none` keeps labels as `<text>` (searchable, small) rendered in the page's font;
* `svg.hashsalt` is set per chart so the ids matplotlib gives clip paths and markers are
  deterministic (the page is a pure function of the report) and never collide between two
  charts inlined into one page;
* `text.parse_math: False`, because a `$` in a vendor's label must print as `$`, not start
  mathtext (a stray `$` would otherwise raise and lose the chart);
* no date in the SVG metadata, so the same report gives the same bytes.
"""
from __future__ import annotations

import functools
import io
import logging
import re
from dataclasses import dataclass
from functools import lru_cache
from typing import TYPE_CHECKING, Any, Callable, Sequence, TypeVar

from conformance.report.html.limits import page_budget

if TYPE_CHECKING:  # hints only: matplotlib is imported by the first chart drawn (0.7 s of CPU)
    from matplotlib.axis import Axis
    from matplotlib.figure import Figure
    from matplotlib.typing import RcKeyType

OUTCOME_COLOURS = {"pass": "#2e7d32", "ok": "#2e7d32", "fail": "#c62828", "error": "#ad1457", "flaky": "#d84315",
                   "waived": "#ef6c00", "skip": "#9e9e9e", "not_applicable": "#9e9e9e"}
_SVG_START = re.compile(r"<svg\b")


@lru_cache(maxsize=1)
def _rc() -> dict[RcKeyType, Any]:
    """matplotlib's settings for every chart.

    Labels are laid out with DejaVu Sans (matplotlib ships it, so it exists on every machine) and
    the SVG names the page's font chain (DejaVu Sans, Liberation Sans, then matplotlib's generic
    sans-serif list). The chain goes in the generic family's list, not in `font.family`:
    matplotlib logs "findfont: Font family ... not found" for every text it draws for each *named*
    family that is not installed, thousands of lines on a machine without Liberation Sans, while
    a generic family's list is searched silently."""
    import matplotlib

    sans = ["DejaVu Sans", "Liberation Sans",
            *[f for f in matplotlib.rcParamsDefault["font.sans-serif"] if f not in ("DejaVu Sans", "Liberation Sans")]]
    return {"svg.fonttype": "none", "text.parse_math": False, "font.size": 9,
            "font.family": ["sans-serif"], "font.sans-serif": sans,
            "axes.spines.top": False, "axes.spines.right": False, "axes.titlesize": 10,
            "axes.titleweight": "bold", "axes.titlelocation": "left"}


class _NoFontCacheNotice(logging.Filter):
    """Drops matplotlib's "Matplotlib is building the font cache; this may take a moment."

    matplotlib logs it when building its font list (once per machine and user, on the first chart
    drawn) takes over 5 s, as it can on a loaded machine; on a fresh machine it was the one line on
    stderr that was not the command's own (`review --format html` under make test's load)."""

    def filter(self, record: logging.LogRecord) -> bool:
        return "building the font cache" not in record.getMessage()


def _quiet_font_cache() -> None:
    log = logging.getLogger("matplotlib.font_manager")
    if not any(isinstance(f, _NoFontCacheNotice) for f in log.filters):
        log.addFilter(_NoFontCacheNotice())


def _rc_context(extra: dict[RcKeyType, Any] | None = None) -> Any:
    """Every chart draws inside this: the first one imports matplotlib here."""
    _quiet_font_cache()
    import matplotlib
    return matplotlib.rc_context({**_rc(), **(extra or {})})


def _svg(fig: Figure, salt: str, title: str) -> str:
    """The figure as one `<svg>` element (no XML prolog), with an accessible title."""
    buf = io.StringIO()
    with _rc_context({"svg.hashsalt": salt}):
        fig.savefig(buf, format="svg", bbox_inches="tight", metadata={"Date": None, "Title": title})
    text = buf.getvalue()
    start = _SVG_START.search(text)
    svg = text[start.start():] if start else text
    return svg.replace("<svg ", f'<svg role="img" aria-label="{_attr(title)}" class="chart" ', 1)


RECOVERY_TITLE = "recovery: elapsed time against bound"
_Draw = TypeVar("_Draw", bound=Callable[..., str])


def capped(kind: str, title_of: Callable[..., str]) -> Callable[[_Draw], _Draw]:
    """Every chart function is wrapped in this: the chart counts against the page's chart cap
    (conformance.report.html.limits) before anything is drawn, and one over the cap is named where
    it would stand and counted, by `kind`, in the page's capped notice (and so in the review
    dashboard's row). tests/unit/test_report_html_caps.py holds every chart function to it."""
    def wrap(draw: _Draw) -> _Draw:
        @functools.wraps(draw)
        def chart(*args: Any, **kwargs: Any) -> str:
            title = title_of(*args, **kwargs)
            if not page_budget().take_chart(title, kind):
                return _not_drawn(title)
            return draw(*args, **kwargs)

        chart.chart_kind = kind  # type: ignore[attr-defined]  # a function attribute: the caps test reads it
        return chart  # type: ignore[return-value]  # functools.wraps(draw): the same signature as _Draw
    return wrap


def _not_drawn(title: str) -> str:
    """What stands where a chart over the page's chart cap would be (conformance.report.html.limits)."""
    return f'<p class="missing capped">chart not drawn (the page\'s chart cap): {_attr(title)}</p>'


def _attr(text: str) -> str:
    return text.replace("&", "&amp;").replace('"', "&quot;").replace("<", "&lt;").replace(">", "&gt;")


def _plain_log_ticks(axis: Axis, unit: str = "") -> None:
    """Decade ticks written as plain numbers (mathtext is off, so the default `10^n` labels would
    print their markup)."""
    from matplotlib.ticker import FuncFormatter, LogLocator, NullFormatter

    axis.set_major_locator(LogLocator(base=10))
    axis.set_major_formatter(FuncFormatter(lambda v, _pos: f"{v:g}{unit}"))
    axis.set_minor_formatter(NullFormatter())


def _figure(width: float, height: float) -> Figure:
    from matplotlib.figure import Figure

    with _rc_context():
        return Figure(figsize=(width, height), dpi=96)


def human_bytes(n: float) -> str:
    for unit in ("B", "KiB", "MiB", "GiB", "TiB"):
        if abs(n) < 1024 or unit == "TiB":
            return f"{n:g} {unit}" if unit == "B" else f"{n:.0f} {unit}" if n == int(n) else f"{n:.1f} {unit}"
        n /= 1024
    return f"{n} B"  # pragma: no cover


# ---------------------------------------------------------------------- bandwidth
@dataclass(frozen=True)
class Series:
    """One measured curve: sizes in bytes against median GB/s, with the IQR band when known."""

    label: str
    sizes: list[float]
    gbps: list[float]
    low: list[float]
    high: list[float]
    colour: str
    style: str = "-"


@capped("bandwidth", lambda title, *args, **kwargs: str(title))
def bandwidth_svg(title: str, series: Sequence[Series], reference: tuple[str, float] | None = None) -> str:
    """Transfer size (log) against GB/s (log): the transport beside the object store and host copy."""
    budget = page_budget()

    def cut(values: Sequence[float], label: str) -> list[float]:
        return budget.points(values, f"{title}: {label} points")

    series = [Series(s.label, cut(s.sizes, s.label), cut(s.gbps, s.label), cut(s.low, s.label), cut(s.high, s.label),
                     s.colour, s.style) for s in budget.points(series, f"{title}: curves")]
    with _rc_context():
        fig = _figure(9.0, 4.4)
        ax = fig.add_subplot(1, 1, 1)
        for s in series:
            pts = [(x, y, lo, hi) for x, y, lo, hi in zip(s.sizes, s.gbps, s.low, s.high) if y and y > 0]
            if not pts:
                continue
            xs, ys, los, his = zip(*pts)
            ax.plot(xs, ys, s.style, color=s.colour, marker="o", ms=3.5, lw=1.8, label=s.label)
            if all(v and v > 0 for v in los + his):
                ax.fill_between(xs, los, his, color=s.colour, alpha=0.15, lw=0)
        if reference and reference[1] > 0:
            ax.axhline(reference[1], color="#616161", ls=":", lw=1.2, label=reference[0])
        ax.set_xscale("log", base=2)
        ax.set_yscale("log")
        _plain_log_ticks(ax.yaxis)
        ticks = sorted({x for s in series for x in s.sizes if x > 0})
        if ticks:
            step = max(1, len(ticks) // 8)
            ax.set_xticks(ticks[::step], [human_bytes(t) for t in ticks[::step]])
            ax.minorticks_off()
        ax.set_xlabel("transfer size")
        ax.set_ylabel("GB/s (median; band = IQR)")
        ax.grid(True, which="major", color="#e0e0e0", lw=0.6)
        ax.set_title(title)
        if ax.get_legend_handles_labels()[0]:
            ax.legend(frameon=False, fontsize=8, loc="upper center", bbox_to_anchor=(0.5, -0.16), ncol=2)
        return _svg(fig, "bandwidth-" + title, "bandwidth curve: " + title)


# ---------------------------------------------------------------------- pairwise
@capped("pairwise", lambda title, *args, **kwargs: str(title))
def pairwise_svg(title: str, labels: Sequence[str], gbps: Sequence[Sequence[float | None]],
                 blocks: Sequence[int] = ()) -> str:
    """Source × destination heatmap of GB/s, the diagonal left blank; `blocks` are the indices where
    a new node's devices start (drawn as separating lines)."""
    import numpy as np

    budget = page_budget()
    most = budget.limits.points // 4
    if len(labels) > most:
        budget.note(f"{title}: {most} of {len(labels)} devices per side shown (the cap per report)")
        labels, gbps = labels[:most], [list(row)[:most] for row in gbps[:most]]
        blocks = [k for k in blocks if k < most]
    with _rc_context():
        n = len(labels)
        grid = np.array([[np.nan if v is None else float(v) for v in row] for row in gbps], dtype=float)
        side = min(7.0, 2.0 + 0.55 * n)
        fig = _figure(side + 1.3, side)
        ax = fig.add_subplot(1, 1, 1)
        from matplotlib import colormaps
        cmap = colormaps["viridis"].with_extremes(bad="#f5f5f5")
        finite = grid[np.isfinite(grid)]
        vmin, vmax = (float(finite.min()), float(finite.max())) if finite.size else (0.0, 1.0)
        im = ax.imshow(grid, cmap=cmap, vmin=vmin, vmax=vmax if vmax > vmin else vmin + 1e-9)
        ax.set_xticks(range(n), labels, rotation=45, ha="right")
        ax.set_yticks(range(n), labels)
        ax.set_xlabel("destination")
        ax.set_ylabel("source")
        ax.spines[:].set_visible(False)
        if n <= 12:
            mid = (vmin + vmax) / 2
            for i in range(n):
                for j in range(n):
                    v = grid[i, j]
                    if np.isfinite(v):
                        ax.text(j, i, f"{v:.2g}", ha="center", va="center", fontsize=7,
                                color="white" if v < mid else "black")
        for k in blocks:
            ax.axhline(k - 0.5, color="white", lw=3)
            ax.axvline(k - 0.5, color="white", lw=3)
        bar = fig.colorbar(im, ax=ax, fraction=0.046, pad=0.04)
        bar.set_label("GB/s")
        ax.set_title(title)
        return _svg(fig, "pairwise-" + title, "pairwise matrix: " + title)


# ---------------------------------------------------------------------- recovery
@dataclass(frozen=True)
class Scenario:
    label: str
    elapsed_s: float | None
    bound_s: float | None
    outcome: str


@capped("recovery", lambda *args, **kwargs: RECOVERY_TITLE)
def recovery_svg(scenarios: Sequence[Scenario]) -> str:
    """One row per scenario: the bound as a pale bar, the elapsed time as a solid bar (log time axis)."""
    scenarios = page_budget().points(scenarios, "recovery chart: scenarios")
    with _rc_context():
        fig = _figure(9.0, 1.0 + 0.3 * len(scenarios))
        ax = fig.add_subplot(1, 1, 1)
        values = [v for s in scenarios for v in (s.elapsed_s, s.bound_s) if v and v > 0]
        floor = min([0.1] + [v / 2 for v in values])
        for y, s in enumerate(scenarios):
            if s.bound_s and s.bound_s > 0:
                ax.barh(y, s.bound_s - floor, left=floor, height=0.7, color="#eceff1", ec="#b0bec5", lw=0.6)
                ax.plot([s.bound_s, s.bound_s], [y - 0.42, y + 0.42], color="#37474f", lw=1.2)
            if s.elapsed_s is not None and s.elapsed_s > 0:
                ax.barh(y, max(s.elapsed_s - floor, 0), left=floor, height=0.42,
                        color=OUTCOME_COLOURS.get(s.outcome, "#616161"))
            text = (f"{s.elapsed_s:.1f} s" if s.elapsed_s is not None else "no time") + (
                f" / {s.bound_s:g} s" if s.bound_s else "")
            ax.text(max(s.bound_s or 0, s.elapsed_s or 0, floor) * 1.15, y, text, va="center", fontsize=7.5, color="#37474f")
        ax.set_xscale("log")
        ax.set_xlim(floor, max(values + [1.0]) * 4)
        _plain_log_ticks(ax.xaxis, " s")
        ax.set_yticks(range(len(scenarios)), [s.label for s in scenarios])
        ax.invert_yaxis()
        ax.set_xlabel("log scale: solid = elapsed; pale bar ending in a tick = the requirement's bound")
        ax.grid(True, axis="x", color="#e0e0e0", lw=0.6)
        ax.set_axisbelow(True)
        ax.set_title(RECOVERY_TITLE)
        return _svg(fig, "recovery", "recovery timeline: elapsed time against bound")


# ---------------------------------------------------------------------- rounds
@dataclass(frozen=True)
class Line:
    label: str
    ys: Sequence[float | None]      # one value per round (None: not measured that round)
    colour: str
    style: str = "-"


@capped("per-round", lambda title, *args, **kwargs: str(title))
def rounds_svg(title: str, ylabel: str, lines: Sequence[Line], first_round: int = 1) -> str:
    """A figure per round (linear axes): per-round time or memory over the rounds of a workload."""
    budget = page_budget()
    lines = [Line(line.label, budget.points(line.ys, f"{title}: {line.label} rounds"), line.colour, line.style)
             for line in budget.points(lines, f"{title}: lines")]
    with _rc_context():
        fig = _figure(9.0, 3.6)
        ax = fig.add_subplot(1, 1, 1)
        for line in lines:
            pts = [(first_round + i, y) for i, y in enumerate(line.ys) if y is not None]
            if pts:
                xs, ys = zip(*pts)
                ax.plot(xs, ys, line.style, color=line.colour, marker="o", ms=3.5, lw=1.6, label=line.label)
        ax.set_xlabel("round")
        ax.set_ylabel(ylabel)
        ax.set_ylim(bottom=0)
        ax.grid(True, color="#e0e0e0", lw=0.6)
        ax.set_title(title)
        if ax.get_legend_handles_labels()[0]:
            ax.legend(frameon=False, fontsize=8, loc="upper center", bbox_to_anchor=(0.5, -0.2), ncol=3)
        return _svg(fig, "rounds-" + title, "per-round chart: " + title)
