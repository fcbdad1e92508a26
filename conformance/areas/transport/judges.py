"""The transport area's judges: each check's recorded evidence + the release's params -> its outcome.

The checklist names a check's judge (`judge: <function name>`); the live check decides with it
(CheckContext.decide) and `verify` decides again with it (conformance/report/judges.py says the
rules every judge keeps). Pure: no Ray, no clock, no I/O.
"""
from __future__ import annotations

import contextlib
import functools
import re
import statistics
from typing import Any, Iterator, Mapping

from conformance.rdt.config import INTRA_NODE_ENDPOINTS, LATER_DEVICE_BYTES, builtin_traits, recorded_max_bytes
from conformance.rdt.device import is_host
from conformance.rdt.payloads import ALL_DTYPES, CONTAINERS, CORE_DTYPES, SHAPES, VIEW_DTYPES, VIEWS
from conformance.report.judges import FAIL, PASS, JudgeTable, MissingEvidence, Verdict, agrees, number, param_value, path_of
from conformance.timing.host_load import MAX_FACTOR

JUDGES = JudgeTable()

# What the checks do, shared with them (the live check imports these, so its record and its
# judge cannot drift apart): counts of cases and transfers the code fixes, and step labels.
PAIR = 2                       # endpoints of a transfer
METADATA_EXTRA_CASES = 5       # TR-005: four float32 shape classes and a container beside one case per dtype
CROSS_NODE_ENDPOINTS = 2       # TR-006: two endpoints on two nodes
CROSS_NODE_CASES = 5           # TR-006: four payloads there, one back
CONCURRENT_ROUNDS = 2          # TR-007: every ordered pair of endpoints, twice
SAME_REF_RECEIVES = ("first", "second (same consumer)", "twice in one call [0]", "twice in one call [1]")
ANOTHER_CONSUMER = "another consumer"
DRIVER_GET, DRIVER_GET_STORE, DRIVER_PUT = "ray.get", "ray.get(_use_object_store=True)", "driver ray.put -> actor"
RETURNED = "returned bit-exact"
SIDEDNESS_TRANSFERS = 4        # TR-010
EXTRACT_CASES = ("float32/4-d", "bfloat16/odd-7", "container/list-mixed", "float32/transpose")   # TR-011
GC_OBJECTS = 7                 # TR-012: five moved, one never received, one received twice
RECEIVER_KILLED = "the caller of a receiver killed before the transfer"
RECEIVER_DIED = "the caller of a receiver that died mid-transfer"
RECOVERY_PHASES = ("killed before the transfer", "died during the transfer")
SOURCE_KEPT_STEPS = ("the same object sent to a new receiver", "a new object to the new receiver")   # can abort
NEW_PAIR_STEPS = ("a transfer between new actors",)   # cannot abort (or a collective group): Ray ends both actors
PRODUCER_ERROR_STEPS = ("a consumer on another actor", "a consumer on the producing actor", "the driver's ray.get",
                        "a transfer after the producer's error", "an intra-actor transfer after the producer's error",
                        "a consumer of a producer retried once", "a consumer of a producer whose retries ran out",
                        "a transfer after the retries ran out")
RETRY_ATTEMPTS = 2             # TR-016: a failed attempt and one retry
OWNERSHIP_STEPS = ("the receiver keeping a tensor", "the source to free the object once every ref is gone",
                   "the kept tensor after the source freed the object and produced and sent others",
                   "a receive whose ref was dropped before it finished",
                   "the source to free an object dropped before its receive finished",
                   "the source to free an object whose ref was dropped before it existed",
                   "a transfer after a ref was dropped before its object existed",
                   "the kept tensor after the source died")
LATER_OBJECT = "later object "
USER_REF_STEPS = ("the end of a chain of three actors", "an actor consuming its own ref",
                  "a tensorless return at another actor", "a tensorless return fetched by the driver")
BORROWER_STEPS = ("a second actor borrowing refs passed in a list", "a third actor borrowing refs passed in a list")
BUSY_SENDER_STEP = "a transfer while its sender is busy"
USER_TIMEOUT_GETS = ("ray.get(ref, timeout)", "ray.get of a consumer, timeout")
FETCH_STEPS = ("ray.get of the refs at once in the driver", *USER_TIMEOUT_GETS, "the consumer once the producer ran",
               "a receiver without the transport")
EXCLUDED_SLACK_S = 1.0   # knob: rounding and bookkeeping between a scenario's exclusions and the waits it records
# knob: a step's record times the driver's own work around its bounded wait too (submitting, reading
# back, comparing digests): the live wait itself fails the step at its bound; on a loaded 2-core
# host a step whose wait returned in time was timed 16.9 s for its 15 s bound (TR-020, make test)
STEP_READ_SLACK = 1.25
WAVE_STRETCH_MAX = 2 * MAX_FACTOR   # a wave's bound stretched by the run's measurement, then once more by a fresh sample


# ------------------------------------------------------------------------------ every declared type
class Refused(Exception):
    """The evidence shows a failure (or a claim the manifest or the release contradicts): the reason."""


def refusing(fn: Any) -> Any:
    """A judge body that may raise Refused (its reason is the fail verdict's)."""
    @functools.wraps(fn)
    def judge(m: Mapping[str, Any], p: Mapping[str, Any], manifest: Mapping[str, Any]) -> Verdict:
        try:
            return fn(m, p, manifest)
        except Refused as exc:
            return Verdict(FAIL, str(exc))
    return judge


class TypeFailures:
    """Each declared type's failure, so a verdict names every type that fails, not the first."""

    def __init__(self) -> None:
        self.reasons: list[str] = []

    @contextlib.contextmanager
    def on(self, device: str) -> Iterator[None]:
        try:
            yield
        except Refused as exc:
            self.reasons.append(str(exc))

    def end(self) -> None:
        if self.reasons:
            raise Refused(" | ".join(self.reasons))


def declared_devices(manifest: Mapping[str, Any]) -> list[str]:
    """The device types the manifest's transport declares (transport.devices; the host's when none)."""
    t = manifest.get("transport") if isinstance(manifest, Mapping) else None
    devices = t.get("devices") if isinstance(t, Mapping) else None
    return [str(d) for d in devices] if isinstance(devices, list) and devices else ["cpu"]


