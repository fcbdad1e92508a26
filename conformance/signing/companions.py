"""The signed companion files judged against report.json: every file the signature covers either is
derived from report.json by the verifier or states exactly what report.json states.

  junit.xml  cross-checked: one <testsuite> of the suite whose timestamp is started_at and whose
             time is duration_s; its test cases are exactly the report's per-check tests (classname
             the check id, name the test's own name, in the report's order; one `not_run` case for
             a check no test ran for); each check's outcome is what its cases' outcomes combine to,
             its duration the sum of their times; the counts attributes are the cases' counts.
             A junit.xml of another run beside this report.json disagrees somewhere here.
  report.md  derived: this verifier renders report.json (conformance.report.build.render_markdown)
             and the bytes must be equal, for every release whose run wrote what this renderer
             writes (signing/rendering.py: from RENDERED_SINCE on). There is no text a vendor may
             legitimately add to report.md or take out of it: anything else was written by hand.
             A report of a release listed before RENDERED_SINCE was rendered by code that wrote
             other bytes, so report.md is cross-checked: title (vendor, product), the tier line,
             suite release, run window, the outcome counts, and the checks table: one row per
             check of report.json, in order, none missing or added, each with report.json's
             outcome and a reason exactly when report.json gives one.

Pure functions over bytes and the typed report (a schema-valid report.json: verify judges the
companions once the report schema holds); a hostile file is a problem line, never an exception.
"""
from __future__ import annotations

import re
import xml.etree.ElementTree as ET

from conformance import SUITE_NAME
from conformance.report.view import CheckResult, Report
from conformance.sanitize import terminal

_CASE_OUTCOME = {"failure": "fail", "error": "error"}
MAX_PROBLEMS = 6


def _short(value: object) -> str:
    return terminal(repr(value), limit=80)


def _case_outcome(case: ET.Element) -> str | None:
    """A test case's outcome as write_junit wrote it (None: a shape write_junit never writes)."""
    children = [c for c in case if c.tag in ("failure", "error", "skipped")]
    if not children:
        return "pass"
    if len(children) > 1:
        return None
    child = children[0]
    if child.tag == "failure" and (child.get("message") or "").startswith("flaky:"):
        return "flaky"
    if child.tag in _CASE_OUTCOME:
        return _CASE_OUTCOME[child.tag]
    message = child.get("message") or ""
    for outcome in ("waived", "not_applicable", "skip"):
        if message.startswith(f"{outcome}:"):
            return outcome
    return None


def _combine(outcomes: list[str]) -> str:
    from conformance.report.results import combine

    return combine(outcomes)


def _expected_cases(check: CheckResult) -> list[str]:
    return [t.split("::")[-1] for t in check.tests or ()] or ["not_run"]


def _float(text: str | None) -> float | None:
    try:
        value = float(text) if text is not None else None
    except ValueError:
        return None
    return value if value is not None and value == value and abs(value) != float("inf") else None


