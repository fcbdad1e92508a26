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

OUTCOME_ORDER = ("pass", "fail", "error", "flaky", "waived", "skip", "not_applicable")
OUTCOME_LABEL = {"pass": "pass", "fail": "FAIL", "error": "ERROR", "flaky": "FLAKY", "waived": "waived", "skip": "skip",
                 "not_applicable": "N/A"}
FAILED = ("fail", "error", "flaky")   # shown with their reasons (a flaky one names its attempts)
TEXT_LIMIT = 20000
_SCHEME = re.compile(r"^[A-Za-z][A-Za-z0-9+.-]*:")


def clean_tree(value: object) -> Any:
    """The same structure with every string (keys too) made safe to show; multi-line text kept."""
    if isinstance(value, str):
        return terminal(value, limit=TEXT_LIMIT, one_line=False)
    if isinstance(value, Mapping):
        return {clean_tree(str(k)): clean_tree(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [clean_tree(v) for v in value]
    return value


def safe_href(value: object) -> str | None:
    """A link target only for https/http URLs and relative paths; never javascript:, data: or file:."""
    if not isinstance(value, str) or not value.strip() or any(c.isspace() for c in value.strip()):
        return None
    v = value.strip()
    if _SCHEME.match(v):
        return v if v.lower().startswith(("https://", "http://")) else None
    if v.startswith(("/", "\\")) or ".." in v.split("/"):
        return None
    return v


def url_href(value: object) -> str | None:
    """A link target only for https/http URLs (a doc reference that is a path stays text: it is
    relative to the project, not to wherever the page is opened)."""
    href = safe_href(value)
    return href if href and href.lower().startswith(("https://", "http://")) else None


def _under(base: str, href: str | None) -> str | None:
    """A relative file link (percent-encoded) below `base`, itself a percent-encoded relative URL."""
    if not href or href.lower().startswith(("https://", "http://")):
        return href
    return (base.rstrip("/") + "/" if base else "") + quote(href, safe="/")


def as_dict(value: object) -> dict[str, Any]:
    return value if isinstance(value, dict) else {}


def as_list(value: object) -> list[Any]:
    return value if isinstance(value, list) else []


def as_number(value: object) -> float | None:
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
    return {str(c.get("id")): c for c in as_list(report.get("checks")) if isinstance(c, dict)}


def _blocking(entry: Mapping[str, Any], by_id: Mapping[str, dict[str, Any]]) -> list[dict[str, Any]]:
    """A tier's or a capability's blocking checks, each with its outcome label and title."""
    return [{"id": b.get("id"), "outcome": b.get("outcome"),
             "label": OUTCOME_LABEL.get(str(b.get("outcome")), b.get("outcome")),
             "title": as_dict(by_id.get(str(b.get("id")))).get("title", "")}
            for b in as_list(entry.get("blocking")) if isinstance(b, dict)]


def ladder(report: Mapping[str, Any]) -> list[dict[str, Any]]:
    """One rung per tier, lowest first: achieved, what blocks it, which conditions are unmet."""
    by_id = checks_by_id(report)
    rungs = []
    for t in as_list(report.get("tiers")):
        if not isinstance(t, dict):
            continue
        blocking = _blocking(t, by_id)
        conditions = [c for c in as_list(t.get("conditions")) if isinstance(c, dict)]
        rungs.append({"name": t.get("name"), "achieved": bool(t.get("achieved")),
                      "current": t.get("name") == report.get("tier"), "below": t.get("below"),
                      "required": len(as_list(t.get("required_checks"))), "blocking": blocking,
                      "unmet": [c.get("detail") for c in conditions if not c.get("met")],
                      "met": [c.get("detail") for c in conditions if c.get("met")]})
    return rungs


def capabilities(report: Mapping[str, Any]) -> list[dict[str, Any]]:
    """One entry per capability profile the report records: its state and what blocks it."""
    by_id = checks_by_id(report)
    out = []
    for c in as_list(report.get("capabilities")):
        if not isinstance(c, dict):
            continue
        blocking = _blocking(c, by_id)
        out.append({"name": c.get("name"), "state": str(c.get("state") or "?"),
                    "required": len(as_list(c.get("required_checks"))), "blocking": blocking})
    return out


def next_steps(report: Mapping[str, Any]) -> dict[str, Any] | None:
    """The run's advice on the next tier, when the report carries it."""
    ns = report.get("next_steps")
    if not isinstance(ns, dict):
        return None
    blocking = []
    for b in as_list(ns.get("blocking")):
        if isinstance(b, dict):
            blocking.append({**b, "href": url_href(b.get("doc"))})
    ceiling = as_dict(ns.get("shape_ceiling"))
    return {"next_tier": ns.get("next_tier"), "blocking": blocking,
            "ceiling": ceiling if ceiling.get("tier") or ceiling.get("reason") else None}


def summary(report: Mapping[str, Any]) -> list[tuple[str, str, int]]:
    counts = as_dict(report.get("summary"))
    return [(o, OUTCOME_LABEL[o], int(counts.get(o) or 0)) for o in OUTCOME_ORDER if counts.get(o)]


# ---------------------------------------------------------------------- checks
def area_grid(report: Mapping[str, Any]) -> list[dict[str, Any]]:
    """Areas in checklist order, each with its checks (one tile each) and outcome counts."""
    areas: OrderedDict[str, list[dict[str, Any]]] = OrderedDict()
    for c in as_list(report.get("checks")):
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
    for c in as_list(report.get("checks")):
        if not isinstance(c, dict):
            continue
        entry = {**c, "label": OUTCOME_LABEL.get(str(c.get("outcome")), c.get("outcome")),
                 "logs": [{"name": f, "href": _under(link_base, safe_href(f))}
                          for f in as_list(c.get("log_files")) if isinstance(f, str)],
                 "waiver_href": url_href(as_dict(c.get("waiver")).get("issue"))}
        if c.get("outcome") in FAILED:
            failed.append(entry)
        elif c.get("outcome") == "waived":
            waived.append(entry)
    return {"failed": failed, "waived": waived}


# ---------------------------------------------------------------------- what areas' blocks share
def section_data(report: Mapping[str, Any], name: str) -> dict[str, Any]:
    """The `data` of one published section (report.json `sections.<name>.data`; {} when absent)."""
    return as_dict(as_dict(as_dict(report.get("sections")).get(name)).get("data"))


def no_transport_text(report: Mapping[str, Any]) -> str:
    """Why a transport block has nothing to draw (the transport and performance areas' blocks)."""
    return ("The manifest declares no transport, so" if not as_dict(report.get("manifest")).get("transport")
            else "The transport checks did not run or recorded nothing, so")


# ---------------------------------------------------------------------- run facts
def facts(report: Mapping[str, Any]) -> list[tuple[str, str]]:
    """Label/value pairs for the run's header: suite, manifest, cluster, environment, times."""
    m, env, suite, cluster = (as_dict(report.get(k)) for k in ("manifest", "environment", "suite", "cluster"))
    plugin = as_dict(m.get("plugin"))
    rows = [
        ("suite", f"{suite.get('name', '?')} {suite.get('version', '?')}"),
        ("plugin", f"{as_dict(m.get('accelerator')).get('resource_name', '?')} · version {plugin.get('version', '?')}"),
        ("manifest", f"{report.get('manifest_path', '?')} (sha256 {str(report.get('manifest_sha256', ''))[:16]}…)"),
        ("cluster", f"{cluster.get('mode', '?')}, {cluster.get('nodes', '?')} node(s)"),
        ("Ray", str(env.get("ray", "?"))),
        ("environment", f"torch {env.get('torch', '?')}, Python {env.get('python', '?')}, {env.get('os', '?')}, "
                        f"{env.get('cpu', '?')} ({env.get('cpu_count', '?')} CPUs)"),
        ("run", f"{report.get('started_at', '?')} → {report.get('finished_at', '?')} ({report.get('duration_s', '?')} s)"),
    ]
    if as_dict(report.get("plugin_artifact")):
        art = as_dict(report.get("plugin_artifact"))
        rows.insert(2, ("artifact", f"{art.get('name', '?')} (sha256 {str(art.get('sha256', ''))[:16]}…)"))
    return rows
