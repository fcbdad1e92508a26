"""Waivers as the release lists them, never as the report copies them; and whether the
certificate still holds (the Ray window, waivers alive at `verify --at`)."""
from __future__ import annotations

from datetime import date
from typing import Any, Mapping, Sequence

from conformance.catalog import data, strict_input
from conformance.catalog.ladder import compute_tiers
from conformance.catalog.strict_input import as_map
from conformance.signing import trust
from conformance.signing.verify.case import Judged
from conformance.signing.verify.lines import Verification, tier_name
from conformance.signing.verify.release_files import release_waivers


def finished_date(finished_at: object) -> date | None:
    """finished_at's UTC date (None when it is not a date-time the code can compute with)."""
    try:
        return strict_input.utc_date(finished_at) if isinstance(finished_at, str) else None
    except ValueError:
        return None


def listed_waiver(check: Mapping[str, Any], known: Sequence[data.Waiver]) -> data.Waiver | None:
    """The release's waiver a check's entry cites (same check, same issue), or None."""
    w = check.get("waiver")
    if not isinstance(w, dict):
        return None
    return next((k for k in known if k.check == check.get("id") == w.get("check") and k.issue == w.get("issue")), None)


def effective_checks(checks: Sequence[Mapping[str, Any]], known: Sequence[data.Waiver],
                     when: date | None) -> list[dict[str, Any]]:
    """The checks with each waiver replaced by the release's: blocks_tier from the released file;
    a waiver that is not listed, or expired at `when`, blocks (never counts toward a tier)."""
    out = []
    for c in checks:
        c = dict(c)
        if c.get("outcome") == "waived":
            listed = listed_waiver(c, known)
            expired = listed is not None and when is not None and when > date.fromisoformat(listed.expires)
            c["waiver"] = {**(as_map(c.get("waiver"))),
                           "blocks_tier": listed is None or expired or listed.blocks_tier}
        out.append(c)
    return out


_COPIED = ("reason", "expires", "blocks_tier")


def copy_problems(check_id: str, copy: Mapping[str, Any], published: Sequence[data.Waiver] | None) -> list[str]:
    """The report's copy of a waiver against the entry the release published (the run copies it
    whole): a page drawn from the report shows the copy, so a copy that says more (a later expiry,
    a milder reason) would mislead its reader while verify judges the release's. Nothing to hold
    it to when this verifier lacks the release's file (the `waivers` line says so already)."""
    listed = next((k for k in published or () if k.check == copy.get("check") and k.issue == copy.get("issue")), None)
    if listed is None:
        return []
    return [f"{check_id}: the report's copy of waiver {listed.issue} says {field} {copy.get(field)!r}, the release "
            f"published {getattr(listed, field)!r}" for field in _COPIED if copy.get(field) != getattr(listed, field)]


def waivers_are_the_releases(v: Verification, case: Judged) -> None:
    """`waivers`: each waived check cites a waiver listed in the release's waivers.yaml, unexpired at finished_at."""
    known, why_unknown = case.waivers
    waived = case.report.waived()
    if not waived:
        v.add("waivers", True, "no waived checks")
        return
    if known is None:
        v.add("waivers", False, f"cannot check: {why_unknown}")
        return
    when = finished_date(case.report.finished_at)
    published, _ = release_waivers(case.release, case.releases_file, None)
    problems = []
    if when is None:
        problems.append(f"finished_at {case.report.finished_at!r} is not a date-time")
    for c in waived:
        w = c.waiver
        if not isinstance(w, dict) or not all(isinstance(w.get(k), str) and w[k] for k in ("check", "issue")) \
                or "expires" not in w:
            problems.append(f"{c.id}: waived without a waiver {{check, issue, expires}}")
            continue
        if w["check"] != c.id:
            problems.append(f"{c.id}: cites a waiver for {w['check']}")
            continue
        listed = next((k for k in known if k.check == w["check"] and k.issue == w["issue"]), None)
        if listed is None:
            problems.append(f"{c.id}: waiver {w['issue']} is not in tiers/waivers.yaml of the release")
            continue
        # The listed expiry is authoritative, not the copy in the report.
        if when is not None and when > date.fromisoformat(listed.expires):
            problems.append(f"{c.id}: waiver {w['issue']} expired {listed.expires}, before finished_at {when}")
        problems += copy_problems(c.id, w, published)
    v.judge("waivers", problems, f"{len(waived)} waived check(s), each listed in the release's tiers/waivers.yaml "
                                f"and unexpired at {when}")


def certificate_still_holds(v: Verification, case: Judged) -> None:
    """`validity`: Ray inside the release's window; with `at`, every waiver still unexpired and the
    tier still held on that date ("recertification required")."""
    release, report, at = case.release, case.report, case.at
    if release is None:
        v.add("validity", False, "cannot check: unknown release")
        return
    known, _ = case.waivers
    release_data, _ = case.release_data
    ray = report.environment.ray
    problems = []
    not_release = trust.ray_version_problem(ray)
    if not_release:
        problems.append(not_release)
    elif not release.certifies_ray(ray):
        problems.append(f"Ray {ray!r} is outside the versions release {release.version} certifies "
                        f"({', '.join(release.ray_versions)})")
    if at is not None:
        waived = report.waived()
        for c in waived:
            listed = listed_waiver(c.document, known or [])
            if listed is not None and at > date.fromisoformat(listed.expires):
                problems.append(f"{c.id}: waiver {listed.issue} expired {listed.expires}")
        if release_data is not None and waived:
            tier, _ = compute_tiers(effective_checks([c.document for c in report.checks], known or [], at),
                                    *release_data, trust.tier_context(report.document, case.inputs.domain_keys))
            if tier != report.tier:
                problems.append(f"as of {at} the results give {tier_name(tier)}, not {tier_name(report.tier)}")
    when = f" as of {at}" if at else ""
    if problems:
        v.add("validity", False, f"recertification required{when}: {'; '.join(problems)}")
    else:
        v.add("validity", True, f"Ray {ray} is within release {release.version}'s window "
                                f"({', '.join(release.ray_versions)}){'; waivers unexpired' + when if at else ''}")