def per_type(m: Mapping[str, Any], manifest: Mapping[str, Any]) -> dict[str, Mapping[str, Any]]:
    """{device type: its evidence} for every type the check exercised (conformance.rdt.each_device:
    with several declared types each type's evidence is metrics[<type>], with one it is the
    metrics themselves). Every declared type must be exercised or recorded not applicable with
    its reason; a type the manifest does not declare is not evidence of it."""
    declared = declared_devices(manifest)
    exercised = m.get("devices")
    if not isinstance(exercised, list) or not all(isinstance(d, str) for d in exercised):
        raise MissingEvidence("metric devices (the device types exercised) is missing or not a list of names")
    skipped = m.get("not_applicable_on", {})
    if not isinstance(skipped, Mapping):
        raise MissingEvidence("metric not_applicable_on is not an object")
    stray = sorted((set(exercised) | set(skipped)) - set(declared))
    if stray:
        raise Refused(f"the evidence names device type(s) {stray} the manifest's transport.devices {declared} does not declare")
    if len(set(exercised)) != len(exercised):
        raise Refused(f"devices {exercised} names a type twice")
    for d in declared:
        if d not in exercised and not (isinstance(skipped.get(d), str) and skipped[d].strip()):
            raise Refused(f"the declared device type {d} was neither exercised nor recorded not applicable with a reason "
                          f"(devices: {exercised})")
    if not exercised:
        raise Refused(f"no declared device type was exercised (not applicable on {sorted(skipped)})")
    nested = len(declared) > 1
    out: dict[str, Mapping[str, Any]] = {}
    for d in exercised:
        record = m.get(d) if nested else m
        if not isinstance(record, Mapping) or not record:
            raise MissingEvidence(f"metric {d} (the evidence on {d}) is missing")
        out[d] = record
    return out


def total_agrees(m: Mapping[str, Any], records: Mapping[str, Mapping[str, Any]], name: str) -> float:
    """The top-level `name` (the figure over every type) and its agreement with the per-type figures."""
    total = number(m, name)
    if len(records) > 1 or next(iter(records.values())) is not m:
        parts = sum(number(r, name) for r in records.values())
        if not agrees(total, parts):
            raise Refused(f"{name} is {total:g} over every type but the types' own figures add up to {parts:g}")
    return total


def names(record: Mapping[str, Any], key: str) -> list[str]:
    value = record.get(key)
    if not isinstance(value, list) or not all(isinstance(x, str) for x in value):
        raise MissingEvidence(f"metric {key} is missing or not a list of names")
    return value


def count_of(record: Mapping[str, Any], key: str) -> int:
    got = number(record, key)
    if got != int(got) or got < 0:
        raise Refused(f"{key} is {got:g}, not a count")
    return int(got)


def no_mismatch(d: str, record: Mapping[str, Any], what: str) -> None:
    """`wrong` (the cases whose received bytes differ from the sent ones) must be 0."""
    wrong = count_of(record, "wrong")
    if wrong:
        shown = record.get("failures")
        detail = f": {'; '.join(str(x) for x in shown[:4])}" if isinstance(shown, list) and shown else ""
        raise Refused(f"on {d}: {wrong} of {number(record, 'cases'):g} {what}{detail}")


def errors_of(d: str, record: Mapping[str, Any], key: str = "errors") -> None:
    errs = record.get(key, [])
    if not isinstance(errs, list):
        raise MissingEvidence(f"metric {key} is not a list")
    if errs:
        raise Refused(f"on {d}: {len(errs)} transfer(s) raised: {'; '.join(str(e) for e in errs[:3])}")


def trait(record: Mapping[str, Any], name: str, manifest: Mapping[str, Any]) -> bool:
    """A recorded trait of the transport (`one_sided`: its is_one_sided(); `can_abort`: its
    can_abort_transport()), held to what Ray fixes when the manifest names a built-in transport
    (conformance.rdt.config.BUILTIN_TRAITS). A vendor's own transport's traits are what its class
    returned: the manifest declares none, so the judges that branch on one also hold it to the
    evidence of that branch (the steps the live check runs only for that trait, the calls Ray makes
    only for it) and verify holds every record of it in the report to the others (signing/evidence.py
    transport_trait_problems): a trait flipped in one record to make a judge lenient contradicts the rest."""
    value = record.get(name)
    if not isinstance(value, bool):
        raise MissingEvidence(f"metric {name} is missing or not a bool")
    fixed = builtin_traits(manifest)
    if fixed is not None and fixed[name] != value:
        raise Refused(f"{name} is {value} but Ray's built-in {str(path_of(manifest, 'transport.name')).upper()} "
                      f"returns {fixed[name]}")
    return value


def sidedness(record: Mapping[str, Any], manifest: Mapping[str, Any]) -> bool:
    """The recorded sidedness (the transport's is_one_sided), held as `trait` says: TR-009 and
    TR-010 judge it by what the driver saw and by the calls Ray made (a one-sided transport's
    source never sends), so their records are the behaviour that shows it."""
    return trait(record, "one_sided", manifest)


def run_max_bytes(m: Mapping[str, Any]) -> int:
    """The largest payload the run's evidence must show (conformance.rdt.config.recorded_max_bytes:
    the release's, unless the check records the run's size knob)."""
    try:
        return recorded_max_bytes(m)
    except ValueError as exc:
        raise Refused(str(exc)) from None


def devices_per_node(manifest: Mapping[str, Any]) -> int | None:
    """The accelerator units a node offers, as the manifest declares them (None: not declared)."""
    n = path_of(manifest, "accelerator.expected.devices_per_node") if isinstance(manifest, Mapping) else None
    return n if isinstance(n, int) and not isinstance(n, bool) and n > 0 else None


def intra_node_endpoints(d: str, manifest: Mapping[str, Any]) -> tuple[int, int]:
    """(fewest, most) endpoints a check that asks for INTRA_NODE_ENDPOINTS on one node gets on type
    `d` (conformance.rdt.context.intra_node): all of them on the host; on a device as many as the
    node's units allow, which the manifest's accelerator.expected.devices_per_node fixes when it
    declares it."""
    if is_host(d):
        return INTRA_NODE_ENDPOINTS, INTRA_NODE_ENDPOINTS
    units = devices_per_node(manifest)
    if units is None:
        return PAIR, INTRA_NODE_ENDPOINTS
    n = min(INTRA_NODE_ENDPOINTS, units)
    return n, n


