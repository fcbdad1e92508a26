"""One judge per metric-based check: recorded metrics + the check's params -> outcome.

A metric-based check decides pass/fail by comparing a measured figure with a threshold. The
live check records its figures in `metrics` and asks its judge for the outcome; `verify` asks
the same judge again, on the report, with the release's params. So an outcome that disagrees
with its own evidence (a `pass` whose bandwidth is below the bar, a `fail` whose figures clear
it) is found without trusting the submitter.

Judges are pure: no Ray, no clock, no I/O. A metric that is missing, not a number, NaN or
infinite gives outcome `error` (the evidence cannot decide), never `pass`.

`decides_all` says whether the metrics are the check's whole verdict. Where it is False the
check can also fail on something the metrics do not hold (wrong bytes, a raised exception), so
a `fail` beside passing metrics is no contradiction; a `pass` beside failing metrics always is.
"""
from __future__ import annotations

import math
import statistics
from dataclasses import dataclass
from typing import Any, Callable, Mapping

PASS, FAIL, ERROR = "pass", "fail", "error"


@dataclass(frozen=True)
class Verdict:
    outcome: str          # pass | fail | error
    reason: str | None = None


class MissingEvidence(Exception):
    """A metric the judge needs is absent or not a finite number."""


@dataclass(frozen=True)
class Judge:
    check_id: str
    needs: tuple[str, ...]          # metric names the judge reads (the report schema requires them)
    params: tuple[str, ...]         # param names it reads
    decides_all: bool
    decide: Callable[[Mapping[str, Any], Mapping[str, Any]], Verdict]


JUDGES: dict[str, Judge] = {}


def _register(check_id: str, needs: tuple[str, ...], params: tuple[str, ...], decides_all: bool):
    def wrap(fn: Callable[[Mapping[str, Any], Mapping[str, Any]], Verdict]) -> Callable[..., Verdict]:
        JUDGES[check_id] = Judge(check_id, needs, params, decides_all, fn)
        return fn
    return wrap


def number(metrics: Mapping[str, Any], name: str) -> float:
    """A finite number from the metrics (bools are not numbers)."""
    value = metrics.get(name) if isinstance(metrics, Mapping) else None
    if value is None:
        raise MissingEvidence(f"metric {name} is missing")
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise MissingEvidence(f"metric {name} is not a number ({type(value).__name__})")
    if not math.isfinite(value):
        raise MissingEvidence(f"metric {name} is not finite ({value!r})")
    return float(value)


def _param(params: Mapping[str, Any], name: str) -> float:
    value = params.get(name) if isinstance(params, Mapping) else None
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
        raise MissingEvidence(f"param {name} is missing or not a finite number")
    return float(value)


def _agrees(recorded: float, derived: float) -> bool:
    return math.isclose(recorded, derived, rel_tol=1e-6, abs_tol=1e-12)


def judge(check_id: str, metrics: Mapping[str, Any], params: Mapping[str, Any]) -> Verdict:
    """The outcome the recorded metrics give under `params` (KeyError: the check has no judge)."""
    j = JUDGES[check_id]
    try:
        return j.decide(metrics, params)
    except MissingEvidence as exc:
        return Verdict(ERROR, f"{check_id}: {exc}")


def enforce(check_id: str, metrics: Mapping[str, Any], params: Mapping[str, Any], detail: str = "") -> None:
    """The live check's decision: raise AssertionError with the judge's reason unless it passes."""
    verdict = judge(check_id, metrics, params)
    if verdict.outcome != PASS:
        raise AssertionError(f"{verdict.reason}{detail}")


# ------------------------------------------------------------------------------ performance
@_register("CC-010", ("busbw_gbps", "host_copy_gbps", "host_fraction"),
           ("min_host_copy_fraction", "min_link_fraction"), decides_all=True)
