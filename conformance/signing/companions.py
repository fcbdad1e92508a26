"""The signed companion files judged against report.json: every file the signature covers either is
derived from report.json by the verifier or states exactly what report.json states.

  junit.xml  cross-checked: one <testsuite> of the suite whose timestamp is started_at and whose
             time is duration_s; its test cases are exactly the report's per-check tests (classname
             the check id, name the test's own name, in the report's order; one `not_run` case for
             a check no test ran for); each check's outcome is what its cases' outcomes combine to,
             its duration the sum of their times; the counts attributes are the cases' counts.
             A junit.xml of another run beside this report.json disagrees somewhere here.
  report.md  derived: this verifier renders report.json (conformance.report.build.render_markdown)
             and the bytes must be equal. A report of this verifier's own release must be exactly
             that rendering (its code is the code that wrote it: anything else was written by
             hand). A report of an older release was rendered by that release's code, so when the
             bytes differ every statement report.md makes that report.json decides must agree:
             title (vendor, product), tier, suite release, run window, and one row per check with
             its outcome, in order.

Pure functions over bytes and parsed JSON; a hostile file is a problem line, never an exception.
"""
from __future__ import annotations

import re
import xml.etree.ElementTree as ET
from typing import Any, Mapping

from conformance import SUITE_NAME
from conformance.catalog.strict_input import as_list, as_map
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


def _expected_cases(check: Mapping[str, Any]) -> list[str]:
    tests = [t for t in as_list(check.get("tests")) if isinstance(t, str)]
    return [t.split("::")[-1] for t in tests] or ["not_run"]


def _float(text: str | None) -> float | None:
    try:
        value = float(text) if text is not None else None
    except ValueError:
        return None
    return value if value is not None and value == value and abs(value) != float("inf") else None


def junit_problems(report: Mapping[str, Any], raw: bytes) -> list[str]:
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
    if suite.get("timestamp") != report.get("started_at"):
        problems.append(f"testsuite timestamp {_short(suite.get('timestamp'))} is not started_at "
                        f"{_short(report.get('started_at'))}")
    duration = report.get("duration_s")
    if isinstance(duration, (int, float)) and not isinstance(duration, bool):
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
    checks = [c for c in as_list(report.get("checks")) if isinstance(c, Mapping)]
    ids = [str(c.get("id")) for c in checks]
    if order != ids:
        missing = [i for i in ids if i not in by_check]
        extra = [i for i in order if i not in set(ids)]
        problems.append("its checks are not report.json's, in order" +
                        (f" (missing {', '.join(missing[:5])})" if missing else "") +
                        (f" (not in report.json: {terminal(', '.join(extra[:5]), limit=120)})" if extra else ""))
    counts = {"tests": 0, "failures": 0, "errors": 0, "skipped": 0}
    for check in checks:
        cid = str(check.get("id"))
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
        claimed = check.get("outcome")
        if claimed == "waived":
            waived_ok = "waived" in outcomes and "fail" not in outcomes
            original = _combine(["fail" if o == "waived" else o for o in outcomes])
            if not waived_ok or original not in ("fail", "error"):
                problems.append(f"{cid}: report.json says waived, junit.xml's cases say {terminal(outcomes, limit=120)}")
        elif check.get("tests") and _combine(outcomes) != claimed:
            problems.append(f"{cid}: report.json says {_short(claimed)}, its junit.xml cases combine to "
                            f"{_combine(outcomes)!r}")
        elif not check.get("tests") and outcomes != ["skip"]:
            problems.append(f"{cid}: no test ran, but junit.xml's case says {outcomes[0]}")
        times = [_float(c.get("time")) for c in mine]
        stated = check.get("duration_s")
        if None in times or any(t is not None and t < 0 for t in times):
            problems.append(f"{cid}: a test case's time is not a non-negative number")
        elif isinstance(stated, (int, float)) and check.get("tests") \
                and abs(sum(t for t in times if t is not None) - stated) > 0.001 * len(times) + 0.001:
            problems.append(f"{cid}: duration_s {stated} is not the sum of its junit.xml case times "
                            f"({sum(t for t in times if t is not None):.3f})")
    for key, value in counts.items():
        if suite.get(key) != str(value):
            problems.append(f"testsuite {key}={_short(suite.get(key))}, its cases give {value}")
    return problems[:MAX_PROBLEMS]


