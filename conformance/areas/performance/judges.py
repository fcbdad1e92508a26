"""The performance area's judges: each check's recorded evidence + the release's params -> its outcome.

The checklist names a check's judge (`judge: <function name>`); the live check decides with it
(CheckContext.decide) and `verify` decides again with it (conformance/report/judges.py says the
rules every judge keeps). Pure: no Ray, no clock, no I/O.
"""
from __future__ import annotations

import math
import statistics
from typing import Any, Mapping

from conformance import measure
from conformance.areas.performance.matrix_shape import matrix_shape_problem, run_top
from conformance.rdt.config import MIN_SWEEP_BYTES, size_key, sweep_sizes
from conformance.report.judges import (
    FAIL,
    PASS,
    JudgeTable,
    MissingEvidence,
    Verdict,
    agrees,
    is_median_of,
    number,
    param_value,
    path_of,
    ran_remote,
)

JUDGES = JudgeTable()


@JUDGES.rule(needs=("largest_size_gbps", "reference_gbps", "achieved_fraction"),
           params=("min_link_bandwidth_fraction",), decides_all=True)
def largest_size_against_reference(m: Mapping[str, Any], p: Mapping[str, Any], manifest: Mapping[str, Any]) -> Verdict:
    """The largest size's median against its reference: the manifest's declared link when it
    declares one (never another figure), else a reference measured in the run, each median the
    median of the trials recorded beside it (which must be there), at the sweep's top size."""
    return _largest_size(m, p, manifest, strict=True)


@JUDGES.rule(needs=("largest_size_gbps", "reference_gbps", "achieved_fraction"),
           params=("min_link_bandwidth_fraction",), decides_all=True)
def largest_size_against_reference_as_recorded(m: Mapping[str, Any], p: Mapping[str, Any],
                                               manifest: Mapping[str, Any]) -> Verdict:
    """PF-002 of releases before judges were declared (judges.LEGACY), whose reports recorded the
    medians alone and no size: judged as they were."""
    return _largest_size(m, p, manifest, strict=False)


def _largest_size(m: Mapping[str, Any], p: Mapping[str, Any], manifest: Mapping[str, Any], strict: bool) -> Verdict:
    got, ref = number(m, "largest_size_gbps"), number(m, "reference_gbps")
    need = param_value(p, "min_link_bandwidth_fraction")
    if ref <= 0:
        return Verdict(FAIL, f"reference bandwidth {ref:g} GB/s is not positive")
    wrong = (size_problem(m, "largest_bytes", exact=True) if strict else None) or reference_problem(ref, manifest)
    if wrong:
        return Verdict(FAIL, wrong)
    required = ("largest_size_trials_gbps", *(() if declared_reference(manifest) else ("reference_trials_gbps",)))
    wrong = median_problems(m, (("largest_size_gbps", "largest_size_trials_gbps"),
                                ("reference_gbps", "reference_trials_gbps")), required=required if strict else ())
    if wrong:
        return Verdict(FAIL, wrong)
    achieved = number(m, "achieved_fraction")
    if not agrees(achieved, got / ref):
        return Verdict(FAIL, f"achieved_fraction {achieved:.4g} is not largest_size_gbps/reference_gbps "
                             f"({got:.4g}/{ref:.4g} = {got / ref:.4g})")
    if achieved < need:
        return Verdict(FAIL, f"the largest size reaches {got:.3g} GB/s (median), {achieved:.1%} of the reference "
                             f"{ref:.3g} GB/s; the check needs >= {need:.0%}")
    return Verdict(PASS, f"{achieved:.1%} of the reference, >= {need:.0%}")


@JUDGES.rule(needs=("rdt_gbps", "object_store_gbps", "ratio_to_object_store"),
           params=("min_ratio_to_object_store",), decides_all=True)
def transport_against_object_store(m: Mapping[str, Any], p: Mapping[str, Any], manifest: Mapping[str, Any]) -> Verdict:
    """The transport against Ray's object store at the largest size both ran (a size of the run's
    sweep), each figure the median of its own trials, which must be there."""
    return _against_store(m, p, strict=True)


@JUDGES.rule(needs=("rdt_gbps", "object_store_gbps", "ratio_to_object_store"),
           params=("min_ratio_to_object_store",), decides_all=True)