def junit_problems(report: Report, raw: bytes) -> list[str]:
    """Where junit.xml disagrees with report.json ([] when it states the same run)."""
    try:
        text = raw.decode("utf-8")   # write_junit writes UTF-8; another encoding could hide a DOCTYPE
    except UnicodeDecodeError:
        return ["junit.xml is not UTF-8 text"]
    if "<!DOCTYPE" in text or "<!ENTITY" in text:
        return ["junit.xml declares a DOCTYPE or entities (write_junit never does)"]
    try:
        root = ET.fromstring(raw)
    except ET.ParseError as exc:
        return [f"junit.xml is not well-formed XML: {terminal(str(exc), limit=120)}"]
    suites = list(root) if root.tag == "testsuites" else []
    if root.tag != "testsuites" or len(suites) != 1 or suites[0].tag != "testsuite":
        return ["junit.xml is not one <testsuite> inside <testsuites>"]
    suite = suites[0]
    problems = []
    if suite.get("name") != SUITE_NAME:
        problems.append(f"testsuite name {_short(suite.get('name'))} is not {SUITE_NAME!r}")
    if suite.get("timestamp") != report.started_at:
        problems.append(f"testsuite timestamp {_short(suite.get('timestamp'))} is not started_at "
                        f"{_short(report.started_at)}")
    duration = report.duration_s
    if duration is not None:
        if suite.get("time") != f"{duration:.3f}":
            problems.append(f"testsuite time {_short(suite.get('time'))} is not duration_s {duration}")
    cases = [c for c in suite if c.tag == "testcase"]
    if len(cases) != len(list(suite)):
        problems.append("testsuite holds elements other than test cases")
    by_check: dict[str, list[ET.Element]] = {}
    order: list[str] = []
    for case in cases:
        cid = case.get("classname") or ""
        if cid not in by_check:
            order.append(cid)
        by_check.setdefault(cid, []).append(case)
    checks = report.checks
    ids = [c.id for c in checks]
    if order != ids:
        missing = [i for i in ids if i not in by_check]
        extra = [i for i in order if i not in set(ids)]
        problems.append("its checks are not report.json's, in order" +
                        (f" (missing {', '.join(missing[:5])})" if missing else "") +
                        (f" (not in report.json: {terminal(', '.join(extra[:5]), limit=120)})" if extra else ""))
    counts = {"tests": 0, "failures": 0, "errors": 0, "skipped": 0}
    for check in checks:
        cid = check.id
        mine = by_check.get(cid, [])
        names = [c.get("name") for c in mine]
        if names != _expected_cases(check):
            problems.append(f"{cid}: test cases {terminal(names[:4], limit=160)} are not report.json's tests "
                            f"{terminal(_expected_cases(check)[:4], limit=160)}")
            continue
        found = [_case_outcome(c) for c in mine]
        outcomes = [o for o in found if o is not None]
        if len(outcomes) != len(found):
            problems.append(f"{cid}: a test case has an outcome write_junit never writes")
            continue
        counts["tests"] += len(mine)
        counts["failures"] += outcomes.count("fail") + outcomes.count("flaky")
        counts["errors"] += outcomes.count("error")
        counts["skipped"] += sum(o in ("skip", "not_applicable", "waived") for o in outcomes)
        claimed = check.outcome
        if claimed == "waived":
            waived_ok = "waived" in outcomes and "fail" not in outcomes
            original = _combine(["fail" if o == "waived" else o for o in outcomes])
            if not waived_ok or original not in ("fail", "error"):
                problems.append(f"{cid}: report.json says waived, junit.xml's cases say {terminal(outcomes, limit=120)}")
        elif check.tests and _combine(outcomes) != claimed:
            problems.append(f"{cid}: report.json says {_short(claimed)}, its junit.xml cases combine to "
                            f"{_combine(outcomes)!r}")
        elif not check.tests and outcomes != ["skip"]:
            problems.append(f"{cid}: no test ran, but junit.xml's case says {outcomes[0]}")
        times = [_float(c.get("time")) for c in mine]
        stated = check.duration_s
        if None in times or any(t is not None and t < 0 for t in times):
            problems.append(f"{cid}: a test case's time is not a non-negative number")
        elif check.tests and abs(sum(t for t in times if t is not None) - stated) > 0.001 * len(times) + 0.001:
            problems.append(f"{cid}: duration_s {stated} is not the sum of its junit.xml case times "
                            f"({sum(t for t in times if t is not None):.3f})")
    for key, value in counts.items():
        if suite.get(key) != str(value):
            problems.append(f"testsuite {key}={_short(suite.get(key))}, its cases give {value}")
    return problems[:MAX_PROBLEMS]


def _cells(line: str) -> list[str]:
    """A Markdown table row's cells (a `\\|` inside a cell is markdown_cell's escape, no border)."""
    return [c.strip() for c in re.split(r"(?<!\\)\|", line.strip())[1:-1]]


def _checks_rows(lines: list[str]) -> list[list[str]] | None:
    """The rows of the table under `## Checks` (None: no such one section with a table)."""
    heads = [i for i, line in enumerate(lines) if line.strip() == "## Checks"]
    if len(heads) != 1:
        return None
    body = lines[heads[0] + 1:]
    body = body[next((i for i, line in enumerate(body) if line.strip()), len(body)):]
    table = body[:next((i for i, line in enumerate(body) if not line.startswith("|")), len(body))]
    if len(table) < 2 or [c.lower() for c in _cells(table[0])][:4] != ["check", "area", "level", "outcome"]:
        return None
    return [_cells(line) for line in table[2:]]


def _outcome_counts(lines: list[str]) -> dict[str, int] | None:
    found = [line for line in lines if line.startswith("- Outcomes: ")]
    if len(found) != 1:
        return None
    counts: dict[str, int] = {}
    for part in found[0][len("- Outcomes: "):].split("  ")[0].split(", "):
        name, _, n = part.strip().partition(" ")
        if not n.isdigit() or name in counts:
            return None
        counts[name] = int(n)
    return counts