def endpoints_as_the_node_allows(d: str, r: Mapping[str, Any], manifest: Mapping[str, Any]) -> int:
    n = count_of(r, "endpoints")
    lo, hi = intra_node_endpoints(d, manifest)
    if not lo <= n <= hi:
        want = f"{lo}" if lo == hi else f"{lo} to {hi}"
        raise Refused(f"on {d}: {n} endpoint(s) on one node; the check starts {want} there (at most "
                      f"{INTRA_NODE_ENDPOINTS}, as many as the manifest's devices_per_node allows)")
    return n


def first_type_payload(d: str, param_bytes: float, m: Mapping[str, Any], manifest: Mapping[str, Any]) -> int:
    """The payload a usage check moves on type `d` (UsageCtx.payload_bytes): the param's, capped
    by the run's size knob, on the first declared type; the smallest real payload
    (LATER_DEVICE_BYTES) on the later ones when that is smaller."""
    nbytes = min(int(param_bytes), run_max_bytes(m))
    return nbytes if d == declared_devices(manifest)[0] else min(nbytes, LATER_DEVICE_BYTES)


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
    and the device probe of both ends or of neither: a series left out is not one that stayed flat."""
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


@JUDGES.rule(needs=("actor_has_transport_max_latency_s",), params=("max_answer_s",), decides_all=False)
def transport_query_answers_in_time(m: Mapping[str, Any], p: Mapping[str, Any], manifest: Mapping[str, Any]) -> Verdict:
    slow, bound = number(m, "actor_has_transport_max_latency_s"), param_value(p, "max_answer_s")
    if slow > bound:
        return Verdict(FAIL, f"actor_has_tensor_transport took {slow:.2f}s to answer (bound {bound:g} s); Ray asks "
                             "on every .remote() with the transport")
    return Verdict(PASS, f"answers within {bound:g} s")


# ------------------------------------------------------------------------------ data (TR-001 .. TR-009)
PROBE_ERROR = re.compile(r"^[A-Za-z_][A-Za-z0-9_.]*: ")   # the endpoint's probe records "<exception type>: <message>"


def unsupported_dtypes_plausible(d: str, r: Mapping[str, Any], unsupported: Mapping[str, Any]) -> None:
    """What a device may not hold (conformance.rdt.endpoint.supported_dtypes probes it: a dtype the
    device refuses is recorded with the exception that refused it): never a dtype of the release
    outside its list, never one on the host (torch holds every dtype of the release there), never
    one of the dtypes the requirement says every device holds (CORE_DTYPES: then the device fails
    TR-001, it is not excused from it), and each with the probe's own form of reason. The record
    of the core dtypes the probe found unsupported must agree."""
    stray = sorted(set(unsupported) - set(ALL_DTYPES))
    if stray:
        raise Refused(f"on {d}: unsupported_by_device names {stray}, not dtypes of the release")
    if unsupported and is_host(d):
        raise Refused(f"on {d}: dtypes {sorted(unsupported)} recorded unsupported on the host, where torch holds every "
                      "dtype of the release")
    core = [x for x in CORE_DTYPES if x in unsupported]
    if core:
        raise Refused(f"on {d}: the device does not hold {core}; the requirement asks every device for {list(CORE_DTYPES)}")
    if r.get("core_dtypes_unsupported", []) != core:
        raise Refused(f"on {d}: core_dtypes_unsupported {r.get('core_dtypes_unsupported')} is not {core}")
    odd = sorted(x for x, why in unsupported.items() if not PROBE_ERROR.match(str(why)))
    if odd:
        raise Refused(f"on {d}: dtypes {odd} recorded unsupported without the probe's error "
                      f"(e.g. {str(unsupported[odd[0]])[:80]!r})")


@JUDGES.rule(needs=("devices", "cases", "wrong"))
@refusing
def every_dtype_and_shape_bit_exact(m: Mapping[str, Any], p: Mapping[str, Any], manifest: Mapping[str, Any]) -> Verdict:
    records = per_type(m, manifest)
    total_agrees(m, records, "cases")
    total_agrees(m, records, "wrong")
    found = TypeFailures()
    for d, r in records.items():
        with found.on(d):
            dtypes, shapes = names(r, "dtypes"), names(r, "shapes")
            unsupported = r.get("unsupported_by_device", {})
            if not isinstance(unsupported, Mapping):
                raise MissingEvidence("metric unsupported_by_device is not an object")
            missing = [x for x in ALL_DTYPES if x not in dtypes and not (isinstance(unsupported.get(x), str) and unsupported[x])]
            if missing:
                raise Refused(f"on {d}: dtypes {missing} were neither moved nor recorded unsupported by the device with why")
            if set(dtypes) & set(unsupported):
                raise Refused(f"on {d}: dtypes {sorted(set(dtypes) & set(unsupported))} recorded both moved and unsupported")
            unsupported_dtypes_plausible(d, r, unsupported)
            if set(shapes) != set(SHAPES):
                raise Refused(f"on {d}: shape classes {sorted(shapes)} are not the release's {sorted(SHAPES)}")
            if count_of(r, "cases") != len(dtypes) * len(shapes):
                raise Refused(f"on {d}: {r['cases']} case(s) recorded for {len(dtypes)} dtype(s) x {len(shapes)} shape(s)")
            no_mismatch(d, r, "dtype x shape payloads did not arrive bit-exact")
    found.end()
    return Verdict(PASS, f"every dtype x shape bit-exact on {sorted(records)}")


@JUDGES.rule(needs=("devices", "cases", "wrong"))
@refusing
def every_view_as_its_values(m: Mapping[str, Any], p: Mapping[str, Any], manifest: Mapping[str, Any]) -> Verdict:
    records = per_type(m, manifest)
    total_agrees(m, records, "cases")
    total_agrees(m, records, "wrong")
    found = TypeFailures()
    for d, r in records.items():
        with found.on(d):
            views, dtypes = names(r, "views"), names(r, "dtypes")
            if set(views) != set(VIEWS) or set(dtypes) != set(VIEW_DTYPES):
                raise Refused(f"on {d}: views {sorted(views)} x dtypes {sorted(dtypes)} are not the release's "
                              f"{sorted(VIEWS)} x {sorted(VIEW_DTYPES)}")
            if count_of(r, "cases") != len(views) * len(dtypes):
                raise Refused(f"on {d}: {r['cases']} case(s) recorded for {len(views)} view(s) x {len(dtypes)} dtype(s)")
            no_mismatch(d, r, "non-contiguous views did not arrive as their logical values")
    found.end()
    return Verdict(PASS, f"every view arrived as its values on {sorted(records)}")


@JUDGES.rule(needs=("devices", "cases", "wrong"))
@refusing
def every_container_intact(m: Mapping[str, Any], p: Mapping[str, Any], manifest: Mapping[str, Any]) -> Verdict:
    records = per_type(m, manifest)
    total_agrees(m, records, "cases")
    total_agrees(m, records, "wrong")
    want = {f"container/{c}" for c in CONTAINERS}
    found = TypeFailures()
    for d, r in records.items():
        with found.on(d):
            moved = names(r, "containers")
            if set(moved) != want or count_of(r, "cases") != len(moved):
                raise Refused(f"on {d}: containers {sorted(moved)} ({r['cases']} case(s)) are not the release's {sorted(want)}")
            no_mismatch(d, r, "returns with several tensors and nested containers did not arrive with the same structure and bytes")
    found.end()
    return Verdict(PASS, f"every container arrived intact on {sorted(records)}")


@JUDGES.rule(needs=("devices", "max_bytes", "cases", "wrong"))
@refusing
def large_tensor_bit_exact(m: Mapping[str, Any], p: Mapping[str, Any], manifest: Mapping[str, Any]) -> Verdict:
    records = per_type(m, manifest)
    total_agrees(m, records, "cases")
    total_agrees(m, records, "wrong")
    size = number(m, "max_bytes")
    release = run_max_bytes(m)
    if size != release:
        raise Refused(f"max_bytes {size:.0f}: the run's largest payload is {release} bytes (the release's, unless the record "
                      "says the run's size knob set another)")
    found = TypeFailures()
    for d, r in records.items():
        with found.on(d):
            moved = number(r, "bytes")
            if moved != size or count_of(r, "cases") != 1:
                raise Refused(f"on {d}: {r['cases']} tensor(s) of {moved:g} bytes moved; the run's largest payload is "
                              f"{size:g} bytes, one tensor")
            no_mismatch(d, r, f"transfers: a {moved:g}-byte tensor did not arrive bit-exact")
    found.end()
    return Verdict(PASS, f"a {size:g}-byte tensor arrived bit-exact on {sorted(records)}")


@JUDGES.rule(needs=("devices", "cases", "wrong"))
@refusing
def received_metadata_as_sent(m: Mapping[str, Any], p: Mapping[str, Any], manifest: Mapping[str, Any]) -> Verdict:
    records = per_type(m, manifest)
    total_agrees(m, records, "cases")
    total_agrees(m, records, "wrong")
    found = TypeFailures()
    for d, r in records.items():
        with found.on(d):
            dtypes = names(r, "dtypes")
            if "float32" not in dtypes or set(dtypes) - set(ALL_DTYPES):
                raise Refused(f"on {d}: dtypes {dtypes} are not among the release's (float32 included)")
            if count_of(r, "cases") != len(dtypes) + METADATA_EXTRA_CASES:
                raise Refused(f"on {d}: {r['cases']} case(s) recorded; {len(dtypes)} dtype(s) + {METADATA_EXTRA_CASES} shapes "
                              "and a container are the release's")
            no_mismatch(d, r, "cases: received tensors do not have the sent dtype, shape and device type")
            if d == "cpu":
                continue
            current = r.get("current_device")
            if not isinstance(current, Mapping):
                raise MissingEvidence(f"metric current_device (on {d}) is missing")
            if isinstance(current.get("not_run"), str) and current["not_run"]:
                continue
            for index in (1, 0):
                seen = current.get(f"current_{index}")
                if not isinstance(seen, Mapping):
                    raise MissingEvidence(f"metric current_device.current_{index} (on {d}) is missing")
                if number(seen, "current_device") != index or count_of(seen, "checked") == 0:
                    raise Refused(f"on {d}: the receiver's device {index} was to be current; it was "
                                  f"{seen.get('current_device')} and {seen.get('checked')} received tensor(s) were checked")
                if count_of(seen, "wrong"):
                    raise Refused(f"on {d}: {seen['wrong']} of {seen['checked']} tensor(s) received on another device than the "
                                  f"receiver's current {d}:{index} (an actor given two devices, {seen.get('when')}): "
                                  f"{seen.get('on_another_device')}")
    found.end()
    return Verdict(PASS, f"dtype, shape and device type as sent on {sorted(records)}")


@JUDGES.rule(needs=("devices", "cases", "wrong"))
@refusing
def transfers_between_nodes(m: Mapping[str, Any], p: Mapping[str, Any], manifest: Mapping[str, Any]) -> Verdict:
    records = per_type(m, manifest)
    total_agrees(m, records, "cases")
    total_agrees(m, records, "wrong")
    found = TypeFailures()
    for d, r in records.items():
        with found.on(d):
            nodes = names(r, "nodes")
            if len(nodes) != len(set(nodes)) or len(set(nodes)) != CROSS_NODE_ENDPOINTS:
                raise Refused(f"on {d}: the endpoints ran on nodes {nodes}, not two different nodes")
            if count_of(r, "cases") != CROSS_NODE_CASES:
                raise Refused(f"on {d}: {r['cases']} case(s) recorded; the check moves {CROSS_NODE_CASES}")
            no_mismatch(d, r, "transfers between actors on two nodes failed")   # (a case that raised is among them)
            errors_of(d, r)
    found.end()
    return Verdict(PASS, f"transfers between two nodes bit-exact on {sorted(records)}")


@JUDGES.rule(needs=("devices", "cases", "wrong"))
@refusing
def concurrent_transfers_each_intact(m: Mapping[str, Any], p: Mapping[str, Any], manifest: Mapping[str, Any]) -> Verdict:
    records = per_type(m, manifest)
    total_agrees(m, records, "cases")
    total_agrees(m, records, "wrong")
    found = TypeFailures()
    for d, r in records.items():
        with found.on(d):
            n = endpoints_as_the_node_allows(d, r, manifest)
            routes = n * (n - 1) * CONCURRENT_ROUNDS
            if n < PAIR or count_of(r, "cases") != routes:
                raise Refused(f"on {d}: {r['cases']} transfer(s) in flight between {n} endpoint(s); every ordered pair "
                              f"twice is {routes}")
            errors_of(d, r)
            no_mismatch(d, r, "concurrent transfers did not each arrive intact")
    found.end()
    return Verdict(PASS, f"concurrent transfers each intact on {sorted(records)}")


@JUDGES.rule(needs=("devices", "cases", "wrong"))
@refusing
def same_ref_intact_every_time(m: Mapping[str, Any], p: Mapping[str, Any], manifest: Mapping[str, Any]) -> Verdict:
    records = per_type(m, manifest)
    total_agrees(m, records, "cases")
    total_agrees(m, records, "wrong")
    found = TypeFailures()
    for d, r in records.items():
        with found.on(d):
            errors_of(d, r)
            receives = names(r, "receives")
            want = list(SAME_REF_RECEIVES) + ([ANOTHER_CONSUMER] if endpoints_as_the_node_allows(d, r, manifest) > PAIR else [])
            if sorted(receives) != sorted(want) or count_of(r, "cases") != len(want):
                raise Refused(f"on {d}: receives {receives} ({r['cases']}) are not the check's {want}")
            no_mismatch(d, r, "receives of the same ref did not arrive intact")
    found.end()
    return Verdict(PASS, f"one ref received {len(SAME_REF_RECEIVES)}+ times intact on {sorted(records)}")


def driver_semantics_problems(one_sided: bool, seen: Mapping[str, Any]) -> list[str]:
    """What Ray's documented driver semantics say of what the driver saw (TR-009)."""
    problems = []
    got, store = seen.get(DRIVER_GET), seen.get(DRIVER_GET_STORE)
    expected = RETURNED if one_sided else "ValueError"
    if not isinstance(got, str) or not got.startswith(expected):
        problems.append(f"{DRIVER_GET} of a {'one' if one_sided else 'two'}-sided transport's ref: {got}; expected {expected}")
    if store != RETURNED:
        problems.append(f"{DRIVER_GET_STORE}: {store}")
    if one_sided and seen.get(DRIVER_PUT) != "bit-exact":
        problems.append(f"ray.put(_tensor_transport) in the driver, received by an actor: {seen.get(DRIVER_PUT)}")
    return problems


