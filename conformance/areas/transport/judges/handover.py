"""The usage checks' give-backs to the run's warm pool, judged from their records (TR-015..TR-020).

A usage scenario borrows peers from the warm pool (conformance.rdt.warm) and gives them back at
its end (conformance/areas/transport/handover.py): each give-back's record says how many actors
went back to the pool (`returned`), how many were stopped (`stopped`) and why (`why_stopped`, a
closed vocabulary: warm.STOP_REASONS), what the plugin left in them (`leaks`, its finding) and how
long the give-back took against its bound. `metrics.warm_pool` tallies the actors the scenario got
from the pool (`lent`) and those born for it (`born`).

From the release that declares `handover_bound_s` for the check (held-out round 38), the records
are required and reconciled: every actor the tally names went back or was stopped, exactly once;
each give-back's bound is the release's and its time within it; a reason to stop is one the pool
writes. Releases before declare no such param; their reports are held only to their leaks and to a
record beside a non-zero tally, as they were judged when published. Pure.
"""
from __future__ import annotations

import re
from typing import Any, Mapping

from conformance.areas.transport.judges.common import Refused
from conformance.rdt.config import COLLECTIVE_TRANSPORTS
from conformance.rdt.warm import STOP_REASONS
from conformance.report.judges import MissingEvidence

BOUND_ROUNDING_S = 0.001   # knob: bound_s is recorded as written (27.1): equal to the release's within a rounding
TOOK_SLACK_S = 0.5         # knob: the clock read around the give-back's last step (its guards sum to the bound)


def _count(where: Mapping[str, Any], name: str, what: str) -> int:
    value = where.get(name)
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise MissingEvidence(f"{what}.{name} is missing or not a count")
    return value


def _strings(where: Mapping[str, Any], name: str, what: str) -> list[str]:
    value = where.get(name, [])
    if not isinstance(value, list) or not all(isinstance(x, str) for x in value):
        raise MissingEvidence(f"{what}.{name} is not a list of strings")
    return value


def pooled_transport(manifest: Mapping[str, Any]) -> bool:
    """Whether the warm pool lends the usage checks' peers for the manifest's transport: not for a
    built-in one that forms a collective group (GLOO, NCCL: an actor joins one group per backend,
    so UsageCtx starts its actors for each check; conformance.rdt.config.TransportConfig
    .collective_backend). Read from the manifest, never from the evidence."""
    transport = manifest.get("transport") if isinstance(manifest, Mapping) else None
    if not isinstance(transport, Mapping):
        return True
    name = str(transport.get("name") or "").upper()
    return not (transport.get("manager") is None and name in COLLECTIVE_TRANSPORTS)


def handover_record(d: str, record: object, warm_pool: object = None, bound_s: float | None = None,
                    pooled: bool = True) -> None:
    """One type's give-backs (metrics.<type>.handover) against its tally (metrics.<type>.warm_pool).
    `bound_s`: the release's handover_bound_s (None: a release before it, judged as then); `pooled`:
    the pool lends this transport's peers (pooled_transport), so every scenario borrowed some."""
    if bound_s is None or (not pooled and warm_pool is None):
        _as_published(d, record, warm_pool)
        return
    if not isinstance(warm_pool, Mapping):
        raise MissingEvidence(f"metric warm_pool (on {d}) is missing: the release requires the tally of the actors "
                              "lent and born for the scenario")
    total = _count(warm_pool, "lent", f"warm_pool (on {d})") + _count(warm_pool, "born", f"warm_pool (on {d})")
    if total == 0 and pooled:   # held-out round 38, N38_04: the tally zeroed beside a dropped record
        raise Refused(f"on {d}: metrics.warm_pool records no actor lent or born, but every usage scenario of a "
                      "transport the warm pool serves borrows its peers there")
    if record is None and total == 0:
        return
    if not isinstance(record, list) or not record or not all(isinstance(h, Mapping) for h in record):
        raise MissingEvidence(f"metric handover (on {d}) is missing or not a list of give-back records although "
                              f"metrics.warm_pool records {total} actor(s) lent or born for the scenario")
    accounted = 0
    for h in record:
        what = f"handover (on {d})"
        leaks = _strings(h, "leaks", what)
        if leaks:
            raise Refused(f"on {d}: the actors it gave back to the warm pool held what it left: {'; '.join(leaks)[:400]}")
        returned, stopped = _count(h, "returned", what), _count(h, "stopped", what)
        unknown = [w for w in _strings(h, "why_stopped", what) if not any(re.fullmatch(p, w) for p in STOP_REASONS)]
        if unknown:
            raise Refused(f"on {d}: a give-back stopped actors for {unknown[0][:200]!r}, which is no reason the warm "
                          "pool stops an actor for (conformance.rdt.warm.STOP_REASONS); what an actor held is a leak")
        took, bound = h.get("took_s"), h.get("bound_s")
        if isinstance(took, bool) or not isinstance(took, (int, float)) or isinstance(bound, bool) \
                or not isinstance(bound, (int, float)):
            raise MissingEvidence(f"{what}.took_s or bound_s is missing or not a number")
        if abs(bound - bound_s) > BOUND_ROUNDING_S:
            raise Refused(f"on {d}: a give-back was bounded by {bound:g}s; the release bounds it at {bound_s:g}s "
                          "(handover_bound_s)")
        if not 0 <= took <= bound_s + TOOK_SLACK_S:
            raise Refused(f"on {d}: a give-back took {took:g}s, past its bound {bound_s:g}s (handover_bound_s)")
        accounted += returned + stopped
    if accounted != total:
        raise Refused(f"on {d}: its give-backs account for {accounted} actor(s) (returned and stopped); "
                      f"metrics.warm_pool records {total} lent or born for the scenario")


def _as_published(d: str, record: object, warm_pool: object) -> None:
    """Releases before handover_bound_s: a leak fails, a tally without a record is missing evidence."""
    if record is None:
        if isinstance(warm_pool, Mapping) and any(warm_pool.get(k) for k in ("lent", "born")):
            raise MissingEvidence(f"metric handover (on {d}) is missing although metrics.warm_pool records actors "
                                  "lent or born for the scenario")
        return
    if not isinstance(record, list) or not all(isinstance(h, Mapping) for h in record):
        raise MissingEvidence(f"metric handover (on {d}) is not a list of give-back records")
    leaks = [str(leak) for h in record for leak in (h.get("leaks") or [])]
    if leaks:
        raise Refused(f"on {d}: the actors it gave back to the warm pool held what it left: {'; '.join(leaks)[:400]}")
