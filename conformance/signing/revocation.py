"""Revocation as of a date: does a signature by a revoked key still count for this report?

A key revoked `from` a date (keyring `revoked`) keeps the reports signed before that date valid
and refuses the later ones, so rotating a key no longer un-verifies every old report. The hard
part is "signed before": DSSE carries no time, and every time inside a report (`finished_at`)
is written by whoever holds the key, so a thief can backdate it. What the SIG can rely on:

* its own record: `revoked.reports` lists the report.json digests it received before `from`
  (submission PRs merged before that day). When the list is given, exactly those stay valid:
  nothing the signer writes can add one. This is the anchor to use after a compromise.
* otherwise, bounds that only narrow the signer's claim: a report cannot have been made before
  the suite release it names was published (the releases file is the SIG's), so a release
  published on or after `from` proves the report was signed after the revocation; and a
  `finished_at` on or after `from` is the signer's own admission. A report that passes both is
  accepted on the signer's word about its date; that is enough for a rotation (the old key was
  never in other hands) and not for a compromise (list the reports instead).
"""
from __future__ import annotations

from datetime import date
from typing import Any, Mapping

from conformance.catalog.strict_input import utc_datetime
from conformance.signing.keyring import TrustedKey


def _finished(report: Mapping[str, Any]) -> date | None:
    value = report.get("finished_at")
    if not isinstance(value, str):
        return None
    try:
        return utc_datetime(value).date()
    except ValueError:
        return None


def judge(key: TrustedKey, report: Mapping[str, Any], report_sha256: str,
          release_version: str | None, release_published: date | None) -> tuple[bool, str]:
    """(counts, why) for a signature by `key` over `report` (whose report.json has `report_sha256`)."""
    revoked = key.revoked
    if revoked is None:
        return True, f"key {key.name} is not revoked"
    since, what = revoked.since, f"key {key.name} is revoked from {revoked.since} ({revoked.reason})"
    if revoked.reports is not None:
        if report_sha256 in revoked.reports:
            return True, (f"{what}; this report.json is one of the {len(revoked.reports)} report(s) the keyring "
                          f"keeps (recorded by the SIG before the revocation)")
        return False, (f"{what}; this report.json (sha256 {report_sha256[:16]}…) is not one of the "
                       f"{len(revoked.reports)} report(s) the keyring keeps")
    if release_published is not None and release_published >= since:
        return False, (f"{what}; the report names release {release_version}, published {release_published}, "
                       f"so it was signed after the revocation")
    finished = _finished(report)
    if finished is None:
        return False, f"{what}; the report's finished_at is not a date-time, so nothing dates it before the revocation"
    if finished >= since:
        return False, f"{what}; the report finished {finished}, on or after that day"
    return True, (f"{what}; the report finished {finished}, before that day (finished_at is the signer's claim; "
                  f"its release was published {release_published or 'on an unknown date'})")
