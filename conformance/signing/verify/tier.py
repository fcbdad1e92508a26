"""The tier, recomputed from the per-check results with the release's data, never read from the
claim; the claimed capability profiles; and the checklist the report must hold all of."""
from __future__ import annotations

from collections import Counter
from typing import Any, Mapping, Sequence

from conformance.catalog import capabilities, data
from conformance.catalog.ladder import compute_tiers, required_checks
from conformance.report.view import TierDetail
from conformance.sanitize import terminal
from conformance.signing import trust
from conformance.signing.soak_flag import provisional_problems
from conformance.signing.verify.case import Judged
from conformance.signing.verify.lines import Verification, tier_name
from conformance.signing.verify.waivers import effective_checks, finished_date


def _norm_tiers(detail: Sequence[TierDetail], with_required: bool) -> list[dict[str, Any]]:
    """The structured part of per-tier detail (free-text details and reasons are not compared)."""
    out = []
    for t in detail:
        row: dict[str, Any] = {"name": t.name, "achieved": t.achieved, "below": t.below,
                               "blocking": sorted((b.id, b.outcome) for b in t.blocking),
                               "conditions": [(c.kind, c.met) for c in t.conditions]}
        if with_required:
            row["required_checks"] = sorted(t.required_checks or [])
        out.append(row)
    return out


def first_tier_difference(claimed: Sequence[TierDetail], actual: Sequence[TierDetail]) -> str | None:
    """The first structured difference between the claimed per-tier detail and the recomputed one."""
    with_required = all(t.required_checks is not None for t in claimed)
    a, b = _norm_tiers(claimed, with_required), _norm_tiers(actual, with_required)
    if [t["name"] for t in a] != [t["name"] for t in b]:
        return f"claimed tiers {[t['name'] for t in a]}, the release's ladder has {[t['name'] for t in b]}"
    for ct, rt in zip(a, b):
        for key in rt:
            if ct[key] != rt[key]:
                return f"tiers[{ct['name']}].{key}: claimed {ct[key]}, recomputed {rt[key]}"
    return None


def why_not(detail: Sequence[Mapping[str, Any]]) -> str:
    """Why the lowest unachieved tier failed: its blocking checks and unmet conditions."""
    for t in detail:
        if t["achieved"]:
            continue
        reasons = [f"{b['id']} {b['outcome']}" for b in t["blocking"]][:5]
        reasons += [c["detail"] for c in t["conditions"] if not c["met"]]
        if t["below"]:
            reasons.append(f"tier below ({t['below']}) not achieved")
        return f"; {t['name']}: {', '.join(reasons)}"
    return ""


def vendor_word(detail: Sequence[Mapping[str, Any]], checklist: data.Checklist) -> tuple[list[str], list[str]]:
    """(the checks the achieved tiers require, those of them resting on the vendor's word: no judge
    of the release recomputes them, conformance/report/judges.py)."""
    from conformance.report.judges import judge_for

    required = list(dict.fromkeys(c for t in detail if t.get("achieved") for c in t.get("required_checks") or []))
    released = checklist.by_id()
    return required, sorted(c for c in required if c in released and judge_for(released[c]) is None)


def on_vendor_word(required: Sequence[str], word: Sequence[str]) -> str:
    """The tier line's account of what its required checks rest on."""
    if not required:
        return ""
    if not word:
        return f"; every one of its {len(required)} required checks is recomputed from evidence"
    return (f"; {len(word)} of its {len(required)} required checks rest on the vendor's word: "
            f"{', '.join(word[:12])}{' ...' if len(word) > 12 else ''}")


def refuses_vendor_word(case: Judged) -> bool:
    """The SIG's policy (the releases file's certificates.vendor_word): a tier resting on the
    vendor's word is refused."""
    from conformance.catalog import releases

    block = releases.load_certificates(case.releases_file) or {}
    return block.get("vendor_word") == "refuse"


def _release_data(v: Verification, case: Judged, name: str, cannot: str) -> tuple[data.Checklist, data.Ladder] | None:
    """The release's checklist and ladder, or None after a FAIL line `name` saying why not."""
    release_data, why = case.release_data
    if release_data is None:
        v.add(name, False, f"{cannot}: {why or 'unknown release'}")
    return release_data


