"""Caps on what one report can draw on its page, so that one report cannot stall or bloat a review.

A report.json is the submitter's: it may carry hundreds of bandwidth sweeps, a 500 x 500 pairwise
matrix or a million rows. `review --format html` renders every submission's page, and
verification is bounded per submission (`--submission-timeout`), so drawing is bounded too:

  charts       charts drawn on one page, every kind counted (bandwidth, pairwise, recovery,
               per-round, topology: each chart function is wrapped by charts.capped); the rest are
               named where they would stand and counted by kind in one note
  points       points per curve, devices per pairwise matrix side, scenarios per recovery chart,
               links per topology node
  rows         items in any one list the page shows (checks, problems, notes, table rows, ...)
  page_bytes   the page itself; a page over it is replaced by a short page that says so

Whatever was capped is said on the page (a "capped" notice listing each cut) and, in the review
dashboard, as a note on the submission's row. A real run draws far below every cap (a few
charts, about 150 checks), so the caps change nothing for an honest report.

The budget of the page being rendered lives in a context variable (`page_budget`), set by
`render_report_html` and read by the chart and model functions; outside a render it is the
default caps, freshly counted.
"""
from __future__ import annotations

import contextlib
import contextvars
from dataclasses import dataclass, field
from typing import Any, Iterator, Sequence, TypeVar

T = TypeVar("T")


@dataclass(frozen=True)
class PageLimits:
    charts: int = 16
    points: int = 256
    rows: int = 1000
    page_bytes: int = 16 * 1024 * 1024


DEFAULT = PageLimits()


@dataclass
class Budget:
    """What is left of one page's caps, and what was cut."""

    limits: PageLimits = DEFAULT
    charts_drawn: int = 0
    capped: list[str] = field(default_factory=list)
    # charts refused by the cap, per kind (bandwidth, pairwise, recovery, per-round, topology)
    charts_refused: dict[str, int] = field(default_factory=dict)
    _charts_note: int | None = None  # where in `capped` the one note about refused charts stands

    def note(self, text: str) -> None:
        if text not in self.capped and len(self.capped) < 200:
            self.capped.append(text)

    def take_chart(self, title: str, kind: str = "chart") -> bool:
        """Whether one more chart may be drawn (counting it). Refused ones are counted by kind in
        one note (each is named on the page where it would stand), so 130 charts over the cap are
        one line of the notice, not 114."""
        if self.charts_drawn < self.limits.charts:
            self.charts_drawn += 1
            return True
        self.charts_refused[kind] = self.charts_refused.get(kind, 0) + 1
        total = sum(self.charts_refused.values())
        kinds = ", ".join(f"{k} {n}" for k, n in sorted(self.charts_refused.items()))
        text = (f"charts: {total} not drawn: the page already has {self.limits.charts} charts (the cap per report); "
                f"not drawn by kind: {kinds}; the first not drawn: {title[:120]!r}")
        if self._charts_note is None:
            self._charts_note = len(self.capped)
            self.capped.append(text)
        else:
            first = self.capped[self._charts_note].rpartition("; the first not drawn: ")[2]
            self.capped[self._charts_note] = text.rpartition("; the first not drawn: ")[0] + \
                f"; the first not drawn: {first}"
        return False

    def points(self, items: Sequence[T], what: str) -> list[T]:
        """The first `limits.points` of `items` (noted when cut)."""
        return self._cut(items, self.limits.points, what)

    def rows(self, items: Sequence[T], what: str) -> list[T]:
        """The first `limits.rows` of `items` (noted when cut)."""
        return self._cut(items, self.limits.rows, what)

    def _cut(self, items: Sequence[T], cap: int, what: str) -> list[T]:
        items = list(items)
        if len(items) > cap:
            self.note(f"{what}: {cap} of {len(items)} shown (the cap per report)")
            return items[:cap]
        return items

    def cap_lists(self, value: object, where: str, depth: int = 0) -> Any:
        """`value` with every list in it cut to `limits.rows` items (each cut noted with its path)."""
        if depth > 16:
            return value
        if isinstance(value, list):
            return [self.cap_lists(v, f"{where}[]", depth + 1) for v in self.rows(value, where)]
        if isinstance(value, dict):
            return {k: self.cap_lists(v, f"{where}.{k}" if where else str(k), depth + 1) for k, v in value.items()}
        return value


_current: contextvars.ContextVar[Budget | None] = contextvars.ContextVar("page_budget", default=None)


def page_budget() -> Budget:
    """The budget of the page being rendered (a fresh default one outside a render)."""
    return _current.get() or Budget()


@contextlib.contextmanager
def rendering(limits: PageLimits = DEFAULT) -> Iterator[Budget]:
    """Count one page's drawing against `limits` for the duration of the block."""
    budget = Budget(limits)
    token = _current.set(budget)
    try:
        yield budget
    finally:
        _current.reset(token)
