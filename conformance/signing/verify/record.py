"""What the run recorded, held to itself: facts several fields state agree, the timestamps are
ordered, the signed companions state what report.json states, each judged check's evidence gives
its outcome, and a merged report's shards each verify."""
from __future__ import annotations

from conformance.signing import evidence, trust
from conformance.signing.verify.case import Judged
from conformance.signing.verify.lines import Verification


def facts_agree_across_fields(v: Verification, case: Judged) -> None:
    """`cross-check F`: one line per fact several fields state; a contradiction names both fields."""
    for fact in trust.facts(case.report.document, domain_keys=case.inputs.domain_keys).values():
        if fact.problem:
            v.add(f"cross-check {fact.name}", False, fact.problem)
        elif fact.sources:
            v.add(f"cross-check {fact.name}", True, f"{len(fact.sources)} fields agree: {fact.value!r} "
                                                   f"({', '.join(fact.sources)})")
        else:
            v.add(f"cross-check {fact.name}", True, "no field states it (not observed; no check is ruled out by it)")


def times_are_ordered(v: Verification, case: Judged) -> None:
    """`time`: started_at <= finished_at <= the verifier's clock (and --at), on or after the
    release's publication."""
    published = case.release.published_date() if case.release is not None else None
    problems = trust.time_problems(case.report.document, now=case.now, at=case.at, published=published)
    v.judge("time", problems, f"started_at <= finished_at <= the verifier's clock{' and --at' if case.at else ''}"
                              + (f"; on or after the release's publication ({published})" if published else ""))


def companions_state_what_the_report_states(v: Verification, case: Judged) -> None:
    """`companions`: junit.xml and report.md are signed too: each states exactly what report.json states."""
    from conformance.signing.companions import companion_lines
    from conformance.signing.rendering import renders_release

    raw = case.sealed.files.raw
    derived = renders_release(case.report.suite.version, case.known_releases)
    v.extend(companion_lines(case.report, raw["junit.xml"], raw["report.md"], derived))


def page_is_the_reports_page(v: Verification, case: Judged) -> None:
    """`page`: the folder's report.html, which no signature covers, is this verifier's page of
    report.json (a release it renders), states what report.json states (an older release's page)
    or is absent (conformance/signing/page.py)."""
    from conformance.signing.page import page_lines
    from conformance.signing.rendering import renders_release

    derived = renders_release(case.report.suite.version, case.known_releases)
    v.extend(page_lines(case.sealed.folder, case.report, derived))


def evidence_gives_each_outcome(v: Verification, case: Judged) -> None:
    """`evidence`, `summary`, `selection`: each judged check's outcome is what its judge gives on
    its metrics (signing/evidence.py), the summary counts and the run's selection."""
    release_data, _ = case.release_data
    v.extend(evidence.evidence_lines(case.report, release_data[0] if release_data else None, case.published))


def shards_each_verify(v: Verification, case: Judged) -> None:
    """`shards`: a report `merge` made: its shards travel in shards/<i-of-N>/ and each verifies."""
    from conformance.signing import shards

    if shards.is_merged(case.report.document):
        release_data, _ = case.release_data
        v.extend(shards.shard_lines(case.sealed.folder, case.report.document, case.verify_one, case.published,
                                    release_data))
