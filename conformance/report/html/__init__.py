"""The report as a web page (report.html) and the SIG's dashboard of submissions.

* `model`     – pure functions from report.json to what the page shows (sanitised strings)
* `charts`    – the four pictures (topology, bandwidth curve, pairwise heatmap, recovery) as inline SVG
* `page`      – `render_report_html(report) -> str`, the page from its Jinja template
* `dashboard` – `render_dashboard_html(rows) -> str`, one row per submission for `review --format html`
"""
from conformance.report.html.page import render_report_html

__all__ = ["render_report_html"]
