"""report.html: one self-contained page rendered from report.json by a pure function.

`render_report_html(report) -> str` reads nothing but its argument (and the templates shipped
in this package); the same report gives the same page, so a reviewer can regenerate a
submission's page from its signed report.json. The page loads nothing: styles are inline,
the charts are inline SVG, and a Content-Security-Policy forbids scripts and every fetch.
"""
from __future__ import annotations

import functools
import json
import re
from typing import Any, Mapping

import jinja2
import markupsafe

from conformance.report import findings

from . import limits, model

# No scripts, no fetches of any kind; inline styles (the page's and matplotlib's) only.
CSP = "default-src 'none'; style-src 'unsafe-inline'; img-src data:; base-uri 'none'; form-action 'none'"


# Marks pages this package wrote: the review dashboard replaces only files that carry it.
GENERATOR = "ray-accelerator-conformance"


def _slug(value: object) -> str:
    return re.sub(r"[^A-Za-z0-9_-]+", "-", str(value)).strip("-") or "x"


def environment() -> jinja2.Environment:
    """The Jinja environment both pages use: autoescape on for every template; a missing key renders empty."""
    env = jinja2.Environment(loader=jinja2.PackageLoader("conformance.report.html", "templates"),
                             autoescape=True,
                             trim_blocks=True, lstrip_blocks=True)
    env.filters["slug"] = _slug
    from conformance.report.coverage import coverage_text
    from conformance.timing.host_load import load_text
    env.filters["load"] = load_text
    env.filters["coverage"] = coverage_text
    env.filters["num"] = lambda v, fmt="{:.1f}": fmt.format(v) if isinstance(v, (int, float)) else "?"
    env.globals["CSP"] = markupsafe.Markup(CSP)  # a constant of ours, not outside text
    env.globals["OUTCOME_LABEL"] = model.OUTCOME_LABEL
    env.globals["GENERATOR"] = GENERATOR
    return env


def area_sections(report: Mapping[str, Any]) -> list[dict[str, Any]]:
    """Every area's blocks, in registry order: each area declares what it draws (conformance.areas);
    then the findings block, which is the core's (checks of an uncounted level, any area's)."""
    from conformance.areas import AREAS
    from conformance.catalog.area import load_ref

    out = []
    for area in AREAS:
        for block in area.html:
            draw = load_ref(block.render)
            out.append({"view": block.view, "title": block.title, "nav": block.nav or block.title,
                        "data": model.section(functools.partial(draw, report), block.notice)})
    # the findings: checks of an uncounted level, whatever their area, drawn by the core after the areas
    out.append({"view": "findings", "title": findings.HTML_TITLE, "nav": "Findings",
                "data": model.section(functools.partial(findings.html_block, report), findings.HTML_NOTICE)})
    return out


def render_report_html(report: Mapping[str, Any], *, link_base: str = "",
                       page_limits: limits.PageLimits = limits.DEFAULT) -> str:
    """The whole page for one report.json (already parsed). Missing data gives a notice, never an error.

    `link_base` prefixes the report folder's relative links (log files) when the page is written
    somewhere else than beside report.json (the review dashboard's copies).
    """
    return render_report_page(report, link_base=link_base, page_limits=page_limits)[0]


_OVER_SIZE = """<!doctype html>
<html lang="en"><head><meta charset="utf-8">
<meta http-equiv="Content-Security-Policy" content="{{ CSP }}">
<meta name="generator" content="{{ GENERATOR }}">
<title>Conformance report: {{ vendor }} — {{ product }}</title></head>
<body><h1>{{ vendor }} — {{ product }}</h1>
<p class="banner bad" id="capped">This report's page would be {{ size }} bytes, over the cap of {{ cap }} bytes per
report, so it is not drawn. report.json holds everything; verify and review judge it in full.</p>
</body></html>
"""


def render_report_page(report: Mapping[str, Any], *, link_base: str = "",
                       page_limits: limits.PageLimits = limits.DEFAULT) -> tuple[str, list[str]]:
    """(the page, what was capped): drawing is bounded by `page_limits` (charts, points, rows,
    bytes; conformance.report.html.limits) and the page says what it left out."""
    with limits.rendering(page_limits) as budget:
        page = _render(report, link_base, budget)
    size = len(page.encode("utf-8"))
    if size > page_limits.page_bytes:
        budget.note(f"page: {size} bytes, over the cap of {page_limits.page_bytes} bytes per report; not drawn")
        manifest = model.as_dict(model.clean_tree(model.as_dict(dict(report)).get("manifest")))
        page = environment().from_string(_OVER_SIZE).render(
            vendor=str(manifest.get("vendor") or "unknown vendor"), product=str(manifest.get("product") or "unknown product"),
            size=size, cap=page_limits.page_bytes)
    return page, list(budget.capped)


def _render(report: Mapping[str, Any], link_base: str, budget: limits.Budget) -> str:
    # Through JSON with sorted keys first: the page is then a function of report.json's content
    # alone, the same whether rendered at the end of a run or later from the file.
    r = model.clean_tree(json.loads(json.dumps(report, sort_keys=True, default=str)))
    manifest = model.as_dict(r.get("manifest"))
    view = {
        "vendor": str(manifest.get("vendor") or "unknown vendor"),
        "product": str(manifest.get("product") or "unknown product"),
        "tier": r.get("tier"),
        "interrupted": bool(r.get("interrupted")),
        "interrupted_reason": r.get("interrupted_reason"),
        "summary": model.summary(r),
        "facts": model.facts(r),
        "notes": [str(n) for n in model.as_list(model.as_dict(r.get("cluster")).get("notes"))],
        "ladder": model.ladder(r),
        "next_steps": model.next_steps(r),
        "capabilities": model.capabilities(r),
        "areas": model.area_grid(r),
        "problems": model.problems(r, link_base),
        "checks": [c for c in model.as_list(r.get("checks")) if isinstance(c, dict)],
        "sections": area_sections(r),
    }
    view = budget.cap_lists(view, "")
    return environment().get_template("report.html.j2").render(**view, capped=list(budget.capped))

