"""One judge per metric-based check: recorded metrics + the check's params -> outcome.

A metric-based check decides pass/fail by comparing a measured figure with a threshold. The
live check records its figures in `metrics` and asks its judge for the outcome; `verify` asks
the same judge again, on the report, with the release's params. So an outcome that disagrees
with its own evidence (a `pass` whose bandwidth is below the bar, a `fail` whose figures clear
it) is found without trusting the submitter.

Judges are pure: no Ray, no clock, no I/O. A metric that is missing, not a number, NaN or
infinite gives outcome `error` (the evidence cannot decide), never `pass`.

Before its own rule, every judge holds the figures to what they were measured under: a count
the release's params fix (`counts`: rounds, transfers per round, cycles) recorded otherwise is a
fail, whatever the figures say. `references` names the manifest field a figure was measured
against (CC-010's nominal link); verify compares the two (signing/evidence.py), since the
manifest is not the judge's input.

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
    counts: tuple[tuple[str, str], ...] = ()      # (metric path, param): the count the release fixes
    references: tuple[tuple[str, str], ...] = ()  # (metric, manifest path): the reference it was measured against


JUDGES: dict[str, Judge] = {}


def _register(check_id: str, needs: tuple[str, ...], params: tuple[str, ...], decides_all: bool,
              counts: tuple[tuple[str, str], ...] = (), references: tuple[tuple[str, str], ...] = ()):
    def wrap(fn: Callable[[Mapping[str, Any], Mapping[str, Any]], Verdict]) -> Callable[..., Verdict]:
        JUDGES[check_id] = Judge(check_id, needs, params, decides_all, fn, counts, references)
        return fn
    return wrap


def _path(metrics: Mapping[str, Any], path: str) -> Any:
    value: Any = metrics
    for key in path.split("."):
        value = value.get(key) if isinstance(value, Mapping) else None
    return value


def _count_problem(j: Judge, metrics: Mapping[str, Any], params: Mapping[str, Any]) -> str | None:
    """A recorded count that is not the release's param (fewer rounds than the release asks)."""
    for metric, param in j.counts:
        got = number({metric: _path(metrics, metric)}, metric)
        want = _param(params, param)
        if got != want:
            return f"{metric} is {got:g} but the release's params say {param} = {want:g}"
    return None


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
        wrong = _count_problem(j, metrics, params)
        if wrong:
            return Verdict(FAIL, f"{check_id}: {wrong}")
        return j.decide(metrics, params)
    except MissingEvidence as exc:
        return Verdict(ERROR, f"{check_id}: {exc}")


def contradiction(check_id: str, claimed: str, metrics: Mapping[str, Any], params: Mapping[str, Any]) -> Verdict | None:
    """The judge's verdict when it contradicts the claimed outcome (`pass` beside evidence that
    does not pass; a `fail` beside passing evidence that is the check's whole verdict), else None.
    Verify asks it of a submitted report; the run asks it of its own entries before writing them,
    so a report the verifier would refuse for its evidence is never written as a pass."""
    j = JUDGES.get(check_id)
    if j is None or not set(j.params) <= set(params) or claimed not in (PASS, FAIL):
        return None
    verdict = judge(check_id, metrics, params)
    if claimed == PASS and verdict.outcome != PASS:
        return verdict
    if claimed == FAIL and verdict.outcome == PASS and j.decides_all:
        return verdict
    return None


def enforce(check_id: str, metrics: Mapping[str, Any], params: Mapping[str, Any], detail: str = "") -> None:
    """The live check's decision: raise AssertionError with the judge's reason unless it passes."""
    verdict = judge(check_id, metrics, params)
    if verdict.outcome != PASS:
        raise AssertionError(f"{verdict.reason}{detail}")


# ------------------------------------------------------------------------------ performance
@_register("CC-010", ("busbw_gbps", "host_copy_gbps", "host_fraction"),
           ("min_host_copy_fraction", "min_link_fraction"), decides_all=True,
           references=(("nominal_link_gbps", "collective.nominal_link_gbps"),))
