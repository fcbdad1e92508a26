"""The transport area's judges: each check's recorded evidence + the release's params -> its outcome.

The checklist names a check's judge (`judge: <function name>`); the live check decides with it
(CheckContext.decide) and `verify` decides again with it (conformance/report/judges.py says the
rules every judge keeps). Pure: no Ray, no clock, no I/O.
"""
from __future__ import annotations

import statistics
from typing import Any, Mapping

from conformance.report.judges import FAIL, PASS, JudgeTable, MissingEvidence, Verdict, agrees, number, param_value

JUDGES = JudgeTable()


@JUDGES.rule(needs=("growth_per_round_bytes", "payload_bytes", "transfers_per_round"),
           params=("max_growth_fraction_of_round",), decides_all=False,
           counts=(("transfers_per_round", "transfers_per_round"), ("rounds", "rounds")))
def memory_growth_per_round(m: Mapping[str, Any], p: Mapping[str, Any], manifest: Mapping[str, Any]) -> Verdict:
    size, per_round = number(m, "payload_bytes"), number(m, "transfers_per_round")
    budget = param_value(p, "max_growth_fraction_of_round") * size * per_round
    growth = m.get("growth_per_round_bytes")
    if not isinstance(growth, Mapping) or not growth:
        raise MissingEvidence("metric growth_per_round_bytes is missing or empty")
    leaking = {}
    for probe, values in sorted(growth.items()):
        if not isinstance(values, list) or not values:
            raise MissingEvidence(f"metric growth_per_round_bytes.{probe} is not a non-empty list")
        if len(values) != number(m, "rounds"):
            return Verdict(FAIL, f"growth_per_round_bytes.{probe} records {len(values)} round(s), rounds says {m['rounds']}")
        nums = [number({"v": v}, "v") for v in values]
        med = statistics.median(nums)
        # a leak repeats every round and never gives memory back: a round that only held its
        # buffers a moment longer (a busy host) gains once and loses it in the next round
        if med > budget and sum(nums) / len(nums) > budget:
            leaking[probe] = f"{med / 2**20:.1f} MiB of {[round(n / 2**20, 1) for n in nums]}"
    if leaking:
        return Verdict(FAIL, f"memory grows by {leaking} (median per round, and on average) while each round moves and frees "
                             f"{per_round:g} x {size / 2**20:g} MiB; expected <= {budget / 2**20:.1f} MiB: the "
                             "transport keeps buffers after garbage_collect")
    return Verdict(PASS, f"median growth per round within {budget / 2**20:.1f} MiB")


@JUDGES.rule(needs=("actor_has_transport_max_latency_s",), params=("max_answer_s",), decides_all=False)
def transport_query_answers_in_time(m: Mapping[str, Any], p: Mapping[str, Any], manifest: Mapping[str, Any]) -> Verdict:
    slow, bound = number(m, "actor_has_transport_max_latency_s"), param_value(p, "max_answer_s")
    if slow > bound:
        return Verdict(FAIL, f"actor_has_tensor_transport took {slow:.2f}s to answer (bound {bound:g} s); Ray asks "
                             "on every .remote() with the transport")
    return Verdict(PASS, f"answers within {bound:g} s")
