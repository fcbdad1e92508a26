"""TR-006 under `run --nodes all`: the wave of endpoint pairs that makes every node an endpoint
(issue 48 item 2) is judged beside the check's own pair.

The check moves its five cases between one pair of nodes (transfers_between_nodes judges them);
under `all` it also records, per device type, `pair_wave`: the pairs (short ids) of one wave in
which every node is an endpoint (conformance.run.nodes.ring_pairs), how many moved one buffer, and
which arrived other than sent. `with_pair_wave` wraps the check's judge: a record with a wave
fails when it names no pair, a pair is not two nodes, the wave has more than ceil(N/2) pairs over
its N nodes, the count moved is not the pairs', or a pair's buffer arrived wrong, naming the
pairs. Whether the wave covered every node of the run's own node list is verify's `nodes` line
(conformance.catalog.node_sample): a judge does not see that list. A record without a wave (the
default run, an older release) is judged as before.

Pure: no Ray, no I/O.
"""
from __future__ import annotations

import functools
from typing import Any, Callable, Mapping

from conformance.areas.transport.judges.common import Refused, count_of, per_type
from conformance.report.judges import FAIL, PASS, MissingEvidence, Verdict

WAVE = "pair_wave"
Judge = Callable[[Mapping[str, Any], Mapping[str, Any], Mapping[str, Any]], Verdict]


def _pairs(record: Mapping[str, Any], where: str) -> list[tuple[str, str]]:
    pairs = record.get("pairs")
    if not isinstance(pairs, list) or not all(isinstance(p, list) and len(p) == 2 and all(isinstance(x, str) for x in p)
                                              for p in pairs):
        raise MissingEvidence(f"{where}.pairs is missing or not a list of node pairs")
    return [(str(p[0]), str(p[1])) for p in pairs]


def wave_problems(d: str, wave: Any) -> list[str]:
    """What is wrong with one device type's pair wave ([] when it moved intact between real pairs)."""
    where = f"{WAVE} on {d}"
    if not isinstance(wave, Mapping):
        raise MissingEvidence(f"{where} is not an object")
    pairs = _pairs(wave, where)
    problems = []
    if not pairs:
        problems.append(f"{where} names no pair")
    same = [p for p in pairs if p[0] == p[1]]
    if same:
        problems.append(f"{where}: pair(s) {same[:4]} are one node, not two")
    nodes = {n for p in pairs for n in p}
    if len(pairs) > (len(nodes) + 1) // 2:
        problems.append(f"{where}: {len(pairs)} pairs over {len(nodes)} node(s); one wave has ceil(N/2)")
    moved, wrong = count_of(wave, "moved"), count_of(wave, "wrong")
    if moved != len(pairs):
        problems.append(f"{where}: moved is {moved}, the wave has {len(pairs)} pair(s)")
    if wrong:
        problems.append(f"{where}: {wrong} of {len(pairs)} pair(s) moved the buffer wrong: {wave.get('failures')}")
    return problems


def with_pair_wave(judge: Judge) -> Judge:
    """The check's judge, then every device type's pair wave (when recorded)."""
    @functools.wraps(judge)
    def judged(m: Mapping[str, Any], p: Mapping[str, Any], manifest: Mapping[str, Any]) -> Verdict:
        verdict = judge(m, p, manifest)
        if verdict.outcome != PASS:
            return verdict
        waves = {d: r[WAVE] for d, r in per_type(m, manifest).items() if WAVE in r}
        if not waves:
            return verdict
        try:
            problems = [x for d, w in sorted(waves.items()) for x in wave_problems(d, w)]
        except Refused as exc:
            problems = [str(exc)]
        if problems:
            return Verdict(FAIL, "; ".join(problems))
        pairs = sum(len(_pairs(w, WAVE)) for w in waves.values())
        return Verdict(PASS, f"{verdict.reason}; a wave of {pairs} node pair(s) every node is in, intact")
    return judged
