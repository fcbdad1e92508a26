"""One measurement, or one observation of the cluster, recorded twice, says the same twice.

The performance checks share one sweep of the transport (PF-001's): PF-002 judges its largest
size against the link, PF-003 the largest size the object store held against Ray's object store
path. Each records the trials it judged, copied from the sweep, so each judge alone sees figures
that add up. A copy scaled in one check (PF-002's trials times ten, PF-003's store trials
lowered) or a comparison moved to a smaller size still adds up inside that check; only the
sweep the copy came from shows it (issue 43's held-out round: P01, P02, P03).

The device checks' node records (DP-006's device counts, DP-007's node types, DP-009's devices by
node) are the same cluster the run's preflight described (environment.devices: every alive node,
its id and its device count, which the report's cross-checks hold to the cluster and preflight
records): a node dropped from a check's record, or recorded with other devices, while the run's
own description of its cluster still names it, is the same edit however the run claims to have
been started (issue 43's held-out round: G39, G42, G43 added --conformance-ray-address to the
recorded command line, which relaxes the node counts the manifest fixes, and dropped the bad node).

A record names its own identity and the run's bounds, which the rest of the report records too
(issue 43's held-out classes 3 and 4): a node a record names is a node of the run (TL-001, the
transport checks), a device type's record is that type's own (FR-015's cpu record copied over
simacc's named the cpu's objects), and a bound on Ray's machinery is stretched no further than the
run's own measurement (cluster.machinery, recomputed), however far the suite may stretch on a host
that measured slower (TR-019's wave, FR-012..016's fetch timeout, every recorded wait on Ray).

A reference `diff` reads as a witness of the host (each check's merit `references`) is a
measurement the run records beside its samples or copies from the sweep: PF-002's object store at
the largest size is the sweep's there, PF-001's object store and host copy medians at each size and
WL-001's are the medians of the trials beside them (held-out round 31: N31_05, N31_07, N31_08,
N31_10 lowered one alone, and the pair's host change excused a regression as the host's).

Pure: the report's checks in, the contradictions out. On a merged report (shards) the copies are
held over each shard's checks of the suite's plan and the node and stretch rules within each shard
by its own verification (`merged=True` turns those off here: conformance.signing.merged_evidence).
"""
from __future__ import annotations

import math
import re
from collections import Counter
from typing import Any, Mapping, Sequence

from conformance.catalog.scenario_bounds import FETCH_PARAM
from conformance.catalog.strict_input import as_map
from conformance.rdt.config import size_key
from conformance.sanitize import terminal
from conformance.signing.copied_timings import copied_timing_problems
from conformance.signing.machinery_evidence import GRANT_ROUNDING_S, unmeasured_factor_problems
from conformance.timing.host_load import MAX_FACTOR

SWEEP, LINK, STORE = "PF-001", "PF-002", "PF-003"


def _metrics(checks: Sequence[Any], check_id: str) -> Mapping[str, Any] | None:
    """The metrics of a passed check (a check that did not pass is its own finding)."""
    for entry in checks:
        c = as_map(entry)
        if c.get("id") == check_id and c.get("outcome") == "pass":
            return as_map(c.get("metrics"))
    return None


def _row(sweep: Mapping[str, Any], nbytes: object) -> Mapping[str, Any] | None:
    if isinstance(nbytes, bool) or not isinstance(nbytes, int):
        return None
    row = as_map(sweep.get("bandwidth")).get(size_key(nbytes))
    return row if isinstance(row, Mapping) else None


def _sizes(sweep: Mapping[str, Any]) -> list[int]:
    sizes = sweep.get("sizes_bytes")
    return sorted(s for s in sizes if isinstance(s, int) and not isinstance(s, bool)) if isinstance(sizes, list) else []


def _same(what: str, recorded: object, swept: object) -> str | None:
    if recorded != swept:
        return (f"{what} {terminal(repr(recorded), limit=80)} are not the sweep's "
                f"{terminal(repr(swept), limit=80)} ({SWEEP}): one measurement recorded twice must agree")
    return None