def markdown_problems(report: Report, text: str, derived: bool = True) -> tuple[list[str], bool]:
    """(problems, derived): report.md against report.json. `derived`: the report's release is
    rendered by this verifier (signing/rendering.py), so report.md must be its rendering byte for
    byte; otherwise it is cross-checked statement by statement. The rendering is of the JSON as
    signed (report.document): report.md was written from exactly that."""
    from conformance.report.build import render_markdown

    try:
        rendered: str | None = render_markdown(dict(report.document))
    except (KeyError, TypeError, ValueError, AttributeError, IndexError):
        rendered = None
    if rendered == text:
        return [], True
    stated = _stated_problems(report, text)
    if derived:   # what its statements contradict too, when they do: a reader sees what was changed
        version = terminal(report.suite.version, limit=40)
        return [f"it is not this verifier's rendering of report.json, and a run of release {version} wrote exactly "
                "that rendering, byte for byte: no text may be added to report.md or taken out"
                + ("" if rendered is not None else " (report.json cannot be rendered)"), *stated][:MAX_PROBLEMS], False
    return stated[:MAX_PROBLEMS], False


def _stated_problems(report: Report, text: str) -> list[str]:
    """What report.md's statements (title, tier, release, run window, outcome counts, every check's
    row) contradict in report.json."""
    from conformance.report.build import OUTCOME_MARK
    from conformance.sanitize import markdown_cell

    manifest, suite = report.manifest, report.suite
    lines = text.splitlines()
    problems = []
    title = f"# Conformance report: {markdown_cell(manifest.get('vendor'), limit=200)} — " \
            f"{markdown_cell(manifest.get('product'), limit=200)}"
    if not lines or lines[0] != title:
        problems.append("its title does not name report.json's vendor and product")
    tier_lines = [line for line in lines if line.startswith("**Tier achieved: ")]
    if len(tier_lines) != 1 or not tier_lines[0].startswith(f"**Tier achieved: {report.tier or 'none'}**"):
        problems.append(f"its tier line is not report.json's tier {_short(report.tier)}")
    if f"- Suite: {suite.name} {suite.version} " not in text:
        problems.append(f"it does not name report.json's release {_short(suite.version)}")
    if f"- Run: {report.started_at} → {report.finished_at} " not in text:
        problems.append("its run window is not report.json's started_at → finished_at")
    if _outcome_counts(lines) != {str(k): v for k, v in report.summary.items() if v}:
        problems.append("its outcomes line is not report.json's summary")
    want = [(c.id, OUTCOME_MARK.get(c.outcome, "?"), bool(markdown_cell(c.reason or "", limit=160).strip()))
            for c in report.checks]
    rows = _checks_rows(lines)
    got = None if rows is None else [(r[0], r[3], bool(r[-1])) if len(r) >= 5 else (r[0] if r else "", "?", False)
                                     for r in rows]
    if got is None:
        problems.append("it has no checks table under one '## Checks' heading")
    elif got != want:
        differ = next((f"{w[0]} {w[1]}{' (a reason)' if w[2] else ''} vs {g[0]} {g[1]}{' (a reason)' if g[2] else ''}"
                       for w, g in zip(want, got) if w != g), f"{len(got)} rows for {len(want)} checks")
        problems.append(f"its checks table is not report.json's (id, outcome, reason; {terminal(differ, limit=100)})")
    return problems


def companion_lines(report: Report, junit: bytes, markdown: bytes,
                    derived: bool = True) -> list[tuple[str, bool, str]]:
    """verify's `companions` line. `derived`: this verifier renders the report's release
    (signing/rendering.renders_release): report.md must be its rendering byte for byte."""
    problems = [f"junit.xml: {p}" for p in junit_problems(report, junit)]
    try:
        md_problems, equal = markdown_problems(report, markdown.decode("utf-8"), derived)
    except UnicodeDecodeError:
        md_problems, equal = ["not UTF-8 text"], False
    problems += [f"report.md: {p}" for p in md_problems]
    if problems:
        return [("companions", False, "; ".join(problems))]
    how = "equals this verifier's rendering of report.json" if equal else \
        "(its release's renderer wrote other bytes) states report.json's vendor, product, tier, release, run " \
        "window, outcome counts and every check's row (id, outcome, reason)"
    return [("companions", True, f"junit.xml states report.json's run (every test case, outcome and time); "
                                 f"report.md {how}")]