@JUDGES.rule(needs=("devices", "cases", "wrong"))
@refusing
def driver_get_follows_ray(m: Mapping[str, Any], p: Mapping[str, Any], manifest: Mapping[str, Any]) -> Verdict:
    records = per_type(m, manifest)
    total_agrees(m, records, "cases")
    total_agrees(m, records, "wrong")
    found = TypeFailures()
    for d, r in records.items():
        with found.on(d):
            one_sided = sidedness(r, manifest)
            seen = r.get("driver")
            if not isinstance(seen, Mapping):
                raise MissingEvidence("metric driver (what the driver saw) is missing")
            problems = driver_semantics_problems(one_sided, seen)
            if count_of(r, "cases") != len(seen) or count_of(r, "wrong") != len(problems):
                raise Refused(f"on {d}: {r['wrong']} of {r['cases']} recorded wrong, but what the driver saw gives "
                              f"{len(problems)} of {len(seen)}")
            if problems:
                raise Refused(f"on {d}: " + " | ".join(problems))
    found.end()
    return Verdict(PASS, f"the driver's ray.get follows Ray's semantics on {sorted(records)}")


# ------------------------------------------------------------------------------ lifecycle (TR-010 .. TR-012)
@JUDGES.rule(needs=("devices", "transfers"))
@refusing
def data_path_matches_sidedness(m: Mapping[str, Any], p: Mapping[str, Any], manifest: Mapping[str, Any]) -> Verdict:
    records = per_type(m, manifest)
    total_agrees(m, records, "transfers")
    found = TypeFailures()
    for d, r in records.items():
        with found.on(d):
            one_sided = sidedness(r, manifest)
            n = count_of(r, "transfers")
            if n != SIDEDNESS_TRANSFERS:
                raise Refused(f"on {d}: {n} transfer(s) recorded; the check makes {SIDEDNESS_TRANSFERS}")
            errors_of(d, r, "raised")
            sends = r.get("sends")
            recvs = r.get("receives_per_object")
            if not isinstance(sends, Mapping) or not isinstance(recvs, list):
                raise MissingEvidence("metric sends or receives_per_object is missing")
            sent = {str(k): count_of(sends, k) for k in sends}
            want = {} if one_sided else {"0": n}
            if {k: v for k, v in sent.items() if v} != want:
                raise Refused(f"on {d}: send_multiple_tensors ran {sent} (by endpoint; 0 is the source) for {n} transfers of "
                              f"a {'one' if one_sided else 'two'}-sided transport; expected {want or 'never'}")
            if [count_of({"n": x}, "n") for x in recvs] != [1] * n:
                raise Refused(f"on {d}: recv_multiple_tensors ran {recvs} times per object on the destination for {n} "
                              "transfers; expected once each")
    found.end()
    return Verdict(PASS, f"the data path matches the declared sidedness on {sorted(records)}")