def same_measurement_problems(checks: Sequence[Any], merged: bool) -> list[str]:
    """PF-002's largest size and trials, PF-003's size and both its series of trials, held to the
    PF-001 sweep of the same run (when all of them passed)."""
    sweep = _metrics(checks, SWEEP)
    if merged or sweep is None:
        return []
    sizes = _sizes(sweep)
    problems: list[str] = []
    link = _metrics(checks, LINK)
    if link is not None and sizes:
        if link.get("largest_bytes") != sizes[-1]:
            problems.append(f"{LINK} largest_bytes {terminal(repr(link.get('largest_bytes')), limit=20)} is not the "
                            f"sweep's largest size {sizes[-1]} ({SWEEP})")
        else:
            row = _row(sweep, sizes[-1]) or {}
            problems.append(_same(f"{LINK} largest_size_trials_gbps", link.get("largest_size_trials_gbps"),
                                  row.get("trials_gbps")) or "")
            if "object_store_gbps" in link:   # recorded since 0.1.0+data.26 (a merit reference diff reads)
                problems.append(_same(f"{LINK} object_store_gbps", link.get("object_store_gbps"),
                                      row.get("object_store_median_gbps")) or "")
    store = _metrics(checks, STORE)
    if store is not None and sizes:
        held = [s for s in sizes if "object_store_trials_gbps" in (_row(sweep, s) or {})]
        if not held or store.get("bytes") != held[-1]:
            problems.append(f"{STORE} bytes {terminal(repr(store.get('bytes')), limit=20)} is not the largest size the "
                            f"sweep measured the object store at ({held[-1] if held else 'none'}, {SWEEP})")
        else:
            row = _row(sweep, held[-1]) or {}
            problems.append(_same(f"{STORE} rdt_trials_gbps", store.get("rdt_trials_gbps"), row.get("trials_gbps")) or "")
            problems.append(_same(f"{STORE} object_store_trials_gbps", store.get("object_store_trials_gbps"),
                                  row.get("object_store_trials_gbps")) or "")
    return [p for p in problems if p]


# ------------------------------------------------------------------------------ references beside their samples
# (issue 43's held-out round 31: N31_07, N31_08, N31_10) diff reads each check's merit `references` as a
# witness of the host: the furthest any moved between two runs is the pair's host change, which
# excuses every figure no same-run reference normalises. A reference the run records as the median
# of samples it records beside it is held to them (PF-003's object store by its judge, CC-010's host
# copy and star by theirs, PF-002's object store as the sweep's copy above); one whose samples the run
# does not record is the vendor's word, said so (UNRECOMPUTED_REFERENCES, FINDINGS.md round 31).
# check id -> (the reference's path, its samples' path, the rounding the run records them with)
REFERENCE_SAMPLES: dict[str, tuple[tuple[str, str, float], ...]] = {
    # conformance.measure.stats: the rate of the trials' median time, beside every trial's rate
    SWEEP: (("bandwidth.*.object_store_median_gbps", "bandwidth.*.object_store_trials_gbps", 0.0),
            ("bandwidth.*.clone_median_gbps", "bandwidth.*.clone_trials_gbps", 0.0)),
    # WorkloadSync.figures: the median of the unrounded rounds, rounded to 0.1 ms, beside the
    # rounds each rounded to 0.1 ms
    "WL-001": (("devices.*.median_store_round_seconds", "devices.*.store_round_seconds", 1.5e-4),),
}
# merit references no record of the run's own samples can recompute (none since the sweep records
# the host copy's trials beside its median: held-out N31_08)
UNRECOMPUTED_REFERENCES: dict[str, tuple[str, ...]] = {}


