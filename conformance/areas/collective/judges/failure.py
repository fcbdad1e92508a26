"""CC-009: a member killed mid-op, every survivor's error in time.
"""
from __future__ import annotations

from typing import Any, Mapping

from conformance.areas.collective.judges.common import (
    _WAIT_SLACK_S,
    JUDGES,
)
from conformance.collective.config import POOL_SIZE
from conformance.report.judges import FAIL, PASS, MissingEvidence, Verdict, number, param_value


@JUDGES.rule(needs=("error_s",), params=("error_bound_s",), decides_all=False)
def survivors_errored_in_time(m: Mapping[str, Any], p: Mapping[str, Any], manifest: Mapping[str, Any]) -> Verdict:
    """Every survivor got its error within error_bound_s of the member's death: one time per
    survivor, and the survivors are the check's (POOL_SIZE members, the last one killed: ranks
    0..POOL_SIZE-2, in every release), whatever count the record carries (`survivors`, recorded
    since, must say the same): a survivor dropped from the record, with its count or not, is a
    hang left out, never a survivor that was not there."""
    from conformance.collective.config import POOL_SIZE

    seconds, bound = m.get("error_s"), param_value(p, "error_bound_s")
    if not isinstance(seconds, Mapping) or not seconds:
        raise MissingEvidence("metric error_s is missing or empty (no survivor got an error)")
    late = {str(r): number({"v": s}, "v") for r, s in seconds.items()}
    ranks = [str(r) for r in range(POOL_SIZE - 1)]   # the killed member is the pool's last
    if "survivors" in m and number(m, "survivors") != len(ranks):
        return Verdict(FAIL, f"records {m['survivors']!r} survivor(s); the check kills one of its {POOL_SIZE} "
                             f"members, leaving {len(ranks)}")
    if sorted(late) != ranks:
        return Verdict(FAIL, f"error_s records survivor rank(s) {sorted(late)} of {ranks}: the others got no "
                             "error within the bound (a hang)")
    late = {r: s for r, s in late.items() if s > bound + _WAIT_SLACK_S}
    if late:
        return Verdict(FAIL, f"survivor(s) {late} waited past the {bound:g} s bound for their error (a hang)")
    return Verdict(PASS, f"{len(seconds)} survivor(s) got their error within {bound:g} s")


# What each survivor's call ended in (CC-009's metric `outcomes`, the check's own words): the
# contract's is an error; the others name what a survivor saw instead.
SURVIVOR_ERROR = "error"
SURVIVOR_RETURNED = "returned as if the op had succeeded"
SURVIVOR_HUNG = "no answer within error_bound_s (a hang)"


# needs: the one the report schema requires of CC-009's pass (schemas/report.schema.json, every
# release's); `outcomes` and `survivors` are read below (missing: no pass either)
@JUDGES.rule(needs=("error_s",), params=("error_bound_s",), decides_all=False)
def every_survivor_errored_in_time(m: Mapping[str, Any], p: Mapping[str, Any], manifest: Mapping[str, Any]) -> Verdict:
    """CC-009 from the release after 0.1.0+data.18 on: survivors_errored_in_time's rules (one time
    per survivor, each within error_bound_s, the survivors the check's), and every survivor's
    recorded outcome (`outcomes`, rank -> what its call ended in) the contract's, an error: a call
    that returned as if the op had succeeded is a fail whatever its time, and an outcome missing
    for a survivor is a survivor whose end the record does not show. (Earlier releases' reports
    recorded the times alone; their checklists name survivors_errored_in_time, kept as it was.)"""
    number(m, "survivors")   # the count the check records beside error_s, held to the check's by survivors_errored_in_time
    outcomes = m.get("outcomes")
    if not isinstance(outcomes, Mapping):
        raise MissingEvidence("metric outcomes (what each survivor's call ended in) is missing or not a record")
    ranks = [str(r) for r in range(POOL_SIZE - 1)]
    ended = {str(r): o for r, o in outcomes.items()}
    if sorted(ended) != ranks:
        return Verdict(FAIL, f"outcomes records survivor rank(s) {sorted(ended)} of {ranks}: a survivor's end is not "
                             "recorded")
    wrong = {r: o for r, o in sorted(ended.items()) if o != SURVIVOR_ERROR}
    if wrong:
        return Verdict(FAIL, "; ".join(f"survivor rank {r} {o if isinstance(o, str) else repr(o)}" for r, o in wrong.items())
                       + f" (the contract: every survivor's call ends in an error within {param_value(p, 'error_bound_s'):g} s)")
    timed = survivors_errored_in_time(m, p, manifest)
    if timed.outcome != PASS:
        return timed
    return Verdict(PASS, f"every survivor's call ended in an error within {param_value(p, 'error_bound_s'):g} s")