def tier_recomputes_from_the_results(v: Verification, case: Judged) -> None:
    """`tier`: compute_tiers over the results (waivers as the release lists them) equals the
    claimed tier and per-tier detail; then `capabilities`, recomputed with the release's profiles."""
    known, _ = case.waivers
    release_data = _release_data(v, case, "tier", "cannot recompute")
    if release_data is None:
        return
    checklist, ladder = release_data
    report = case.report
    checks = effective_checks([c.document for c in report.checks], known or [], finished_date(report))
    recomputed, detail = compute_tiers(checks, checklist, ladder, trust.tier_context(report.document,
                                                                                    case.inputs.domain_keys))
    v.recomputed_tier, v.tier_known = recomputed, True
    if report.tier != recomputed:
        v.add("tier", False, f"claims {tier_name(report.tier)} but the per-check results give {tier_name(recomputed)}"
                             f"{why_not(detail)}")
        return
    diff = first_tier_difference(report.tiers, [TierDetail.from_json(t) for t in detail])
    if diff:
        v.add("tier", False, f"tier {tier_name(report.tier)} matches, but the per-tier detail does not: {diff}")
        return
    required, word = vendor_word(detail, checklist)
    if word and refuses_vendor_word(case):
        v.add("tier", False, f"recomputed {tier_name(recomputed)} equals the claim, but {len(word)} of its "
                             f"{len(required)} required checks rest on the vendor's word (release "
                             f"{terminal(str(report.suite.version), limit=40)} has no judge for them: "
                             f"{', '.join(word[:8])}{' ...' if len(word) > 8 else ''}); the SIG certifies only "
                             "what it recomputes (certificates.vendor_word: refuse): re-run on a release that judges them")
        return
    v.add("tier", True, f"recomputed {tier_name(recomputed)} equals the claim; per-tier detail matches "
                        f"({len(detail)} tiers){on_vendor_word(required, word)}")
    capabilities_recompute(v, case, checklist)


def capabilities_recompute(v: Verification, case: Judged, checklist: data.Checklist) -> None:
    """`capabilities`: the claimed profiles, recomputed with the release's profiles file."""
    inputs = case.inputs
    if inputs.profiles is None:
        v.add("capabilities", False, "cannot recompute: the release's tiers/capabilities.yaml is not available")
        return
    document = case.report.document
    v.add("capabilities", *capabilities.verify_claim(document, checklist, inputs.profiles_for(document) or []))


def checklist_is_complete(v: Verification, case: Judged) -> None:
    """`completeness`: exactly the release's active checks are present, including all the claimed
    tier needs, each with the release's title, area and level."""
    release_data = _release_data(v, case, "completeness", "cannot check")
    if release_data is None:
        return
    checklist, ladder = release_data
    report = case.report
    ids = [c.id for c in report.checks]
    expected = [c.id for c in checklist.active()]
    problems = []
    dups = sorted(i for i, n in Counter(ids).items() if n > 1)
    if dups:
        problems.append(f"duplicate ids {', '.join(dups)}")
    missing = [i for i in expected if i not in set(ids)]
    unknown = sorted(set(ids) - set(expected))
    claimed = report.tier
    if claimed in ladder.names():
        needed: list[str] = []
        for tier in ladder.tiers[: ladder.names().index(claimed) + 1]:
            needed += required_checks(tier, checklist)
        lacking = [i for i in dict.fromkeys(needed) if i not in set(ids)]
        if lacking:
            problems.append(f"tier {claimed!r} needs {', '.join(lacking)}, absent from the report")
    elif claimed is not None:
        problems.append(f"claimed tier {claimed!r} is not in the release's ladder")
    if missing:
        problems.append(f"missing {len(missing)} check(s): {', '.join(missing[:10])}{' …' if len(missing) > 10 else ''}")
    if unknown:
        problems.append(f"checks not in the release checklist: {', '.join(unknown[:10])}")
    if len(ids) != len(expected) and not (missing or unknown or dups):
        problems.append(f"{len(ids)} checks, the release has {len(expected)}")
    released = checklist.by_id()
    differing = [f"{c.id}.{key}" for c in report.checks if c.id in released
                 for key in ("title", "area", "level") if getattr(c, key) != getattr(released[c.id], key)]
    if differing:
        problems.append(f"title/area/level differ from the release's checklist: "
                        f"{terminal(', '.join(differing[:8]), limit=300)}{' …' if len(differing) > 8 else ''}")
    problems += provisional_problems([c.document for c in case.report.checks], checklist)
    v.judge("completeness", problems, f"all {len(expected)} checks of the release are present")