def extract_problems(o: Mapping[str, Any]) -> list[str]:
    """What one object's extract_tensor_transport_metadata record shows against the contract (TR-011)."""
    case = o.get("case")
    if count_of(o, "on_source") != 1:
        return [f"{case}: extract_tensor_transport_metadata ran {o['on_source']} times on the source; expected once"]
    out = []
    if count_of(o, "elsewhere"):
        out.append(f"{case}: extract_tensor_transport_metadata ran off the source")
    if o.get("raised"):
        return out + [f"{case}: extract_tensor_transport_metadata raised {o['raised']}"]
    described, actual = o.get("tensor_meta"), o.get("tensors")
    if not isinstance(actual, list) or not actual:
        raise MissingEvidence(f"metric objects[].tensors ({case}) is missing")
    if described != actual:
        out.append(f"{case}: tensor_meta {described} does not describe the tensors {actual}")
    devices = o.get("tensor_devices")
    if not isinstance(devices, list) or o.get("tensor_device") not in devices:
        out.append(f"{case}: tensor_device {o.get('tensor_device')!r}, tensors are on {devices}")
    if o.get("receive_started_first") is True:
        out.append(f"{case}: the receive started before extract_tensor_transport_metadata returned")
    return out


@JUDGES.rule(needs=("devices", "cases"))
@refusing
def extract_once_on_source_describes(m: Mapping[str, Any], p: Mapping[str, Any], manifest: Mapping[str, Any]) -> Verdict:
    records = per_type(m, manifest)
    total_agrees(m, records, "cases")
    found = TypeFailures()
    for d, r in records.items():
        with found.on(d):
            objects = r.get("objects")
            if not isinstance(objects, list) or not all(isinstance(o, Mapping) for o in objects):
                raise MissingEvidence("metric objects (one record per object) is missing")
            if count_of(r, "cases") != len(objects) or len(objects) != len(EXTRACT_CASES) \
                    or [o.get("case") for o in objects] != list(EXTRACT_CASES):
                raise Refused(f"on {d}: objects {[o.get('case') for o in objects]} are not the check's {list(EXTRACT_CASES)}")
            errors_of(d, r, "transfer_errors")
            problems = [x for o in objects for x in extract_problems(o)]
            if count_of(r, "stray") or problems:
                raise Refused(f"on {d}: " + "; ".join(problems[:4] or ["extract_tensor_transport_metadata ran off the source"]))
    found.end()
    return Verdict(PASS, f"extract_tensor_transport_metadata once, on the source, describing the tensors on {sorted(records)}")