def reference_sample_problems(checks: Sequence[Any]) -> list[str]:
    """Each passed check's merit reference recorded beside its samples (REFERENCE_SAMPLES) is their
    median."""
    from conformance.signing.merit_diff import bind, is_number, resolve

    problems: list[str] = []
    for check_id, pairs in REFERENCE_SAMPLES.items():
        metrics = _metrics(checks, check_id)
        for summary_path, samples_path, rounding in pairs if metrics is not None else ():
            samples = resolve(metrics, samples_path)
            for keys, value in resolve(metrics, summary_path).items():
                trials = samples.get(keys)
                # none recorded (a release before the samples were kept: data.6's PF-001 object store,
                # data.26's host copy): nothing to recompute the summary from. A release that records
                # them requires them in its judge (PF-001: sweep_and_baselines_verified_by_the_method).
                if trials is None:
                    continue
                listed: list[Any] = trials if isinstance(trials, list) else []
                numbers = [float(t) for t in listed if is_number(t)]
                if numbers and len(numbers) == len(listed) and is_number(value) \
                        and _is_median(float(value), numbers, rounding):
                    continue
                problems.append(f"{check_id} {terminal(bind(summary_path, keys), limit=80)} "
                                f"{terminal(repr(value), limit=30)} is not the median of its own "
                                f"{terminal(bind(samples_path, keys), limit=80)} {terminal(repr(trials), limit=80)}: a "
                                "reference diff reads as the host's is the measurement it summarises")
    return problems[:4]