def _cc010(m: Mapping[str, Any], p: Mapping[str, Any]) -> Verdict:
    """The weaker op's peak bus bandwidth over the sizes against the same run's host copy; the op
    furthest below the star reference (the same op, the same run, the same members, by the
    simplest correct implementation over Ray's object store) against it, when the release has
    min_star_fraction (releases before it held the weaker op to one object-store put/get of the
    same bytes, min_object_store_fraction, or to the host copy alone: their reports are judged as
    they were); and against the manifest's nominal link when one is declared."""
    bus, host = number(m, "busbw_gbps"), number(m, "host_copy_gbps")
    if host <= 0:
        return Verdict(FAIL, f"host copy bandwidth {host:g} GB/s is not positive")
    store_part = ""
    if "min_star_fraction" in p:
        star, op_bus, star_fraction = (number(m, "star_busbw_gbps"), number(m, "star_op_busbw_gbps"),
                                       number(m, "star_fraction"))
        if star <= 0:
            return Verdict(FAIL, f"the star reference's bus bandwidth {star:g} GB/s is not positive")
        if not _agrees(star_fraction, op_bus / star):
            return Verdict(FAIL, f"star_fraction {star_fraction:.4g} is not star_op_busbw_gbps/star_busbw_gbps "
                                 f"({op_bus:.4g}/{star:.4g})")
        need_star = _param(p, "min_star_fraction")
        op = str(m.get("star_op") or "the op")
        if star_fraction < need_star:
            return Verdict(FAIL, f"{op}'s peak bus bandwidth is {op_bus:.3g} GB/s, {star_fraction:.1%} of the simplest "
                                 f"correct {op} over Ray's object store (a star through one actor) doing the same op "
                                 f"between the same members in this run ({star:.3g} GB/s); the check needs "
                                 f">= {need_star:.0%}: the backend adds a cost per byte of its own")
        store_part = f", {star_fraction:.0%} of the star over the object store"
    elif "min_object_store_fraction" in p:   # releases before the star: one put/get of the same bytes
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
    raw = _matrix_classes(m)
    if set(raw) != set(links):
        return Verdict(FAIL, f"links has classes {sorted(links)} but the matrix_gbps it summarises gives {sorted(raw)}")
    for cls, values in raw.items():
        figures = links[cls] if isinstance(links[cls], Mapping) else {}
        med, low = number(figures, "median_gbps"), number(figures, "min_gbps")
        if not (_agrees(med, statistics.median(values)) and _agrees(low, min(values))):
            return Verdict(FAIL, f"links.{cls} says median {med:.4g} / min {low:.4g} GB/s but its own matrix_gbps "
                                 f"gives {statistics.median(values):.4g} / {min(values):.4g}")
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


def _matrix_classes(m: Mapping[str, Any]) -> dict[str, list[float]]:
    """The pairwise matrix's bandwidths by link class, as the check groups them: endpoints are
    labelled `n<node>:<device>`, a pair on one node is same_node (conformance/areas/performance/bench.link_classes)."""
    labels, matrix = m.get("endpoints"), m.get("matrix_gbps")
    if not isinstance(labels, list) or not all(isinstance(x, str) for x in labels) or len(labels) < 2:
        raise MissingEvidence("metric endpoints is missing or not a list of endpoint labels")
    if not isinstance(matrix, list) or len(matrix) != len(labels) \
            or not all(isinstance(row, list) and len(row) == len(labels) for row in matrix):
        raise MissingEvidence("metric matrix_gbps is missing or not a square matrix over the endpoints")
    out: dict[str, list[float]] = {}
    for i, row in enumerate(matrix):
        for j, value in enumerate(row):
            if i == j or value is None:
                continue
            cls = "same_node" if labels[i].split(":")[0] == labels[j].split(":")[0] else "cross_node"
            out.setdefault(cls, []).append(number({"v": value}, "v"))
    return out


# ------------------------------------------------------------------------------ collective
@_register("CC-008", ("memory",), ("max_growth_mib", "leak_warmup_cycles"), decides_all=False,
           counts=(("memory.cycles", "leak_cycles"), ("memory.payload_mib", "leak_payload_mib")))
def _cc008(m: Mapping[str, Any], p: Mapping[str, Any]) -> Verdict:
    """The memory each member holds after the warm-up cycles and after the last may differ by at
    most max_growth_mib; growth_mib must be what its own rows give. The rows are `held_mib` (host
    memory the member holds: anonymous, and shared outside Ray's object store) or, in reports of
    releases before that reading, `rss_mib` (its resident total)."""
    memory = m.get("memory")
    if not isinstance(memory, Mapping):
        raise MissingEvidence("metric memory is missing")
    key = "held_mib" if "held_mib" in memory else "rss_mib"
    rows, growth = memory.get(key), memory.get("growth_mib")
    warmup, allowed = int(_param(p, "leak_warmup_cycles")), _param(p, "max_growth_mib")
    if not isinstance(rows, list) or not all(isinstance(r, list) for r in rows) or not isinstance(growth, list) \
            or not growth:
        raise MissingEvidence("metric memory.held_mib (or memory.rss_mib) / memory.growth_mib is missing or not lists")
    rows = [[number({"v": x}, "v") for x in row] for row in rows]  # every figure recorded is a number
    if len(rows) != number(memory, "cycles") or not 1 <= warmup <= len(rows):
        return Verdict(FAIL, f"memory.{key} has {len(rows)} row(s) for {memory.get('cycles')!r} cycles")
    first, last = rows[warmup - 1], rows[-1]
    if len(first) != len(growth) or len(last) != len(growth):
        return Verdict(FAIL, f"memory.growth_mib does not have one figure per member of memory.{key}")
    for i, g in enumerate(growth):
        g = number({"v": g}, "v")
        derived = last[i] - first[i]
        if abs(g - derived) > 0.15:  # both rounded to 0.1 MiB
            return Verdict(FAIL, f"memory.growth_mib[{i}] is {g:g} but its {key} rows give {derived:.1f}")
        if g > allowed:
            return Verdict(FAIL, f"the memory member {i} holds grew by {g:.0f} MiB over the create/destroy "
                                 f"cycles (at most {allowed:g} MiB)")
    return Verdict(PASS, f"growth within {allowed:g} MiB per member")


