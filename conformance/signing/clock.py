"""The verifier's clock: the one time `verify`, `review` and the SIG's decisions judge by.

Every date a report records (`started_at`, `finished_at`) is its signer's to write; the verifier's
clock is the SIG's. It is the machine's UTC clock unless CONFORMANCE_VERIFY_NOW names another
moment (an ISO 8601 date-time with its offset, e.g. 2026-12-07T12:00:00Z): the SIG re-judging a
submission as of the day it received it, and the tests, which must not depend on today's date
(the release window, signing/release_window.py, closes old releases as the clock moves).
"""
from __future__ import annotations

import os
import re
from datetime import datetime, timezone

from conformance.catalog.strict_input import utc_datetime
from conformance.errors import UserError
from conformance.sanitize import terminal

ENV = "CONFORMANCE_VERIFY_NOW"
# A date-time with an explicit offset (Z or +HH:MM): a bare date or a local time would leave the
# day the rules compare open to the reader's time zone.
_WITH_OFFSET = re.compile(r"^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}(:\d{2}(\.\d+)?)?(Z|[+-]\d{2}:\d{2})$")


def verifier_now() -> datetime:
    """The verifier's clock: $CONFORMANCE_VERIFY_NOW when set (a one-line UserError naming the
    variable when it is not a date-time with an offset), else the machine's clock, in UTC."""
    text = os.environ.get(ENV)
    if text is None or text == "":
        return datetime.now(timezone.utc)
    if not _WITH_OFFSET.match(text):
        raise UserError(f"expected an ISO 8601 date-time with its offset, such as 2026-12-07T12:00:00Z; "
                        f"got {terminal(repr(text), limit=60)}", field=ENV)
    try:
        return utc_datetime(text)
    except ValueError as exc:
        raise UserError(f"expected an ISO 8601 date-time with its offset, such as 2026-12-07T12:00:00Z; "
                        f"{terminal(str(exc), limit=120)}", field=ENV) from None
