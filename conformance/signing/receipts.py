"""When the SIG received each submission: its own signed decisions, never the vendor's dates.

Why (redteam RV1): the register orders a product's reports by `finished_at`, which the vendor
writes. A vendor whose new report would demote its product can date it before the report the SIG
already holds, and the register then reads it as the older one: the product keeps its tier and no
row says why. The SIG has a clock of its own: each decision it signs (signing/decision.py;
`review --decision-key K --decisions DIR` writes one per submission the first time it reviews it,
and keeps it after) records `timeVerified`, under the SIG's signature, over the report.json digest.
That is the SIG's receipt of that exact report.

`read` collects them: report.json sha256 -> the earliest decision the SIG's key signed on it (a
file that is not such a decision is left out; a decision of another report says nothing about this
one). `review` then

* re-verifies a received report on the day it was received (the release window of
  signing/release_window.py is judged on the SIG's clock at receipt, not on today's);
* orders a product's history as the SIG received it (register.history: received reports first, by
  receipt; a report never decided on is received by this review, after them);
* marks a report that claims to have finished before another report of the same vendor and
  product that the SIG received earlier: `RE-DATED? finished before NAME` in the same-product
  column, and a note naming both dates.

Without decisions nothing is received and review orders by `finished_at`, as before: the first
review with `--decision-key` starts the record.
"""
from __future__ import annotations

from dataclasses import dataclass
from datetime import date, datetime
from pathlib import Path
from typing import Mapping, Sequence

from conformance.catalog.strict_input import utc_datetime
from conformance.errors import UserError
from conformance.signing import decision, register
from conformance.signing.canonical import loads_strict
from conformance.signing.keyring import TrustedKey
from conformance.signing.review_row import Row

# decisions read from one folder at most (a SIG's folder holds one per submission ever reviewed)
MAX_DECISIONS = 10_000


@dataclass(frozen=True)
class Receipt:
    """The SIG's earliest signed decision on one report.json."""

    at: datetime        # its timeVerified (UTC)
    decision: str       # the decision file's name


def _time_verified(path: Path) -> datetime | None:
    try:
        statement = loads_strict(decision.read(path).body.decode("utf-8"))
        return utc_datetime(str(statement["predicate"]["timeVerified"]))
    except (UserError, UnicodeDecodeError, ValueError, KeyError, TypeError):
        return None


def read(folder: Path, sig_keys: Sequence[TrustedKey]) -> dict[str, Receipt]:
    """report.json sha256 -> the SIG's earliest decision on it, from the decisions in `folder`
    that the SIG's key signed (a missing folder holds none: nothing received yet)."""
    folder = Path(folder)
    if not folder.exists():
        return {}
    if not folder.is_dir():
        raise UserError(f"review: {folder} is not a directory of the SIG's decisions", field="--decisions")
    out: dict[str, Receipt] = {}
    paths = sorted(p for p in folder.iterdir() if p.name.endswith(decision.DECISION_NAME) and p.is_file()
                   and not p.is_symlink())
    for path in paths[:MAX_DECISIONS]:
        try:
            checked = decision.check(path, sig_keys, today=date.min, expiring_within_days=0)
        except UserError:
            continue     # not a decision at all
        sha = checked.fields.get("reportSha256")   # set only when the SIG's key signed a decision of ours
        at = _time_verified(path) if isinstance(sha, str) else None
        if isinstance(sha, str) and at is not None and (sha not in out or at < out[sha].at):
            out[sha] = Receipt(at, path.name)
    return out


def received(row: Row, receipts: Mapping[str, Receipt]) -> Receipt | None:
    """The SIG's receipt of the row's report.json, if it decided on it before."""
    return receipts.get(row.report_sha256 or "")


def mark_redated(rows: Sequence[Row]) -> None:
    """Mark each row whose finished_at is before that of a row of its product the SIG received
    earlier (a row without a receipt was received by this review: after every received one)."""
    for product in register.group(rows):
        for row in product:
            for earlier in product:
                if earlier is row or not _received_before(earlier, row):
                    continue
                mine, theirs = _finished(row), _finished(earlier)
                if mine is None or theirs is None or mine >= theirs:
                    continue
                row.redated_before.append(earlier.submission)
                row.notes.append(f"re-dated? finished_at {row.finished_at} is before {earlier.finished_at} of "
                                 f"submission {earlier.submission}, which the SIG received earlier "
                                 f"({earlier.received}); the register orders them as the SIG received them")


def _received_before(a: Row, b: Row) -> bool:
    if a.received is None:
        return False
    return b.received is None or a.received < b.received


def _finished(row: Row) -> datetime | None:
    try:
        return utc_datetime(row.finished_at)
    except (ValueError, TypeError):
        return None