# the survivors' error times are taken after ray.wait returns: a loaded driver may read one a little
# past the bound it waited with, which the live check counted as in time
_WAIT_SLACK_S = 2.0


@_register("CC-009", ("error_s",), ("error_bound_s",), decides_all=False)
def _cc009(m: Mapping[str, Any], p: Mapping[str, Any]) -> Verdict:
    """Every survivor got its error within error_bound_s of the member's death: one time per
    survivor (`survivors`, recorded since the count was; earlier reports are judged on the times)."""
    seconds, bound = m.get("error_s"), _param(p, "error_bound_s")
    if not isinstance(seconds, Mapping) or not seconds:
        raise MissingEvidence("metric error_s is missing or empty (no survivor got an error)")
    late = {str(r): number({"v": s}, "v") for r, s in seconds.items()}
    if "survivors" in m and len(seconds) != number(m, "survivors"):   # reports before it recorded none
        return Verdict(FAIL, f"error_s records {len(seconds)} survivor(s) of {m['survivors']!r}: the others got no "
                             "error within the bound (a hang)")
    late = {r: s for r, s in late.items() if s > bound + _WAIT_SLACK_S}
    if late:
        return Verdict(FAIL, f"survivor(s) {late} waited past the {bound:g} s bound for their error (a hang)")
    return Verdict(PASS, f"{len(seconds)} survivor(s) got their error within {bound:g} s")


# ------------------------------------------------------------------------------ recovery
@_register("FR-006", ("restart_s",), ("restart_cluster_s",), decides_all=False)
def _fr006(m: Mapping[str, Any], p: Mapping[str, Any]) -> Verdict:
    took, bound = number(m, "restart_s"), _param(p, "restart_cluster_s")
    if took > bound:
        return Verdict(FAIL, f"the fresh cluster took {took:.0f}s to start (bound {bound:g} s)")
    return Verdict(PASS, f"fresh cluster up in {took:.0f}s, within {bound:g} s")


@_register("FR-004", ("round_s",), ("stress_rounds",), decides_all=False)
def _fr004(m: Mapping[str, Any], p: Mapping[str, Any]) -> Verdict:
    """The restart storm ran the release's number of rounds: one recorded time per round."""
    times, rounds = m.get("round_s"), _param(p, "stress_rounds")
    if not isinstance(times, list) or not times:
        raise MissingEvidence("metric round_s is missing or not a list")
    for t in times:
        number({"v": t}, "v")
    if len(times) != rounds:
        return Verdict(FAIL, f"round_s records {len(times)} round(s) but the release's params say stress_rounds = {rounds:g}")
    return Verdict(PASS, f"{len(times)} rounds of kills and crashes, as the release asks")


# ------------------------------------------------------------------------------ transport
@_register("TR-013", ("growth_per_round_bytes", "payload_bytes", "transfers_per_round"),
           ("max_growth_fraction_of_round",), decides_all=False,
           counts=(("transfers_per_round", "transfers_per_round"), ("rounds", "rounds")))
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


@_register("TR-014", ("actor_has_transport_max_latency_s",), ("max_answer_s",), decides_all=False)
def _tr014(m: Mapping[str, Any], p: Mapping[str, Any]) -> Verdict:
    slow, bound = number(m, "actor_has_transport_max_latency_s"), _param(p, "max_answer_s")
    if slow > bound:
        return Verdict(FAIL, f"actor_has_tensor_transport took {slow:.2f}s to answer (bound {bound:g} s); Ray asks "
                             "on every .remote() with the transport")
    return Verdict(PASS, f"answers within {bound:g} s")