@JUDGES.rule(needs=("devices", "freed_objects"), params=("leftover_bound_s",))
@refusing
def garbage_collect_once_on_source(m: Mapping[str, Any], p: Mapping[str, Any], manifest: Mapping[str, Any]) -> Verdict:
    records = per_type(m, manifest)
    total_agrees(m, records, "freed_objects")
    bound = param_value(p, "leftover_bound_s")
    found = TypeFailures()
    for d, r in records.items():
        with found.on(d):
            n = count_of(r, "freed_objects")
            calls = r.get("gc_per_object")
            if n != GC_OBJECTS or not isinstance(calls, list) or len(calls) != n:
                raise Refused(f"on {d}: {n} freed object(s) with {calls} garbage_collect call(s); the check frees {GC_OBJECTS}")
            if number(r, "leftover_bound_s") != bound:
                raise Refused(f"on {d}: leftovers judged {r['leftover_bound_s']}s after the frees; the release's "
                              f"leftover_bound_s is {bound:g}")
            counted = [count_of({"n": x}, "n") for x in calls]
            if counted != [1] * n:
                raise Refused(f"on {d}: garbage_collect ran {counted} times per freed object on the source; expected once each")
            raised = r.get("gc_raised")
            if not isinstance(raised, list):
                raise MissingEvidence("metric gc_raised is missing")
            if raised:
                raise Refused(f"on {d}: garbage_collect raised on the source ({len(raised)}x): {raised[0]}")
            if count_of(r, "gc_elsewhere"):
                raise Refused(f"on {d}: garbage_collect ran {r['gc_elsewhere']} time(s) off the source")
            if count_of(r, "still_held"):
                raise Refused(f"on {d}: Ray still held {r['still_held']} RDT object(s) on the source after the last ref went")
            left = names(r, "left_behind")
            if left:
                raise Refused(f"on {d}: the transport left behind, {bound:g}s after every free: {', '.join(left[:5])}")
    found.end()
    return Verdict(PASS, f"garbage_collect once per freed object, on the source, nothing left on {sorted(records)}")


# ------------------------------------------------------------------------------ usage and failures (TR-015 .. TR-020)
def scenario_record(d: str, r: Mapping[str, Any], p: Mapping[str, Any], step_params: tuple[str, ...]) -> list[Mapping[str, Any]]:
    """One type's scenario (conformance.areas.transport.usage: UsageCtx records each step): no
    recorded failure, every step ended as expected within its bound, each bound at most the
    release's for a step, the scenario within scenario_bound_s (less the time left to Ray's
    machinery, which cannot exceed the time it ran). Returns the steps."""
    failure = r.get("failure")
    if failure:
        raise Refused(f"on {d}: {failure}")
    steps = r.get("steps")
    if not isinstance(steps, list) or not steps or not all(isinstance(s, Mapping) for s in steps):
        raise MissingEvidence(f"metric steps (on {d}) is missing or empty")
    most = max(param_value(p, name) for name in step_params)
    for s in steps:
        what, took, bound = s.get("step"), number(s, "took_s"), number(s, "bound_s")
        if s.get("ok") is not True:
            raise Refused(f"on {d}: step {what!r} did not end as expected: {s.get('error')}")
        if bound > most:
            raise Refused(f"on {d}: step {what!r} was bounded by {bound:g}s; the release bounds a step at {most:g}s "
                          f"({', '.join(step_params)})")
        if took > bound * STEP_READ_SLACK:
            raise Refused(f"on {d}: step {what!r} took {took:.1f}s, past its bound {bound:g}s")
        if s.get("expect") == "error":
            error, carries = s.get("error"), s.get("carries")
            if not isinstance(error, str) or not error:
                raise Refused(f"on {d}: step {what!r} expected an error but records none")
            if carries and carries not in error:
                raise Refused(f"on {d}: step {what!r} failed with {error!r}, which does not carry {carries!r}")
    scenario = r.get("scenario")
    if not isinstance(scenario, Mapping):
        raise MissingEvidence(f"metric scenario (on {d}) is missing")
    elapsed, excluded = number(scenario, "elapsed_s"), number(scenario, "excluded_s")
    bound = param_value(p, "scenario_bound_s")
    if excluded < 0 or excluded > elapsed:
        raise Refused(f"on {d}: the scenario left {excluded:g}s of its {elapsed:g}s to Ray's machinery")
    if elapsed - excluded > bound:
        raise Refused(f"on {d}: the scenario took {elapsed - excluded:.1f}s of its own (elapsed {elapsed:.1f}s, "
                      f"{excluded:.1f}s Ray's machinery); scenario_bound_s is {bound:g}")
    return steps


def ran(steps: list[Mapping[str, Any]], *labels: str) -> list[str]:
    """The labels among `labels` no recorded step starts with."""
    have = [str(s.get("step")) for s in steps]
    return [x for x in labels if not any(h.startswith(x) for h in have)]


def missing_steps(d: str, missing: list[str]) -> None:
    if missing:
        raise Refused(f"on {d}: the scenario records no step {missing}")