def _is_median(value: float, samples: list[float], rounding: float) -> bool:
    """`value` is the samples' middle one (an odd count), or lies between the two middle ones (an
    even count: their mean, or the rate of the trials' median time, which conformance.measure.stats
    records and which is their harmonic mean), up to the rounding the run records them with."""
    ordered = sorted(samples)
    low, high = ordered[(len(ordered) - 1) // 2], ordered[len(ordered) // 2]
    slack = rounding + 1e-9 * max(abs(low), abs(high)) + 1e-12
    return low - slack <= value <= high + slack


# check id -> (its record of the cluster's nodes, whether it names every node or those with devices)
NODE_RECORDS = {"DP-006": ("device_counts", False), "DP-007": ("node_types", True), "DP-009": ("devices_by_node", True)}
SHORT_ID = 8   # the node id characters a check's record keys a node by


def _cluster_nodes(environment: Mapping[str, Any]) -> dict[str, float] | None:
    """environment.devices.nodes as short node id -> devices (None: not recorded, nothing to hold to)."""
    nodes = as_map(environment.get("devices")).get("nodes")
    if not isinstance(nodes, list) or not nodes:
        return None
    out: dict[str, float] = {}
    for n in nodes:
        node, count = as_map(n).get("node_id"), as_map(n).get("count")
        if not isinstance(node, str) or isinstance(count, bool) or not isinstance(count, (int, float)):
            return None
        out[node[:SHORT_ID]] = float(count)
    return out


def same_nodes_problems(checks: Sequence[Any], environment: Mapping[str, Any], merged: bool) -> list[str]:
    """DP-006's, DP-007's and DP-009's node records name the nodes of the run's own description of
    its cluster, with its device counts (when they passed)."""
    cluster = None if merged else _cluster_nodes(environment)
    if cluster is None:
        return []
    problems: list[str] = []
    for check_id, (name, with_devices_only) in NODE_RECORDS.items():
        metrics = _metrics(checks, check_id)
        record = as_map(metrics.get(name)) if metrics is not None else None
        if not record:
            continue
        want = {k: v for k, v in cluster.items() if v > 0 or not with_devices_only}
        if sorted(map(str, record)) != sorted(want):
            problems.append(f"{check_id} {name} names nodes {terminal(sorted(map(str, record)), limit=80)}; the run's "
                            f"description of its cluster (environment.devices) has {sorted(want)}")
        elif check_id != "DP-007" and any(record[k] != want[k] for k in want):
            problems.append(f"{check_id} {name} records {terminal(dict(record), limit=80)}; environment.devices gives "
                            f"{want}")
    return problems


# ------------------------------------------------------------------------------ a record's own identity
# (issue 43's held-out T07, X10, E01): a node a record names is a node of the run, a node's record
# is that node's, and a device type's record is that type's own.
TOPOLOGY_NODES = "TL-001"
NODE_LISTS_AREA = "TR-"   # the transport checks ran on the run's own cluster: their per-type `nodes` name its nodes
# an object's id as Ray prints it (ObjectRef(...)): its task's 24 bytes, then its 4-byte little-endian
# index (a small one: "01000000"); a node's or an actor's id, which two types' errors may share, is not one
RAY_OBJECT_ID = re.compile(r"(?<![0-9a-f])[0-9a-f]{50}000000(?![0-9a-f])")


def _environment_nodes(environment: Mapping[str, Any]) -> dict[str, Mapping[str, Any]] | None:
    """environment.devices.nodes as full node id -> its labels (None: not recorded)."""
    nodes = as_map(environment.get("devices")).get("nodes")
    if not isinstance(nodes, list) or not nodes:
        return None
    out: dict[str, Mapping[str, Any]] = {}
    for n in nodes:
        node = as_map(n).get("node_id")
        if isinstance(node, str) and node:
            out[node] = as_map(as_map(n).get("labels"))
    return out or None


def _per_type(metrics: Mapping[str, Any]) -> dict[str, Mapping[str, Any]]:
    """{device type: its record} (conformance.rdt.each_device: metrics[<type>] with several types,
    the metrics themselves with one)."""
    devices = metrics.get("devices")
    if not isinstance(devices, list):
        return {}
    if len(devices) == 1 and not isinstance(metrics.get(str(devices[0])), Mapping):
        return {str(devices[0]): metrics}
    return {str(d): rec for d in devices if isinstance(rec := metrics.get(str(d)), Mapping)}


def identity_problems(checks: Sequence[Any], environment: Mapping[str, Any], merged: bool) -> list[str]:
    """TL-001's node records are keyed by nodes of the run (environment.devices.nodes), each with
    that node's own labels; the transport checks' per-type `nodes` are short ids of the run's
    nodes; and no device type's record of a check is another type's (copied_type_problems)."""
    problems: list[str] = []
    nodes = None if merged else _environment_nodes(environment)
    if nodes is not None:
        topo = _metrics(checks, TOPOLOGY_NODES)
        for node, rec in as_map(topo.get("nodes") if topo is not None else None).items():
            labels, own = as_map(as_map(rec).get("labels")), nodes.get(str(node))
            if own is None:
                problems.append(f"{TOPOLOGY_NODES} records node {terminal(str(node), limit=60)}, which is not a node of the "
                                "run (environment.devices)")
                continue
            wrong = sorted(k for k, v in labels.items() if k in own and own[k] != v)
            if labels.get("ray.io/node-id", node) != node or wrong:
                problems.append(f"{TOPOLOGY_NODES} node {str(node)[:SHORT_ID]}'s record has labels "
                                f"{terminal({k: labels.get(k) for k in wrong or ['ray.io/node-id']}, limit=120)}; the node's "
                                f"own (environment.devices) are {terminal({k: own.get(k) for k in wrong}, limit=120)}")
        short = {n[:SHORT_ID] for n in nodes}
        for entry in checks:
            c = as_map(entry)
            if not str(c.get("id", "")).startswith(NODE_LISTS_AREA) or c.get("outcome") != "pass":
                continue
            for d, rec in _per_type(as_map(c.get("metrics"))).items():
                named = rec.get("nodes")
                odd = [str(x) for x in named if str(x)[:SHORT_ID] not in short] if isinstance(named, list) else []
                if odd:
                    problems.append(f"{c.get('id')} on {d} names node(s) {terminal(odd, limit=80)}, not nodes of the run "
                                    f"(environment.devices: {sorted(short)})")
    problems += copied_type_problems(checks)
    problems += copied_timing_problems(checks, _per_type)
    return problems


RESTART_CHECK = "FR-006"   # its node signatures: the nodes the suite starts from the manifest, before and after a fresh start


def restart_signature_problems(checks: Sequence[Any], environment: Mapping[str, Any], remote: bool) -> list[str]:
    """FR-006's node signatures are the run's nodes: the cluster it shuts down and starts again is
    started from the manifest's own nodes, as the one environment.devices describes, so the nodes
    with devices it records before the shutdown are those nodes, each with its own labels (as a
    multiset, node ids aside: the fresh cluster's ids are new). A record of one node twice passed
    for two (held-out round 34, L1: node a's signature twice, node b back with 3 devices). Not on
    the vendor's cluster (FR-006 starts none there), nor without the environment's node list."""
    entry = next((as_map(e) for e in checks if as_map(e).get("id") == RESTART_CHECK), {})
    nodes = as_map(environment.get("devices")).get("nodes")
    before = as_map(entry.get("metrics")).get("before")
    if remote or entry.get("outcome") != "pass" or not isinstance(nodes, list) or not isinstance(before, list) \
            or not all(isinstance(s, Mapping) for s in before):   # releases before data.7 wrote signatures as text
        return []

    def signature(devices: object, labels: object) -> tuple[float, tuple[tuple[str, str], ...]]:
        count = float(devices) if isinstance(devices, (int, float)) and not isinstance(devices, bool) else 0.0
        return count, tuple(sorted((str(k), str(v)) for k, v in as_map(labels).items() if k != "ray.io/node-id"))

    recorded = Counter(signature(as_map(s).get("devices"), as_map(s).get("labels")) for s in before)
    own = Counter(signature(as_map(n).get("count"), as_map(n).get("labels")) for n in nodes)
    recorded, own = (Counter({k: v for k, v in c.items() if k[0] > 0}) for c in (recorded, own))
    if recorded == own:
        return []

    def shown(c: Counter[tuple[float, tuple[tuple[str, str], ...]]]) -> str:
        return terminal([{**dict(k[1]), "devices": k[0]} for k in c.elements()], limit=160)
    return [f"{RESTART_CHECK}'s node signatures before its shutdown are not the run's nodes (environment.devices): "
            f"it lacks {shown(own - recorded)} and records {shown(recorded - own)} instead"]


def _error_ids(value: object, out: set[str]) -> set[str]:
    """The Ray objects every `error` text in `value` (at any depth) names."""
    if isinstance(value, Mapping):
        for k, v in value.items():
            if k == "error" and isinstance(v, str):
                out.update(RAY_OBJECT_ID.findall(v))
            else:
                _error_ids(v, out)
    elif isinstance(value, list):
        for v in value:
            _error_ids(v, out)
    return out


def copied_type_problems(checks: Sequence[Any]) -> list[str]:
    """A passed check whose record of one device type is another type's: its error names the Ray
    object another type's error names (issue 43's held-out E01: FR-015's cpu record copied over
    simacc's). Records of counts alone are alike on every type by design: only the run's own ids
    tell a copy."""
    problems: list[str] = []
    for entry in checks:
        c = as_map(entry)
        if c.get("outcome") != "pass":
            continue
        records = _per_type(as_map(c.get("metrics")))
        seen: dict[str, str] = {}
        for d, rec in records.items():
            ids = _error_ids(rec, set())
            other = next((seen[i] for i in sorted(ids) if i in seen), None)
            if other is not None:
                problems.append(f"{c.get('id')}'s record on {d} names the Ray object its record on {other} names in its "
                                "error: one object is never received on two device types (each type's evidence is its own)")
            seen.update({i: d for i in ids if i not in seen})
    return problems


# ------------------------------------------------------------------------------ bounds the run stretched
# (issue 43's held-out X07/G29, R07): a bound on Ray's machinery is stretched at most by the factor
# the run itself recorded (cluster.machinery: what it measured), which is recomputed from its
# measurements; a run that recorded none stretched nothing.
FACTOR_ROUNDING = 0.005        # knob: cluster.machinery.factor is recorded to 2 decimals, no threshold
SECONDS_ROUNDING = 0.05        # knob: TR-019 records its wave bound to 0.1 s, no threshold
WAVE = ("TR-019", "all_bound_s")


def run_factor(cluster: Mapping[str, Any]) -> tuple[float, str | None]:
    """(the factor the run stretched its bounds on Ray's machinery by, why its record cannot be
    believed): cluster.machinery.factor, which must be what its slowest_s over nominal_s give
    (conformance.timing.host_load.MachineryRecord.factor); 1.0 when the run recorded none."""
    machinery = cluster.get("machinery")
    if machinery is None:
        return 1.0, None
    rec = as_map(machinery)
    slowest, nominal, factor = as_map(rec.get("slowest_s")), as_map(rec.get("nominal_s")), rec.get("factor")
    ratios = []
    for kind, raw in slowest.items():
        seconds, base = _seconds(raw), _seconds(nominal.get(kind))
        if seconds is None or not base:
            return 1.0, f"cluster.machinery records slowest_s.{terminal(str(kind), limit=20)} without its nominal_s"
        ratios.append(seconds / base)
    derived = min(MAX_FACTOR, max([1.0, *ratios]))
    recorded = _seconds(factor)
    if recorded is None or abs(recorded - derived) > FACTOR_ROUNDING + 1e-9:
        return derived, (f"cluster.machinery.factor {terminal(repr(factor), limit=20)} is not what its slowest_s over "
                         f"nominal_s give ({derived:.2f})")
    return recorded, None


def _seconds(value: object) -> float | None:
    """A finite non-negative number (seconds, a factor), else None."""
    if isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value) and value >= 0:
        return float(value)
    return None


