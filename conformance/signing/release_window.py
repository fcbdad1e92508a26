"""How long a release may certify once a newer one is out: the SIG's policy, judged on the
verifier's clock (signing/clock.py), never on a date the report records.

Why: which release a run claims is the vendor's to write, and so are `started_at` and
`finished_at`. The `superseded` rule (trust.superseded_problem) refuses a run that *says* it
started after a newer release was published; a run backdated before that day, or a report
relabelled to an older release whose judges were weaker, passes it (issue 43, redteam R3/R4).
What the vendor cannot move is the SIG's own clock. The releases file's `certificates` block (the
SIG's policy, not a release entry; schemas/releases.schema.json) sets

    certificates:
      superseded_grace_days: 14

and a report claiming release X is accepted for a tier only while the verifier's clock is before
the day X's successor (the next entry of the append-only releases file) was published plus that
many days. After it the report still verifies as signatures and evidence, line by line; its
`superseded` line fails, naming the release, its successor, the day and the grace. The newest
release has no successor and always certifies.

A release without a publication date: nothing is inferred from its neighbours. Its own runs get
no lower date bound (the `time` line says so by naming none), and when it is the successor of
the claimed release the window cannot be dated, so the claimed release certifies nothing (the
strict reading: an undated successor is not "not yet published").

A file that sets no `superseded_grace_days` applies no window (an older releases file, a test's).
"""
from __future__ import annotations

from datetime import date, timedelta
from pathlib import Path
from typing import Mapping

from conformance.catalog import releases
from conformance.sanitize import terminal

FIELD = "superseded_grace_days"


def grace_days(releases_file: Path) -> int | None:
    """The SIG's grace after a successor's publication (the file's certificates block, schema-
    validated with the file), or None when the file sets none."""
    block = releases.load_certificates(releases_file) or {}
    value = block.get(FIELD)
    return int(value) if isinstance(value, int) and not isinstance(value, bool) else None


def successor(version: str, listed: Mapping[str, releases.Release]) -> releases.Release | None:
    """The release appended right after `version` (None: it is the newest, or not listed)."""
    versions = list(listed)
    if version not in listed or versions.index(version) + 1 >= len(versions):
        return None
    return listed[versions[versions.index(version) + 1]]


def closes_on(version: str, listed: Mapping[str, releases.Release], grace: int) -> tuple[releases.Release, date | None] | None:
    """(the successor, the first day `version` no longer certifies; None: the successor is undated)
    or None when `version` has no successor."""
    after = successor(version, listed)
    if after is None:
        return None
    published = after.published_date()
    return after, (published + timedelta(days=grace) if published is not None else None)


def window_problem(version: object, listed: Mapping[str, releases.Release], today: date,
                   grace: int | None) -> str | None:
    """Why a report claiming `version` is refused for a tier on the verifier's `today`, or None."""
    if grace is None or not isinstance(version, str) or version not in listed:
        return None     # no policy; an unknown release is the `release` line's
    closing = closes_on(version, listed, grace)
    if closing is None:
        return None
    after, closed = closing
    shown = terminal(repr(version), limit=60)
    if closed is None:
        return (f"release {shown} was superseded by {after.version}, which has no publication date: the SIG "
                f"accepts a superseded release for {grace} day(s) after its successor's publication, and an "
                f"undated one dates no window (nothing is inferred), so {shown} certifies nothing")
    if today >= closed:
        return (f"release {shown} was superseded by {after.version} (published {after.published}); the SIG accepts "
                f"it for {grace} day(s) after that ({FIELD}), up to {closed - timedelta(days=1)}, and the "
                f"verifier's clock reads {today}: re-run on the newest release "
                f"({terminal(list(listed)[-1], limit=60)})")
    return None


def window_note(version: object, listed: Mapping[str, releases.Release], grace: int | None) -> str:
    """The `superseded` line's account of the window when it holds ('' without a policy)."""
    if grace is None or not isinstance(version, str) or version not in listed:
        return ""
    closing = closes_on(version, listed, grace)
    if closing is None:
        return "; it is the newest release, accepted without a window"
    after, closed = closing
    return (f"; superseded by {after.version} (published {after.published}), it is accepted up to "
            f"{closed - timedelta(days=1) if closed else '?'} on the verifier's clock ({grace} day(s) of grace)")