def scenario_checks(m: Mapping[str, Any], manifest: Mapping[str, Any]) -> dict[str, Mapping[str, Any]]:
    """Every type's record, its step count its own, and the time its scenarios left out of their
    bound no more than the check's recorded waits on Ray's machinery took (metrics.waits: an actor
    start, a wave; conformance.run.machinery), when that record is whole."""
    records = per_type(m, manifest)
    total_agrees(m, records, "step_count")
    excluded = 0.0
    for d, r in records.items():
        steps = r.get("steps")
        if isinstance(steps, list) and count_of(r, "step_count") != len(steps):
            raise Refused(f"on {d}: step_count {r['step_count']} but {len(steps)} step(s) recorded")
        scenario = r.get("scenario")
        if isinstance(scenario, Mapping):
            excluded += number(scenario, "excluded_s")
    if excluded > 0:
        waits = m.get("waits")
        each = waits.get("each") if isinstance(waits, Mapping) else None
        if not isinstance(waits, Mapping) or not isinstance(each, list):
            raise MissingEvidence("metric waits (the waits on Ray's machinery the scenarios left out) is missing")
        if waits.get("count") == len(each):   # a record cut at its cap cannot be summed
            ray_s = sum(number(w, "took_s") for w in each
                        if isinstance(w, Mapping) and w.get("owner") == "ray" and w.get("took_s") is not None)
            if excluded > ray_s + EXCLUDED_SLACK_S:
                raise Refused(f"the scenarios left {excluded:.1f}s out of their bound as Ray's machinery, but the waits on "
                              f"Ray's machinery they record took {ray_s:.1f}s")
    return records


def transport_traits(m: Mapping[str, Any], manifest: Mapping[str, Any]) -> tuple[bool, bool]:
    """(one_sided, can_abort) as the usage checks recorded them (metrics.transport: what the
    vendor's class returned), each held as `trait` says: Ray's for a built-in; for a vendor's own
    transport, to the steps the check ran (a judge that branches on a trait refuses a record whose
    steps are the other branch's: branch_steps) and, in verify, to every other record of it."""
    t = m.get("transport")
    if not isinstance(t, Mapping) or not isinstance(t.get("can_abort"), bool):
        raise MissingEvidence("metric transport (one_sided, can_abort) is missing")
    return sidedness(t, manifest), trait(t, "can_abort", manifest)


def branch_steps(d: str, steps: list[Mapping[str, Any]], name: str, value: bool, other: tuple[str, ...],
                 only: str) -> None:
    """The record's steps are its trait's branch: `other` are step labels the live check runs only
    when the trait `name` is not `value` (`only` says when): one recorded beside `value` is evidence
    that the class returned the other answer, and the record's trait was edited."""
    found = [x for x in other if not ran(steps, x)]
    if found:
        raise Refused(f"on {d}: the record says {name} is {value}, but its steps include {found[0]!r}, which the check "
                      f"runs only {only}: the trait contradicts what ran")


@JUDGES.rule(needs=("devices", "step_count", "transport"),
             params=("error_bound_s", "recover_bound_s", "scenario_bound_s", "during_bytes"))
@refusing
def receiver_death_errors_and_recovers(m: Mapping[str, Any], p: Mapping[str, Any], manifest: Mapping[str, Any]) -> Verdict:
    """TR-015: both receivers' callers got their error within error_bound_s, and the transport
    recovered as its can_abort says (the source kept, serving a new receiver; or, for one that
    cannot abort or in a collective group, a new pair). can_abort is the recorded one, held to
    Ray's for a built-in and to the steps that ran (branch_steps: a source-kept step beside
    can_abort False is a class that answered True), and in verify to every other record of it."""
    records = scenario_checks(m, manifest)
    _, can_abort = transport_traits(m, manifest)
    t = manifest.get("transport") if isinstance(manifest, Mapping) else None
    collective = isinstance(t, Mapping) and not t.get("manager") and str(t.get("name", "")).upper() in ("GLOO", "NCCL")
    found = TypeFailures()
    for d, r in records.items():
        with found.on(d):
            steps = scenario_record(d, r, p, ("error_bound_s", "recover_bound_s"))
            # a source that can abort stays and serves a new receiver; otherwise (and within a
            # collective group) Ray ends both actors and a new pair must transfer
            keeps = can_abort and not collective
            after, other = (SOURCE_KEPT_STEPS, NEW_PAIR_STEPS) if keeps else (NEW_PAIR_STEPS, SOURCE_KEPT_STEPS)
            missing_steps(d, ran(steps, RECEIVER_KILLED, RECEIVER_DIED,
                                 *(f"{phase}: {x}" for phase in RECOVERY_PHASES for x in after)))
            branch_steps(d, steps, "can_abort", can_abort, tuple(f"{phase}: {x}" for phase in RECOVERY_PHASES for x in other),
                         "for a transport that can abort (outside a collective group)" if not keeps
                         else "for a transport that cannot abort (or in a collective group)")
            for name in ("before_error_s", "during_error_s"):
                if number(r, name) > param_value(p, "error_bound_s"):
                    raise Refused(f"on {d}: {name} {r[name]:g}s is past error_bound_s {p['error_bound_s']:g}")
    found.end()
    return Verdict(PASS, f"a dying receiver cost neither a hang nor the source on {sorted(records)}")


@JUDGES.rule(needs=("devices", "step_count", "transport"), params=("error_bound_s", "scenario_bound_s"))
@refusing
def producer_errors_reach_consumers(m: Mapping[str, Any], p: Mapping[str, Any], manifest: Mapping[str, Any]) -> Verdict:
    records = scenario_checks(m, manifest)
    transport_traits(m, manifest)
    found = TypeFailures()
    for d, r in records.items():
        with found.on(d):
            steps = scenario_record(d, r, p, ("error_bound_s",))
            missing_steps(d, ran(steps, *PRODUCER_ERROR_STEPS))
            if number(r, "retried_attempts") != RETRY_ATTEMPTS or number(r, "objects_after_retry") != 1:
                raise Refused(f"on {d}: the retried producer ran {r['retried_attempts']:g} time(s) and left "
                              f"{r['objects_after_retry']:g} object(s) in the source's store; expected {RETRY_ATTEMPTS} and 1")
    found.end()
    return Verdict(PASS, f"producer errors reached every consumer and the transport kept working on {sorted(records)}")


@JUDGES.rule(needs=("devices", "step_count", "transport"),
             params=("step_bound_s", "free_bound_s", "scenario_bound_s", "later_objects"))