def _fetch_checks(checks: Sequence[Any]) -> list[str]:
    """The checks that ran under the suite's lowered RDT fetch timeout: those whose params name it."""
    return [str(as_map(e).get("id")) for e in checks if FETCH_PARAM in as_map(as_map(e).get("params"))]


def _param(checks: Sequence[Any], check_id: str, name: str) -> tuple[Mapping[str, Any] | None, float | None]:
    metrics = _metrics(checks, check_id)
    entry = next((as_map(e) for e in checks if as_map(e).get("id") == check_id), {})
    value = as_map(entry.get("params")).get(name)
    return metrics, _seconds(value)


def ray_wait_problems(checks: Sequence[Any], factor: float) -> list[str]:
    """Every wait on Ray's machinery a passed check records used a factor no larger than the run's
    own and was granted no more than its bound stretched by it (conformance.run.machinery stretches
    by the run's measurement then, which only grows; timing/owned holds each wait alone to x
    MAX_FACTOR, the widest any run may stretch)."""
    problems: list[str] = []
    most = factor + FACTOR_ROUNDING
    for entry in checks:
        c = as_map(entry)
        waits = as_map(as_map(c.get("metrics")).get("waits")).get("each") if c.get("outcome") == "pass" else None
        for w in waits if isinstance(waits, list) else []:
            w = as_map(w)
            used, bound, granted = _seconds(w.get("factor", 1.0)), _seconds(w.get("bound_s")), _seconds(w.get("granted_s"))
            if w.get("owner") != "ray" or used is None or bound is None or granted is None:
                continue   # timing/owned names a malformed wait
            if used > most or granted > bound * most + GRANT_ROUNDING_S:
                problems.append(f"{c.get('id')}'s wait on Ray's machinery {terminal(str(w.get('what')), limit=60)!r} was "
                                f"stretched x{used:g} to {granted:g} s; the run's own factor is x{factor:g} (cluster.machinery)")
                break
    return problems[:4]


