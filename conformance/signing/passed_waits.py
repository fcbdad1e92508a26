"""What a pass's waits record, whoever owns them (held-out round 25: N25_10, N25_11, N25_12).

conformance.timing.owned holds each wait to its owner's rules: a plugin wait in a pass within its
grant, a wait on Ray's machinery granted no more than its stretched bound. Three things a pass's
record cannot say were left unread:

* a wait of any owner that took longer than it was granted, or ran out (`ran out`, `host`; an
  `error` is Ray raising what a check may expect): a wait on Ray that ran out is the host's
  ("not judged: host", conformance.run.machinery), so never a pass, and a plugin's is a failure;
  Ray's waits were never compared with their time (N25_10: DP-008's wait on its tasks recorded
  10x its grant, verdict met);
* a plugin wait without its time (`took_s` null): the scenario's wait ended or it did not (N25_12);
  only a wait on Ray that is not expected to end (TL-013/014's group Ray may place) records none;
* fewer waits listed than counted while the list is not at its cap (owned.MAX_RECORDED, the first
  40 of a wave): a wait was dropped from the record (N25_11: FR-001's only plugin wait).

Pure: one check's metrics.waits in, problem lines out (the caller applies them to a pass;
conformance.timing.owned already names a plugin wait that ran out or past its grant).
"""
from __future__ import annotations

import math

from conformance.catalog.strict_input import as_list, as_map
from conformance.sanitize import terminal
from conformance.timing.owned import MAX_RECORDED

SLACK_S = 0.002   # knob: a wait records its seconds to 1 ms (conformance.timing.owned), no threshold


def _number(value: object) -> float | None:
    if isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value):
        return float(value)
    return None


def passed_wait_problems(waits: object) -> list[str]:
    """What a passed check's recorded waits contradict ([] for none recorded; owned.wait_problems
    names a malformed record)."""
    record = as_map(waits)
    each = record.get("each")
    if not isinstance(each, list):
        return []
    problems: list[str] = []
    for raw in as_list(each):
        w = as_map(raw)
        what = terminal(str(w.get("what")), limit=60)
        took, granted = _number(w.get("took_s")), _number(w.get("granted_s"))
        if w.get("owner") == "plugin" and w.get("verdict") == "ran out":
            continue   # owned.wait_problems names it
        if w.get("verdict") in ("ran out", "host"):   # "error": Ray raised what a check may expect
            problems.append(f"its wait {what!r} ({terminal(str(w.get('owner')), limit=10)}) ended "
                            f"{terminal(str(w.get('verdict')), limit=12)!r}: nothing came within its grant")
        elif w.get("owner") != "plugin" and took is not None and granted is not None and took > granted + SLACK_S:
            problems.append(f"its wait {what!r} ({terminal(str(w.get('owner')), limit=10)}) took {took:g} s of the "
                            f"{granted:g} s it was granted")
        elif w.get("owner") == "plugin" and took is None:
            problems.append(f"the plugin's wait {what!r} records no took_s: a scenario the check waited on ended "
                            "in a measured time or it did not pass")
    count = record.get("count")
    if isinstance(count, int) and not isinstance(count, bool) and count > len(each) and len(each) < MAX_RECORDED:
        problems.append(f"metrics.waits counts {count} waits but lists {len(each)}, below the {MAX_RECORDED} it keeps "
                        "in full: a wait was dropped from the record")
    return problems[:3]