@refusing
def received_tensors_stay_the_receivers(m: Mapping[str, Any], p: Mapping[str, Any], manifest: Mapping[str, Any]) -> Verdict:
    records = scenario_checks(m, manifest)
    transport_traits(m, manifest)
    later = int(param_value(p, "later_objects"))
    found = TypeFailures()
    for d, r in records.items():
        with found.on(d):
            steps = scenario_record(d, r, p, ("step_bound_s", "free_bound_s"))
            missing_steps(d, ran(steps, *OWNERSHIP_STEPS))
            sent_later = [s for s in steps if str(s.get("step")).startswith(LATER_OBJECT)]
            if len(sent_later) != later:
                raise Refused(f"on {d}: {len(sent_later)} later object(s) sent; the release's later_objects is {later}")
    found.end()
    return Verdict(PASS, f"received tensors stayed the receiver's on {sorted(records)}")


@JUDGES.rule(needs=("devices", "step_count", "transport"), params=("step_bound_s", "scenario_bound_s"))
@refusing
def refs_passed_as_users_pass_them(m: Mapping[str, Any], p: Mapping[str, Any], manifest: Mapping[str, Any]) -> Verdict:
    """TR-018: refs passed through a chain, to their own actor and as tensorless returns arrived,
    and for a one-sided transport (the only one whose refs Ray lets actors borrow in a list) the
    borrowers' too. one_sided is the recorded one, held to Ray's for a built-in and to the steps
    that ran (a borrower step beside one_sided False is a class that answered True), and in verify
    to every other record of it (TR-009/TR-010's are judged by what the driver saw and Ray called)."""
    records = scenario_checks(m, manifest)
    one_sided, _ = transport_traits(m, manifest)
    found = TypeFailures()
    for d, r in records.items():
        with found.on(d):
            steps = scenario_record(d, r, p, ("step_bound_s",))
            missing_steps(d, ran(steps, *USER_REF_STEPS, *(BORROWER_STEPS if one_sided else ())))
            if not one_sided:
                branch_steps(d, steps, "one_sided", one_sided, BORROWER_STEPS, "for a one-sided transport")
    found.end()
    return Verdict(PASS, f"refs passed the ways users pass them arrived intact on {sorted(records)}")


@JUDGES.rule(needs=("devices", "step_count", "transport"),
             params=("transfers", "actors", "payload_bytes", "all_bound_s", "busy_bound_s", "scenario_bound_s"))
@refusing
def async_transfers_and_busy_sender(m: Mapping[str, Any], p: Mapping[str, Any], manifest: Mapping[str, Any]) -> Verdict:
    records = scenario_checks(m, manifest)
    transport_traits(m, manifest)
    want_n, want_actors = param_value(p, "transfers"), param_value(p, "actors")
    bound = param_value(p, "all_bound_s")
    found = TypeFailures()
    for d, r in records.items():
        with found.on(d):
            steps = scenario_record(d, r, p, ("busy_bound_s",))
            missing_steps(d, ran(steps, BUSY_SENDER_STEP))
            n, actors = number(r, "transfers"), number(r, "actors")
            size = first_type_payload(d, param_value(p, "payload_bytes"), m, manifest)
            if n != want_n or actors != want_actors or number(r, "payload_bytes") != size:
                raise Refused(f"on {d}: {n:g} transfers between {actors:g} actors of {r['payload_bytes']:g} bytes; the release "
                              f"asks {want_n:g} between {want_actors:g} of {size} bytes on {d}")
            if count_of(r, "wrong"):
                raise Refused(f"on {d}: {r['wrong']} of {n:g} concurrent transfers arrived with other bytes")
            limit, took = number(r, "all_bound_s"), number(r, "all_done_s")
            if limit < bound or limit > bound * WAVE_STRETCH_MAX:
                raise Refused(f"on {d}: the wave was bounded by {limit:g}s; all_bound_s {bound:g} stretches to at most "
                              f"{bound * WAVE_STRETCH_MAX:g}s on a loaded host")
            if took > limit:
                raise Refused(f"on {d}: the {n:g} concurrent transfers took {took:.1f}s, past {limit:g}s")
    found.end()
    return Verdict(PASS, f"concurrent transfers bit-exact in time, a busy sender served, on {sorted(records)}")


@JUDGES.rule(needs=("devices", "step_count", "transport"),
             params=("fetch_refs", "user_timeout_s", "timeout_slack_s", "fail_fast_s", "step_bound_s", "scenario_bound_s"))
@refusing
def driver_fetches_and_timeouts(m: Mapping[str, Any], p: Mapping[str, Any], manifest: Mapping[str, Any]) -> Verdict:
    records = scenario_checks(m, manifest)
    transport_traits(m, manifest)
    k = param_value(p, "fetch_refs")
    late = param_value(p, "user_timeout_s") + param_value(p, "timeout_slack_s")
    found = TypeFailures()
    for d, r in records.items():
        with found.on(d):
            steps = scenario_record(d, r, p, ("step_bound_s", "fail_fast_s"))
            missing_steps(d, ran(steps, *FETCH_STEPS))
            if number(r, "fetched") != k or count_of(r, "fetch_wrong"):
                raise Refused(f"on {d}: {r['fetch_wrong']} of {r['fetched']:g} refs fetched at once came back wrong "
                              f"(the release fetches {k:g})")
            took = r.get("user_timeout_took_s")
            if not isinstance(took, list) or len(took) != len(USER_TIMEOUT_GETS):
                raise MissingEvidence(f"metric user_timeout_took_s (on {d}) is not {len(USER_TIMEOUT_GETS)} times")
            slow = [number({"t": t}, "t") for t in took if number({"t": t}, "t") > late]
            if slow:
                raise Refused(f"on {d}: ray.get with the user's timeout returned after {slow}s, past {late:g}s")
            kind = r.get("plain_receiver")
            if kind not in ("data", "error") or number(r, "plain_receiver_s") > param_value(p, "fail_fast_s"):
                raise Refused(f"on {d}: a receiver without the transport ended in {kind!r} after {r.get('plain_receiver_s')}s "
                              f"(fail_fast_s {p['fail_fast_s']:g})")
            if kind == "error" and not r.get("plain_receiver_error"):
                raise Refused(f"on {d}: a receiver without the transport failed, but no error is recorded")
    found.end()
    return Verdict(PASS, f"driver fetches, the user's timeout and a plain receiver behaved on {sorted(records)}")