def stretch_problems(checks: Sequence[Any], cluster: Mapping[str, Any], remote: bool, merged: bool) -> list[str]:
    """TR-019's wave bound on each type, every wait on Ray's machinery, and on a cluster the suite
    started the RDT fetch timeout FR-012..FR-016 ran with, no wider than their param (bound)
    stretched by the run's own factor."""
    if merged:
        return []
    factor, wrong = run_factor(cluster)
    problems = [wrong] if wrong else unmeasured_factor_problems(checks, factor)
    most = factor + FACTOR_ROUNDING
    metrics, bound = _param(checks, *WAVE)
    if metrics is not None and bound is not None:
        for d, rec in _per_type(metrics).items():
            got = _seconds(rec.get(WAVE[1]))
            if got is not None and got > bound * most + SECONDS_ROUNDING:
                problems.append(f"{WAVE[0]} on {d} bounded its wave by {got:g} s; {WAVE[1]} {bound:g} s stretches at most "
                                f"by the run's own factor x{factor:g} (cluster.machinery)")
    problems += ray_wait_problems(checks, factor)
    if not remote:   # on the vendor's own cluster the timeout is its raylets' (at most x MAX_FACTOR: the judges)
        for check_id in _fetch_checks(checks):
            metrics, param = _param(checks, check_id, FETCH_PARAM)
            fetch = _seconds(as_map(as_map(metrics).get("transport")).get("rdt_fetch_timeout_s"))
            if param is not None and fetch is not None and fetch > param * most + 1e-6:
                problems.append(f"{check_id} ran with an RDT fetch timeout of {fetch:g} s on a cluster the suite started; "
                                f"rdt_fetch_timeout_s {param:g} s stretches at most by the run's own factor x{factor:g}")
    return problems