def _cc010(m: Mapping[str, Any], p: Mapping[str, Any]) -> Verdict:
    """The weaker op's peak bus bandwidth over the sizes against the same run's host copy, against
    the same run's object store moving the same bytes (when the release has
    min_object_store_fraction; earlier reports have no such figure and are judged as they were),
    and against the manifest's nominal link when one is declared (nominal_link_gbps not null)."""
    bus, host = number(m, "busbw_gbps"), number(m, "host_copy_gbps")
    if host <= 0:
        return Verdict(FAIL, f"host copy bandwidth {host:g} GB/s is not positive")
    store_part = ""
    if "min_object_store_fraction" in p:   # releases before it judged the host copy alone
        store, store_fraction = number(m, "object_store_gbps"), number(m, "object_store_fraction")
        if store <= 0:
            return Verdict(FAIL, f"object store bandwidth {store:g} GB/s is not positive")
        if not _agrees(store_fraction, bus / store):
            return Verdict(FAIL, f"object_store_fraction {store_fraction:.4g} is not busbw_gbps/object_store_gbps "
                                 f"({bus:.4g}/{store:.4g})")
        need_store = _param(p, "min_object_store_fraction")
        if store_fraction < need_store:
            return Verdict(FAIL, f"peak bus bandwidth is {bus:.3g} GB/s, {store_fraction:.1%} of Ray's object store "
                                 f"moving the same bytes between the same members in this run ({store:.3g} GB/s); the "
                                 f"check needs >= {need_store:.0%}: the backend adds a cost per byte of its own")
        store_part = f", {store_fraction:.0%} of the object store"
    fraction = number(m, "host_fraction")
    if not _agrees(fraction, bus / host):
        return Verdict(FAIL, f"host_fraction {fraction:.4g} is not busbw_gbps/host_copy_gbps ({bus:.4g}/{host:.4g})")
    need = _param(p, "min_host_copy_fraction")
    if fraction < need:
        return Verdict(FAIL, f"peak bus bandwidth is {bus:.3g} GB/s, {fraction:.2%} of this host's "
                             f"memory copy ({host:.3g} GB/s); the check needs >= {need:.1%}")
    if m.get("nominal_link_gbps") is None:
        return Verdict(PASS, f"{fraction:.2%} of the host copy, >= {need:.1%}{store_part} (no nominal link declared)")
    link, link_fraction = number(m, "nominal_link_gbps"), number(m, "link_fraction")
    if link <= 0 or not _agrees(link_fraction, bus / link):
        return Verdict(FAIL, f"link_fraction {link_fraction:.4g} is not busbw_gbps/nominal_link_gbps ({bus:.4g}/{link:.4g})")
    need_link = _param(p, "min_link_fraction")
    if link_fraction < need_link:
        return Verdict(FAIL, f"peak bus bandwidth is {bus:.3g} GB/s, {link_fraction:.1%} of the "
                             f"nominal link ({link:.3g} GB/s, collective.nominal_link_gbps); the check needs >= {need_link:.0%}")
    return Verdict(PASS, f"{fraction:.2%} of the host copy{store_part} and {link_fraction:.1%} of the nominal link")


@_register("PF-002", ("largest_size_gbps", "reference_gbps", "achieved_fraction"),
           ("min_link_bandwidth_fraction",), decides_all=True)
def _pf002(m: Mapping[str, Any], p: Mapping[str, Any]) -> Verdict:
    got, ref = number(m, "largest_size_gbps"), number(m, "reference_gbps")
    need = _param(p, "min_link_bandwidth_fraction")
    if ref <= 0:
        return Verdict(FAIL, f"reference bandwidth {ref:g} GB/s is not positive")
    achieved = number(m, "achieved_fraction")
    if not _agrees(achieved, got / ref):
        return Verdict(FAIL, f"achieved_fraction {achieved:.4g} is not largest_size_gbps/reference_gbps "
                             f"({got:.4g}/{ref:.4g} = {got / ref:.4g})")
    if achieved < need:
        return Verdict(FAIL, f"the largest size reaches {got:.3g} GB/s (median), {achieved:.1%} of the reference "
                             f"{ref:.3g} GB/s; the check needs >= {need:.0%}")
    return Verdict(PASS, f"{achieved:.1%} of the reference, >= {need:.0%}")


@_register("PF-003", ("rdt_gbps", "object_store_gbps", "ratio_to_object_store"),
           ("min_ratio_to_object_store",), decides_all=True)