def transport_against_object_store_as_recorded(m: Mapping[str, Any], p: Mapping[str, Any],
                                               manifest: Mapping[str, Any]) -> Verdict:
    """PF-003 of releases before judges were declared (judges.LEGACY): medians alone, judged as they were."""
    return _against_store(m, p, strict=False)


def _against_store(m: Mapping[str, Any], p: Mapping[str, Any], strict: bool) -> Verdict:
    rdt, store = number(m, "rdt_gbps"), number(m, "object_store_gbps")
    need = param_value(p, "min_ratio_to_object_store")
    wrong = (size_problem(m, "bytes", exact=False) if strict else None) or median_problems(
        m, (("rdt_gbps", "rdt_trials_gbps"), ("object_store_gbps", "object_store_trials_gbps")),
        required=("rdt_trials_gbps", "object_store_trials_gbps") if strict else ())
    if wrong:
        return Verdict(FAIL, wrong)
    if store <= 0:
        return Verdict(FAIL, f"object-store bandwidth {store:g} GB/s is not positive")
    ratio = number(m, "ratio_to_object_store")
    if not agrees(ratio, rdt / store):
        return Verdict(FAIL, f"ratio_to_object_store {ratio:.4g} is not rdt_gbps/object_store_gbps ({rdt / store:.4g})")
    if ratio < need:
        return Verdict(FAIL, f"the transport moves {rdt:.3g} GB/s, {ratio:.2f}x Ray's object store path "
                             f"({store:.3g} GB/s) between the same actors; the check needs >= {need:g}x")
    return Verdict(PASS, f"{ratio:.2f}x the object store, >= {need:g}x")




def size_problem(m: Mapping[str, Any], name: str, exact: bool) -> str | None:
    """The size a figure was measured at, against the run's sweep: its top (`exact`), else one of
    its sizes (a figure without its size is missing evidence)."""
    size, top = number(m, name), run_top(m)
    if exact and size != top:
        return f"{name} {size:.0f}: the sweep's largest size in this run is {top} bytes (the release's, unless the record " \
               "says the run's size knob set another)"
    if not exact and size not in sweep_sizes(top):
        return f"{name} {size:.0f} is not a size of this run's sweep up to {top} bytes"
    return None


def declared_reference(manifest: Mapping[str, Any]) -> tuple[float, str] | None:
    """The bandwidth the manifest declares for the largest size to be judged against
    (conformance.rdt.config.transport_config and PF-002's reference_bandwidth): the transport's
    nominal link, else for a device transport the slowest link topology.expected.links declares;
    None for a host-memory transport without a nominal link (its reference is measured in the run).
    (GB/s, the manifest field that declares it)."""
    link = path_of(manifest, "transport.expected.link_bandwidth_gbps")
    if isinstance(link, (int, float)) and not isinstance(link, bool) and link > 0:
        return float(link), "transport.expected.link_bandwidth_gbps"
    devices = path_of(manifest, "transport.devices")
    if not isinstance(devices, list) or not devices or set(devices) == {"cpu"}:
        return None
    links = path_of(manifest, "topology.expected.links")
    declared = [x.get("min_bandwidth_gbps") for x in links if isinstance(x, Mapping)] if isinstance(links, list) else []
    numbers = [float(x) for x in declared if isinstance(x, (int, float)) and not isinstance(x, bool) and x > 0]
    return (min(numbers), "the slowest of topology.expected.links[].min_bandwidth_gbps") if numbers else None


def reference_problem(ref: float, manifest: Mapping[str, Any]) -> str | None:
    """A reference other than the one the manifest declares (never another figure)."""
    declared = declared_reference(manifest)
    if declared is not None and not agrees(ref, declared[0]):
        return f"reference_gbps {ref:.4g} is not the manifest's {declared[1]} {declared[0]:.4g}: judged against " \
               "another reference than the declared link"
    return None


