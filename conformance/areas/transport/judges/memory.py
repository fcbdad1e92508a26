"""The transport's memory and its query (TR-013, TR-014).
"""
from __future__ import annotations

import statistics
from typing import Any, Mapping

from conformance.areas.transport.judges.common import (
    JUDGES,
    Refused,
    declared_devices,
    per_type,
    refusing,
    run_max_bytes,
)
from conformance.rdt.device import is_host
from conformance.report.judges import FAIL, PASS, MissingEvidence, Verdict, number, param_value

# ------------------------------------------------------------------------------ memory (TR-013, TR-014)
MiB = 1 << 20
LEAK_PAYLOAD_MAX = 16 * MiB   # TR-013's payload: a quarter of the run's largest, between 1 MiB and this
HELD_PROBES = ("source.held_bytes", "destination.held_bytes", "node.cluster_shm_bytes")   # read on every type
LEGACY_HELD = {"source.held_bytes": "source.rss_bytes", "destination.held_bytes": "destination.rss_bytes"}


def leak_payload_bytes(m: Mapping[str, Any]) -> int:
    """TR-013's payload (conformance/checks/transport/test_transport_lifecycle): a leak is judged as
    a fraction of a round's payload, so a smaller payload judges a smaller leak."""
    return max(MiB, min(run_max_bytes(m) // 4, LEAK_PAYLOAD_MAX))


def leak_probes_complete(m: Mapping[str, Any], growth: Mapping[str, Any], manifest: Mapping[str, Any]) -> None:
    """Every exercised type's series of the probes the check reads on every host (held memory of
    both ends, the node's cluster shared memory; the host probe named rss_bytes in earlier reports),
    and the device probe of both ends (of neither only on the host): a series left out is not one
    that stayed flat."""
    exercised = m.get("devices")
    if not isinstance(exercised, list):
        return   # a report of a release before the check named its types: its probes as recorded
    declared = declared_devices(manifest)
    for d in exercised:
        named = f"{d}:" if len(declared) > 1 else ""
        missing = [named + x for x in HELD_PROBES
                   if named + x not in growth and named + LEGACY_HELD.get(x, x) not in growth]
        if missing:
            raise Refused(f"growth_per_round_bytes has no series {missing}: every probe read on {d} is judged")
        ends = [named + f"{side}.device_used_bytes" in growth for side in ("source", "destination")]
        if any(ends) and not all(ends):
            raise Refused(f"growth_per_round_bytes has the device memory of one end on {d} only: both ends read it")
        device_series_required(d, named, ends)


def device_series_required(d: str, named: str, ends: list[bool]) -> None:
    """On a type other than the host, both ends' device memory series: the device's own memory is
    what a transport leaks there, and a series left out is missing evidence, never memory that
    stayed flat (the workload judges' _memory_flat asks the same of every device read)."""
    if not is_host(d) and not all(ends):
        raise MissingEvidence(f"metric growth_per_round_bytes.{named}source.device_used_bytes / "
                              f"{named}destination.device_used_bytes is missing: the device memory of both ends on {d} "
                              "is read and judged")


@JUDGES.rule(needs=("growth_per_round_bytes", "payload_bytes", "transfers_per_round"),
           params=("max_growth_fraction_of_round",), decides_all=False,
           counts=(("transfers_per_round", "transfers_per_round"), ("rounds", "rounds")))
@refusing
def memory_growth_per_round(m: Mapping[str, Any], p: Mapping[str, Any], manifest: Mapping[str, Any]) -> Verdict:
    """A leak repeats every round and never gives memory back, so the median round and the average
    both show it; a round in which a busy host freed its buffers late gains once and gives it back
    in the next. Judged over the whole series too: what the rounds gained and never gave back, less
    the one largest round (a round that may still hold its buffers), stays within one round's
    allowance; a leak that starts in the last rounds shows there, not in the median. The payload
    is the run's, and every type the check exercised has every probe's series."""
    if not isinstance(m.get("devices"), list):
        raise MissingEvidence("metric devices (the device types exercised) is missing or not a list")
    per_type(m, manifest)   # every declared type exercised, the accelerator's unless the manifest says why not
    return _memory_growth(m, p, manifest)


@JUDGES.rule(needs=("growth_per_round_bytes", "payload_bytes", "transfers_per_round"),
           params=("max_growth_fraction_of_round",), decides_all=False,
           counts=(("transfers_per_round", "transfers_per_round"), ("rounds", "rounds")))
@refusing
def memory_growth_per_round_as_recorded(m: Mapping[str, Any], p: Mapping[str, Any], manifest: Mapping[str, Any]) -> Verdict:
    """TR-013 of releases before judges were declared (judges.LEGACY), whose reports named no
    device types: its probes and payload as recorded, the series judged as memory_growth_per_round's."""
    return _memory_growth(m, p, manifest)


def _memory_growth(m: Mapping[str, Any], p: Mapping[str, Any], manifest: Mapping[str, Any]) -> Verdict:
    size, per_round = number(m, "payload_bytes"), number(m, "transfers_per_round")
    if "devices" in m and size != leak_payload_bytes(m):
        raise Refused(f"payload_bytes {size:.0f}: the check moves {leak_payload_bytes(m)} bytes per transfer in this run "
                      "(a quarter of its largest payload, 1 to 16 MiB)")
    budget = param_value(p, "max_growth_fraction_of_round") * size * per_round
    growth = m.get("growth_per_round_bytes")
    if not isinstance(growth, Mapping) or not growth:
        raise MissingEvidence("metric growth_per_round_bytes is missing or empty")
    leak_probes_complete(m, growth, manifest)
    leaking = {}
    for probe, values in sorted(growth.items()):
        if not isinstance(values, list) or not values:
            raise MissingEvidence(f"metric growth_per_round_bytes.{probe} is not a non-empty list")
        if len(values) != number(m, "rounds"):
            return Verdict(FAIL, f"growth_per_round_bytes.{probe} records {len(values)} round(s), rounds says {m['rounds']}")
        nums = [number({"v": v}, "v") for v in values]
        med = statistics.median(nums)
        kept = sum(nums) - max(0.0, max(nums))
        shown = [round(n / 2**20, 1) for n in nums]
        if med > budget and sum(nums) / len(nums) > budget:
            leaking[probe] = f"{med / 2**20:.1f} MiB of {shown} (median per round, and on average)"
        elif kept > budget:
            leaking[probe] = f"{kept / 2**20:.1f} MiB kept over the rounds {shown} beyond their largest round"
    if leaking:
        return Verdict(FAIL, f"memory grows by {leaking} while each round moves and frees "
                             f"{per_round:g} x {size / 2**20:g} MiB; expected <= {budget / 2**20:.1f} MiB: the "
                             "transport keeps buffers after garbage_collect")
    return Verdict(PASS, f"growth per round within {budget / 2**20:.1f} MiB, as the median, the average and over the series")


LATENCY_DECIMALS = 4   # TR-014 records each type's latencies_s rounded to this many decimals (0.1 ms)


def latencies_recorded(m: Mapping[str, Any], manifest: Mapping[str, Any]) -> list[float]:
    """Every answer's latency each exercised type records (`latencies_s`), which the summaries
    actor_has_transport_max_latency_s and actor_has_transport_latency_s must be the max and median
    of (up to the record's rounding): a summary is recomputed from the samples beside it, never
    taken alone (issue 43's held-out X09: the samples said 10x the bound, the summary kept low)."""
    samples: list[float] = []
    for d, record in per_type(m, manifest).items():
        values = record.get("latencies_s")
        if not isinstance(values, list) or not values:
            raise MissingEvidence(f"metric {d}.latencies_s (the answers' latencies on {d}) is missing or empty")
        samples += [number({"v": v}, "v") for v in values]
    rounding = 0.5 * 10 ** -LATENCY_DECIMALS + 1e-12   # knob: half the record's last decimal, no threshold
    for name, derived in (("actor_has_transport_max_latency_s", max(samples)),
                          ("actor_has_transport_latency_s", statistics.median(samples))):
        if abs(number(m, name) - derived) > rounding:
            raise Refused(f"{name} {number(m, name):.4g}s is not what the types' latencies_s give ({derived:.4g}s)")
    return samples


@JUDGES.rule(needs=("actor_has_transport_max_latency_s",), params=("max_answer_s",), decides_all=False)
@refusing
def transport_query_answers_in_time(m: Mapping[str, Any], p: Mapping[str, Any], manifest: Mapping[str, Any]) -> Verdict:
    """TR-014: every answer's latency (each type's latencies_s, the summaries their max and median)
    within max_answer_s."""
    slowest = max([number(m, "actor_has_transport_max_latency_s"), *latencies_recorded(m, manifest)])
    return transport_query_answers_in_time_as_recorded({**m, "actor_has_transport_max_latency_s": slowest}, p, manifest)


@JUDGES.rule(needs=("actor_has_transport_max_latency_s",), params=("max_answer_s",), decides_all=False)
def transport_query_answers_in_time_as_recorded(m: Mapping[str, Any], p: Mapping[str, Any],
                                                manifest: Mapping[str, Any]) -> Verdict:
    """TR-014 of releases before judges were declared (judges.LEGACY), whose reports recorded the
    summary alone: judged as they were."""
    if "devices" in m:   # a release's record naming its types: every declared one exercised (per_type)
        try:
            per_type(m, manifest)
        except Refused as exc:
            return Verdict(FAIL, str(exc))
    slow, bound = number(m, "actor_has_transport_max_latency_s"), param_value(p, "max_answer_s")
    if slow > bound:
        return Verdict(FAIL, f"actor_has_tensor_transport took {slow:.2f}s to answer (bound {bound:g} s); Ray asks "
                             "on every .remote() with the transport")
    return Verdict(PASS, f"answers within {bound:g} s")
