"""What the transport area's judges share: the table they register in, what the checks do (the
live checks import these, so a record and its judge cannot drift apart), and the rules of every
declared device type's record (its evidence, counts, errors, the transport's traits, sizes, endpoints).
"""
from __future__ import annotations

import contextlib
import functools
from typing import Any, Iterator, Mapping

from conformance.rdt.accelerator_rule import coverage_problem
from conformance.rdt.config import INTRA_NODE_ENDPOINTS, LATER_DEVICE_BYTES, builtin_traits, recorded_max_bytes
from conformance.rdt.device import is_host
from conformance.report.judges import FAIL, Decide, JudgeTable, MissingEvidence, Verdict, agrees, number, path_of
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


def refusing(fn: Decide) -> Decide:
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
    its reason, the accelerator's type exercised unless the manifest gives its reason
    (conformance.rdt.accelerator_rule); a type the manifest does not declare is not evidence of it."""
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
    problem = coverage_problem(declared, exercised, skipped, manifest)
    if problem is not None:
        raise Refused(f"{problem} (devices: {exercised})")
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
        said = ("is one-sided" if fixed[name] else "is two-sided") if name == "one_sided" else f"returns {fixed[name]}"
        raise Refused(f"{name} is {value} but Ray's built-in {str(path_of(manifest, 'transport.name')).upper()} {said}")
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