_ROW = re.compile(r"^\|\s*([A-Z]{2}-\d{3})\s*\|[^|]*\|[^|]*\|\s*([A-Z/]+)\s*\|")


def markdown_problems(report: Mapping[str, Any], text: str) -> tuple[list[str], bool]:
    """(problems, derived): report.md against report.json; derived when byte-equal to this
    verifier's rendering, else cross-checked statement by statement."""
    from conformance.report.build import OUTCOME_MARK, render_markdown
    from conformance.sanitize import markdown_cell

    try:
        if render_markdown(dict(report)) == text:
            return [], True
    except (KeyError, TypeError, ValueError, AttributeError, IndexError):
        pass
    manifest = as_map(report.get("manifest"))
    suite = as_map(report.get("suite"))
    lines = text.splitlines()
    problems = []
    title = f"# Conformance report: {markdown_cell(manifest.get('vendor'), limit=200)} — " \
            f"{markdown_cell(manifest.get('product'), limit=200)}"
    if not lines or lines[0] != title:
        problems.append("its title does not name report.json's vendor and product")
    tier_lines = [line for line in lines if line.startswith("**Tier achieved: ")]
    if len(tier_lines) != 1 or not tier_lines[0].startswith(f"**Tier achieved: {report.get('tier') or 'none'}**"):
        problems.append(f"its tier line is not report.json's tier {_short(report.get('tier'))}")
    if f"- Suite: {suite.get('name')} {suite.get('version')} " not in text:
        problems.append(f"it does not name report.json's release {_short(suite.get('version'))}")
    if f"- Run: {report.get('started_at')} → {report.get('finished_at')} " not in text:
        problems.append("its run window is not report.json's started_at → finished_at")
    rows = [m.groups() for m in map(_ROW.match, lines) if m]
    want = [(str(c.get("id")), OUTCOME_MARK.get(str(c.get("outcome")), "?"))
            for c in as_list(report.get("checks")) if isinstance(c, Mapping)]
    if rows != want:
        differ = next((f"{w[0]} {w[1]} vs {r[0]} {r[1]}" for w, r in zip(want, rows) if w != r),
                      f"{len(rows)} rows for {len(want)} checks")
        problems.append(f"its checks table is not report.json's outcomes ({terminal(differ, limit=80)})")
    return problems[:MAX_PROBLEMS], False


def companion_lines(report: Mapping[str, Any], junit: bytes, markdown: bytes,
                    current: str | None = None) -> list[tuple[str, bool, str]]:
    """verify's `companions` line. `current`: this verifier's own release (report.md of a report
    that claims it must be byte-equal to this verifier's rendering)."""
    problems = [f"junit.xml: {p}" for p in junit_problems(report, junit)]
    try:
        md_problems, derived = markdown_problems(report, markdown.decode("utf-8"))
    except UnicodeDecodeError:
        md_problems, derived = ["not UTF-8 text"], False
    if not derived and not md_problems and current is not None and as_map(report.get("suite")).get("version") == current:
        md_problems = [f"it is not this verifier's rendering of report.json, and the report claims this verifier's own "
                       f"release {terminal(current, limit=40)}: a report.md the run wrote is that rendering, byte for byte"]
    problems += [f"report.md: {p}" for p in md_problems]
    if problems:
        return [("companions", False, "; ".join(problems))]
    how = "equals this verifier's rendering of report.json" if derived else \
        "states report.json's vendor, product, tier, release, run window and every check's outcome"
    return [("companions", True, f"junit.xml states report.json's run (every test case, outcome and time); "
                                 f"report.md {how}")]