def _pf003(m: Mapping[str, Any], p: Mapping[str, Any]) -> Verdict:
    rdt, store = number(m, "rdt_gbps"), number(m, "object_store_gbps")
    need = _param(p, "min_ratio_to_object_store")
    if store <= 0:
        return Verdict(FAIL, f"object-store bandwidth {store:g} GB/s is not positive")
    ratio = number(m, "ratio_to_object_store")
    if not _agrees(ratio, rdt / store):
        return Verdict(FAIL, f"ratio_to_object_store {ratio:.4g} is not rdt_gbps/object_store_gbps ({rdt / store:.4g})")
    if ratio < need:
        return Verdict(FAIL, f"the transport moves {rdt:.3g} GB/s, {ratio:.2f}x Ray's object store path "
                             f"({store:.3g} GB/s) between the same actors; the check needs >= {need:g}x")
    return Verdict(PASS, f"{ratio:.2f}x the object store, >= {need:g}x")


@_register("PF-004", ("links", "wrong_pairs"), ("min_fraction_of_class_median",), decides_all=True)
def _pf004(m: Mapping[str, Any], p: Mapping[str, Any]) -> Verdict:
    need = _param(p, "min_fraction_of_class_median")
    wrong = number(m, "wrong_pairs")
    links = m.get("links")
    if not isinstance(links, Mapping) or not links:
        raise MissingEvidence("metric links is missing or empty")
    if wrong != 0:
        return Verdict(FAIL, f"{wrong:g} pair(s) delivered wrong data")
    slow = []
    for cls, figures in sorted(links.items()):
        if not isinstance(figures, Mapping):
            raise MissingEvidence(f"metric links.{cls} is not an object")
        med, low = number(figures, "median_gbps"), number(figures, "min_gbps")
        if low > med:
            return Verdict(FAIL, f"links.{cls}: min_gbps {low:.3g} above its median {med:.3g}")
        if low < need * med:
            slow.append(f"{cls} slowest {low:.3g} GB/s < {need:.0%} of its median {med:.3g}")
    if slow:
        return Verdict(FAIL, f"links slower than {need:.0%} of their class's median: {'; '.join(slow)}")
    return Verdict(PASS, f"every link class within {need:.0%} of its median")


# ------------------------------------------------------------------------------ recovery
@_register("FR-006", ("restart_s",), ("restart_cluster_s",), decides_all=False)
def _fr006(m: Mapping[str, Any], p: Mapping[str, Any]) -> Verdict:
    took, bound = number(m, "restart_s"), _param(p, "restart_cluster_s")
    if took > bound:
        return Verdict(FAIL, f"the fresh cluster took {took:.0f}s to start (bound {bound:g} s)")
    return Verdict(PASS, f"fresh cluster up in {took:.0f}s, within {bound:g} s")


# ------------------------------------------------------------------------------ transport
@_register("TR-013", ("growth_per_round_bytes", "payload_bytes", "transfers_per_round"),
           ("max_growth_fraction_of_round",), decides_all=False)
def _tr013(m: Mapping[str, Any], p: Mapping[str, Any]) -> Verdict:
    size, per_round = number(m, "payload_bytes"), number(m, "transfers_per_round")
    budget = _param(p, "max_growth_fraction_of_round") * size * per_round
    growth = m.get("growth_per_round_bytes")
    if not isinstance(growth, Mapping) or not growth:
        raise MissingEvidence("metric growth_per_round_bytes is missing or empty")
    leaking = {}
    for probe, values in sorted(growth.items()):
        if not isinstance(values, list) or not values:
            raise MissingEvidence(f"metric growth_per_round_bytes.{probe} is not a non-empty list")
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


@_register("TR-014", ("actor_has_transport_max_latency_s",), ("max_answer_s",), decides_all=False)
def _tr014(m: Mapping[str, Any], p: Mapping[str, Any]) -> Verdict:
    slow, bound = number(m, "actor_has_transport_max_latency_s"), _param(p, "max_answer_s")
    if slow > bound:
        return Verdict(FAIL, f"actor_has_tensor_transport took {slow:.2f}s to answer (bound {bound:g} s); Ray asks "
                             "on every .remote() with the transport")
    return Verdict(PASS, f"answers within {bound:g} s")