def median_problems(m: Mapping[str, Any], pairs: tuple[tuple[str, str], ...], required: tuple[str, ...] = ()) -> str | None:
    """A median that is not the median of the trials recorded beside it. `required`: the trials a
    report of this release records (a record without them is missing evidence, never a median to
    take on its word)."""
    for figure, trials in pairs:
        values = m.get(trials)
        if values is None and trials in required:
            raise MissingEvidence(f"metric {trials} (the trials {figure} is the median of) is missing")
        if values is None:
            continue
        if not isinstance(values, list) or not values:
            raise MissingEvidence(f"metric {trials} is not a non-empty list")
        nums = [number({"v": v}, "v") for v in values]
        # the figure is the rate of the trials' median time (conformance/measure.py): with an even
        # count it lies between the two middle rates (their harmonic mean), which under load can be
        # far from the rates' median (0.057 against 0.126 GB/s seen); a forged figure lies outside
        if not is_median_of(number(m, figure), nums):
            middle = sorted(nums)[(len(nums) - 1) // 2:len(nums) // 2 + 1]
            return (f"{figure} {number(m, figure):.4g} is not the median of its own {trials} "
                    f"({' to '.join(f'{v:.4g}' for v in middle)})")
    return None


@JUDGES.rule(needs=("links", "wrong_pairs"), params=("min_fraction_of_class_median", "max_endpoints"),
             decides_all=True)
def links_within_class_median(m: Mapping[str, Any], p: Mapping[str, Any], manifest: Mapping[str, Any]) -> Verdict:
    """Every link within its class's median, over the matrix of every endpoint the cluster the
    manifest declares gives (its nodes x devices per node, at most max_endpoints), at the run's
    matrix size."""
    wrong = matrix_shape_problem(m, p, manifest) or recheck_problem(m, p)
    if wrong:
        return Verdict(FAIL, wrong)
    return links_as_recorded(m, p, manifest)


RECHECK_ARROW = "→"   # conformance/areas/performance/bench.pairwise names a rechecked link "<src>→<dst>"


def recheck_problem(m: Mapping[str, Any], p: Mapping[str, Any]) -> str | None:
    """The links timed again (`rechecked_gbps`: "<src>→<dst>" -> [first median, second median])
    against the matrix they summarise into (bench.pairwise): each a pair of the endpoints whose cell
    is the better of its two medians, and together exactly the links under
    min_fraction_of_class_median x their class's median in the first pass (the matrix with each
    rechecked cell at its first figure). A cell raised while its recheck still shows it slow, or a
    slow link never rechecked, is a summary its raw figures contradict (issue 43's held-out P05)."""
    rechecked = m.get("rechecked_gbps")
    if rechecked is None:
        return None
    labels, matrix = m.get("endpoints"), m.get("matrix_gbps")
    if not isinstance(rechecked, Mapping) or not isinstance(labels, list) or not isinstance(matrix, list):
        raise MissingEvidence("metric rechecked_gbps is not an object of links")
    index = {str(x): i for i, x in enumerate(labels)}
    first = [list(row) if isinstance(row, list) else row for row in matrix]
    for key, pair in rechecked.items():
        src, _, dst = str(key).partition(RECHECK_ARROW)
        if src not in index or dst not in index or src == dst:
            return f"rechecked_gbps names {str(key)[:40]!r}, not a link between two of the endpoints"
        if not isinstance(pair, list) or len(pair) != 2:
            return f"rechecked_gbps[{str(key)[:40]!r}] is not [first median, second median]"
        before, again = (number({"v": v}, "v") for v in pair)
        i, j = index[src], index[dst]
        cell = first[i][j] if isinstance(first[i], list) and j < len(first[i]) else None
        if cell is None or not agrees(number({"v": cell}, "v"), max(before, again)):
            return (f"matrix_gbps {key} is {cell!r} GB/s but its recheck records {before:.4g} then {again:.4g}: the cell "
                    "is the better of the two")
        first[i][j] = before
    classes = _matrix_classes({"endpoints": labels, "matrix_gbps": first})
    medians = {cls: statistics.median(values) for cls, values in classes.items()}
    below = param_value(p, "min_fraction_of_class_median")
    slow = {f"{labels[i]}{RECHECK_ARROW}{labels[j]}" for i, row in enumerate(first) for j, v in enumerate(row)
            if i != j and v is not None
            and number({"v": v}, "v") < below * medians[_link_class(labels[i], labels[j])]}
    if slow != set(map(str, rechecked)):
        return (f"rechecked_gbps times again {sorted(map(str, rechecked))[:4]}, but the first pass leaves "
                f"{sorted(slow)[:4]} under {below:.0%} of their class's median: every such link, and only those, is rechecked")
    return None


def _link_class(a: str, b: str) -> str:
    return "same_node" if a.split(":")[0] == b.split(":")[0] else "cross_node"


@JUDGES.rule(needs=("links", "wrong_pairs"), params=("min_fraction_of_class_median",), decides_all=True)
def links_as_recorded(m: Mapping[str, Any], p: Mapping[str, Any], manifest: Mapping[str, Any]) -> Verdict:
    """PF-004 of releases before judges were declared (judges.LEGACY), and the links of the matrix
    as recorded (links_within_class_median checks its shape first)."""
    need = param_value(p, "min_fraction_of_class_median")
    wrong = number(m, "wrong_pairs")
    links = m.get("links")
    if not isinstance(links, Mapping) or not links:
        raise MissingEvidence("metric links is missing or empty")
    if wrong != 0:
        return Verdict(FAIL, f"{wrong:g} pair(s) delivered wrong data")
    raw = _matrix_classes(m)
    unmeasured = _unmeasured_pairs(m)
    if unmeasured:
        return Verdict(FAIL, f"{len(unmeasured)} pair(s) of the matrix have no bandwidth ({', '.join(unmeasured[:4])}): "
                             "every pair of the endpoints is measured, a slow one included")
    nodes = {str(x).split(":")[0] for x in m.get("endpoints") or []}
    want = None if ran_remote(manifest) else path_of(manifest, "cluster.nodes")   # the vendor's cluster: not the manifest's count
    if isinstance(want, int) and not isinstance(want, bool) and len(nodes) < min(want, 2):
        return Verdict(FAIL, f"the endpoints span {len(nodes)} node(s) of the manifest's {want}: the cross-node links "
                             "were never measured")
    if set(raw) != set(links):
        return Verdict(FAIL, f"links has classes {sorted(links)} but the matrix_gbps it summarises gives {sorted(raw)}")
    for cls, values in raw.items():
        figures = links[cls] if isinstance(links[cls], Mapping) else {}
        med, low = number(figures, "median_gbps"), number(figures, "min_gbps")
        if not (agrees(med, statistics.median(values)) and agrees(low, min(values))):
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


def _unmeasured_pairs(m: Mapping[str, Any]) -> list[str]:
    """The off-diagonal cells of the matrix with no figure (the matrix's shape is _matrix_classes')."""
    labels, matrix = m.get("endpoints") or [], m.get("matrix_gbps") or []
    return [f"{labels[i]}->{labels[j]}" for i, row in enumerate(matrix) if isinstance(row, list)
            for j, value in enumerate(row) if i != j and value is None and i < len(labels) and j < len(labels)]


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
            out.setdefault(_link_class(labels[i], labels[j]), []).append(number({"v": value}, "v"))
    return out


# ------------------------------------------------------------------------------ PF-001
SWEEP_METHOD = ("warmup", "min_trials", "max_trials", "max_cv", "batch_s", "max_batch", "size_budget_s",
                "baseline_warmup", "baseline_trials")


def primary_device(manifest: Mapping[str, Any]) -> str:
    """The device type the sweep runs on: the first the transport declares that is not the host's,
    else the host's (PF-001's requirement; conformance.rdt.registration picks it the same way)."""
    t = manifest.get("transport") if isinstance(manifest, Mapping) else None
    devices = t.get("devices") if isinstance(t, Mapping) else None
    declared = [str(d) for d in devices] if isinstance(devices, list) and devices else ["cpu"]
    return next((d for d in declared if d != "cpu"), "cpu")


def _size_problem(key: str, f: Mapping[str, Any], seconds: Any, p: Mapping[str, Any],
                  baseline_trials: bool = False) -> str | None:
    """What one size's figures show against the method and against their own trials, or None.
    `baseline_trials`: the release records each baseline's trials beside its median (_baselines_problem)."""
    trials = f.get("trials_gbps")
    if not isinstance(trials, list) or not trials:
        raise MissingEvidence(f"metric bandwidth.{key}.trials_gbps is missing or empty")
    bw = sorted(number({"v": v}, "v") for v in trials)
    lo, hi = param_value(p, "min_trials"), param_value(p, "max_trials")
    if not lo <= len(bw) <= hi:
        return f"{key}: {len(bw)} trial(s); the method takes {lo:g} to {hi:g}"
    med = number(f, "median_gbps")
    middle = bw[(len(bw) - 1) // 2], bw[len(bw) // 2]
    if not (agrees(number(f, "min_gbps"), bw[0]) and agrees(number(f, "max_gbps"), bw[-1])
            and (agrees(med, middle[0]) or agrees(med, middle[1]) or middle[0] <= med <= middle[1])):
        return f"{key}: median/min/max {med:.4g}/{f['min_gbps']:.4g}/{f['max_gbps']:.4g} GB/s are not its own trials'"
    batch = number(f, "batch")
    if batch != int(batch) or not 1 <= batch <= param_value(p, "max_batch"):
        return f"{key}: a batch of {batch:g} transfers per trial; the method batches 1 to max_batch = {p['max_batch']:g}"
    cv = measure.median_cv(bw)
    recorded = f.get("cv")
    if (recorded is None) != (not math.isfinite(cv)) or (recorded is not None and not agrees(number(f, "cv"), cv)):
        return f"{key}: cv {recorded} is not its trials' ({cv:.4g})"
    met = math.isfinite(cv) and cv <= param_value(p, "max_cv")
    if f.get("cv_met") is not met:
        return f"{key}: cv_met {f.get('cv_met')} but its cv {cv:.4g} against max_cv {p['max_cv']:g} gives {met}"
    spent = number(seconds, "rdt") if isinstance(seconds, Mapping) else None
    if not met and len(bw) < hi and (spent is None or spent < param_value(p, "size_budget_s")):
        return f"{key}: stopped after {len(bw)} trial(s) with cv {cv:.4g} above max_cv, before max_trials or size_budget_s"
    store = f.get("object_store_trials_gbps")
    if store is not None:
        if not isinstance(store, list) or len(store) != param_value(p, "baseline_trials"):
            return f"{key}: the object-store baseline has {store if not isinstance(store, list) else len(store)} trial(s); " \
                   f"the method takes baseline_trials = {p['baseline_trials']:g}"
        ratio, store_med = f.get("ratio_to_object_store"), number(f, "object_store_median_gbps")
        if store_med <= 0 or not isinstance(ratio, (int, float)) or not agrees(float(ratio), med / store_med):
            return f"{key}: ratio_to_object_store {ratio} is not {med:.4g}/{store_med:.4g}"
    clone = number(f, "clone_median_gbps")
    if clone <= 0 or not agrees(number(f, "ratio_to_clone"), med / clone):
        return f"{key}: ratio_to_clone {f.get('ratio_to_clone')} is not {med:.4g}/{clone:.4g}"
    return _baselines_problem(key, f, p) if baseline_trials else None


def _baselines_problem(key: str, f: Mapping[str, Any], p: Mapping[str, Any]) -> str | None:
    """Each baseline's median at one size is the median of the trials recorded beside it, which
    must be there: the host copy's at every size (min_trials of them, conformance/areas/performance/
    bench._clone_stats), the object store's wherever its median is. Both medians are merit references
    `diff` reads as the host's; one without its trials would be the vendor's word (held-out N31_08)."""
    clone = f.get("clone_trials_gbps")
    if isinstance(clone, list) and len(clone) != param_value(p, "min_trials"):
        return f"{key}: the host copy baseline has {len(clone)} trial(s); the method takes min_trials = {p['min_trials']:g}"
    store = ("object_store_trials_gbps",) if f.get("object_store_median_gbps") is not None else ()
    wrong = median_problems(f, (("clone_median_gbps", "clone_trials_gbps"),
                                ("object_store_median_gbps", "object_store_trials_gbps")),
                            required=("clone_trials_gbps", *store))
    return f"{key}: {wrong}" if wrong else None


SWEEP_NEEDS = ("max_bytes", "unverified", "bandwidth", "method", "verification", "small_message_latency_s")


@JUDGES.rule(needs=SWEEP_NEEDS, params=SWEEP_METHOD, decides_all=True)
def sweep_and_baselines_verified_by_the_method(m: Mapping[str, Any], p: Mapping[str, Any],
                                               manifest: Mapping[str, Any]) -> Verdict:
    """Every size verified and measured by the release's method, each baseline's median beside the
    trials it is the median of."""
    return _sweep_verdict(m, p, manifest, baseline_trials=True)


@JUDGES.rule(needs=SWEEP_NEEDS, params=SWEEP_METHOD, decides_all=True)
def sweep_verified_by_the_method(m: Mapping[str, Any], p: Mapping[str, Any], manifest: Mapping[str, Any]) -> Verdict:
    """PF-001 of releases 0.1.0+data.17 to data.26, which recorded the host copy's median without
    its trials (and may lack the object store's): the baselines' medians taken as recorded."""
    return _sweep_verdict(m, p, manifest, baseline_trials=False)


def _sweep_verdict(m: Mapping[str, Any], p: Mapping[str, Any], manifest: Mapping[str, Any],
                   baseline_trials: bool) -> Verdict:
    top = number(m, "max_bytes")
    if top != run_top(m):
        return Verdict(FAIL, f"max_bytes {top:.0f}: the sweep's top size in this run is {run_top(m)} bytes (the release's, "
                             "unless the record says the run's size knob set another)")
    sizes = sweep_sizes(int(top)) if top >= MIN_SWEEP_BYTES and top == int(top) else []
    keys = [size_key(n) for n in sizes]
    if m.get("sizes_bytes") != sizes:
        return Verdict(FAIL, f"sizes_bytes {m.get('sizes_bytes')} is not the sweep up to {top:g} bytes {sizes}")
    method = m.get("method")
    if not isinstance(method, Mapping):
        raise MissingEvidence("metric method is not an object")
    off = {k: method.get(k) for k in SWEEP_METHOD if method.get(k) != p.get(k)}
    if off:
        return Verdict(FAIL, f"the sweep ran with {off}, not the release's method {({k: p.get(k) for k in off})}")
    if method.get("device") != primary_device(manifest):
        return Verdict(FAIL, f"the sweep ran on {method.get('device')!r}; the manifest's transport makes it "
                             f"{primary_device(manifest)!r}")
    checked, figures = m.get("verification"), m.get("bandwidth")
    if not isinstance(checked, Mapping) or set(checked) != set(keys):   # (a report's keys are sorted)
        return Verdict(FAIL, f"verification covers {list(checked) if isinstance(checked, Mapping) else checked}, "
                             f"not every size {keys}")
    wrong = [f"{k}: {checked[k]}" for k in keys if checked[k] != "ok"]
    if number(m, "unverified") != len(wrong):
        return Verdict(FAIL, f"unverified is {m['unverified']:g} but the verification records {len(wrong)} wrong size(s)")
    if wrong:
        return Verdict(FAIL, f"the sweep's verification transfers arrived wrong at {len(wrong)} size(s): {'; '.join(wrong[:3])}")
    if not isinstance(figures, Mapping) or set(figures) != set(keys):
        return Verdict(FAIL, f"bandwidth has sizes {list(figures) if isinstance(figures, Mapping) else figures}, not {keys}")
    if number(m, "small_message_latency_s") <= 0:
        return Verdict(FAIL, "small_message_latency_s is not positive")
    recorded = m.get("seconds_per_size")
    seconds: Mapping[str, Any] = recorded if isinstance(recorded, Mapping) else {}
    for key in keys:
        f = figures[key]
        if not isinstance(f, Mapping):
            raise MissingEvidence(f"metric bandwidth.{key} is not an object")
        problem = _size_problem(key, f, seconds.get(key), p, baseline_trials)
        if problem:
            return Verdict(FAIL, f"the sweep's figures disagree with its method or trials: {problem}")
    if m.get("cv_met_all_sizes") is not all(figures[k].get("cv_met") for k in keys):
        return Verdict(FAIL, f"cv_met_all_sizes {m.get('cv_met_all_sizes')} is not its sizes' cv_met")
    return Verdict(PASS, f"{len(keys)} sizes up to {top:g} bytes verified bit-exact and measured by the release's method")
