"""The recovery area's judges: each check's recorded evidence + the release's params -> its outcome.

The checklist names a check's judge (`judge: <function name>`); the live check decides with it
(CheckContext.decide) and `verify` decides again with it (conformance/report/judges.py says the
rules every judge keeps). Pure: no Ray, no clock, no I/O.
"""
from __future__ import annotations

from typing import Any, Mapping

from conformance.report.judges import FAIL, PASS, JudgeTable, MissingEvidence, Verdict, agrees, number, param_value

JUDGES = JudgeTable()


@JUDGES.rule(needs=("restart_s",), params=("restart_cluster_s",), decides_all=False)
def fresh_cluster_in_time(m: Mapping[str, Any], p: Mapping[str, Any], manifest: Mapping[str, Any]) -> Verdict:
    took, bound = number(m, "restart_s"), param_value(p, "restart_cluster_s")
    if took > bound:
        return Verdict(FAIL, f"the fresh cluster took {took:.0f}s to start (bound {bound:g} s)")
    return Verdict(PASS, f"fresh cluster up in {took:.0f}s, within {bound:g} s")


@JUDGES.rule(needs=("round_s",), params=("stress_rounds",), decides_all=False)
def storm_ran_release_rounds(m: Mapping[str, Any], p: Mapping[str, Any], manifest: Mapping[str, Any]) -> Verdict:
    """The restart storm ran the release's number of rounds: one recorded time per round."""
    times, rounds = m.get("round_s"), param_value(p, "stress_rounds")
    if not isinstance(times, list) or not times:
        raise MissingEvidence("metric round_s is missing or not a list")
    for t in times:
        number({"v": t}, "v")
    if len(times) != rounds:
        return Verdict(FAIL, f"round_s records {len(times)} round(s) but the release's params say stress_rounds = {rounds:g}")
    return Verdict(PASS, f"{len(times)} rounds of kills and crashes, as the release asks")
