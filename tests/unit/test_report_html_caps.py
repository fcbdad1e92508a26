"""Every chart kind counts against the page's chart cap and is marked when capped (issue 43: a
report with 130 workload charts drew all of them where the cap is 16, and said nothing).

By construction: every chart function (charts.py and topology_svg.py, each `*_svg`) is wrapped by
`charts.capped`, which takes the chart from the page's budget before anything is drawn. Pure:
report.json in, the page out."""
from __future__ import annotations

import inspect

from conformance.report.html import charts, limits, topology_svg
from conformance.report.html.page import render_report_page
from html_samples import workload_report


def test_every_chart_function_is_capped() -> None:
    found = {name: fn for module in (charts, topology_svg) for name, fn in inspect.getmembers(module, inspect.isfunction)
             if name.endswith("_svg") and not name.startswith("_") and fn.__module__ == module.__name__}
    assert {"bandwidth_svg", "pairwise_svg", "recovery_svg", "rounds_svg", "topology_svg"} <= set(found)
    assert [n for n, fn in found.items() if not getattr(fn, "chart_kind", None)] == []


def test_workload_charts_are_capped_and_counted_by_kind() -> None:
    page, capped = render_report_page(workload_report(65), page_limits=limits.PageLimits(charts=3))
    assert page.count('class="chart"') == 3
    assert page.count("chart not drawn (the page") == 4 + 130 - 3   # topology, bandwidth, pairwise, recovery: 4 more
    note = next(c for c in capped if c.startswith("charts: "))
    assert note.startswith("charts: 131 not drawn: the page already has 3 charts (the cap per report)")
    assert "per-round 130" in note and sum(c.startswith("charts: ") for c in capped) == 1
    assert 'id="capped"' in page and "charts: 131 not drawn" in page


def test_points_of_a_per_round_chart_are_capped() -> None:
    report = workload_report(1)
    fig = report["checks"][-1]["metrics"]["devices"]["dev000"]
    fig["round_seconds"] = [0.5] * 40
    _page, capped = render_report_page(report, page_limits=limits.PageLimits(charts=16, points=10))
    assert any("through the transport rounds: 10 of 43 shown" in c for c in capped), capped
