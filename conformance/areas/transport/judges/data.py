"""What the transport moves (TR-001..TR-009): every dtype, shape, view, container and size bit-exact,
across nodes, concurrently, the same ref again, the driver's semantics.
"""
from __future__ import annotations

import re
from typing import Any, Mapping

from conformance.areas.transport.judges.common import (
    ANOTHER_CONSUMER,
    CONCURRENT_ROUNDS,
    CROSS_NODE_CASES,
    CROSS_NODE_ENDPOINTS,
    DRIVER_GET,
    DRIVER_GET_STORE,
    DRIVER_PUT,
    JUDGES,
    METADATA_EXTRA_CASES,
    PAIR,
    RETURNED,
    SAME_REF_RECEIVES,
    Refused,
    TypeFailures,
    count_of,
    devices_per_node,
    endpoints_as_the_node_allows,
    errors_of,
    names,
    no_mismatch,
    per_type,
    refusing,
    run_max_bytes,
    sidedness,
    total_agrees,
)
from conformance.areas.transport.judges.pair_wave import with_pair_wave
from conformance.rdt.device import is_host
from conformance.rdt.payloads import ALL_DTYPES, CONTAINERS, CORE_DTYPES, SHAPES, VIEW_DTYPES, VIEWS
from conformance.report.judges import PASS, MissingEvidence, Verdict, number

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
            if "not_run" in current:
                current_round_not_run(d, current["not_run"], manifest)
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


# TR-005's round on an actor given two devices, and the reasons the check gives for not running
# it (the live check builds them here, so its record and its judge cannot drift apart)
CURRENT_UNITS = 2   # the receiver of that round holds two units
CURRENT_IN_GROUP = "the transport moves within a collective group the pool's actors already belong to"


def current_units_not_run(resource: str, endpoints: int) -> str:
    return f"needs {CURRENT_UNITS} free {resource} units beside the {endpoints} endpoints on one node"


_CURRENT_UNITS = re.compile(r"needs (\d+) free \S+ units beside the (\d+) endpoints on one node")


def current_round_not_run(d: str, why: Any, manifest: Mapping[str, Any]) -> None:
    """TR-005's current-device round not run on `d`, for a reason the manifest gives: the
    transport is a built-in that moves within a collective group (rdt.config.COLLECTIVE_TRANSPORTS),
    or a node's units (accelerator.expected.devices_per_node) leave fewer than CURRENT_UNITS
    beside the check's pair. Any other reason, or one the manifest contradicts, is a round the
    record left out."""
    from conformance.rdt.config import BUILTIN_TRANSPORTS, COLLECTIVE_TRANSPORTS

    block = manifest.get("transport") if isinstance(manifest, Mapping) else None
    name = str(block.get("name", "")).upper() if isinstance(block, Mapping) else ""
    in_group = isinstance(block, Mapping) and block.get("manager") is None and name in BUILTIN_TRANSPORTS \
        and name in COLLECTIVE_TRANSPORTS
    if why == CURRENT_IN_GROUP and in_group:
        return
    m = _CURRENT_UNITS.fullmatch(why) if isinstance(why, str) else None
    units = devices_per_node(manifest)
    if m is not None and int(m[1]) == CURRENT_UNITS and units is not None and units - PAIR < CURRENT_UNITS:
        return
    raise Refused(f"on {d}: the round on an actor given two devices was not run ({str(why)[:120]!r}); the manifest "
                  f"declares {units} unit(s) per node and transport {name or '?'}, which leave room for it")


@JUDGES.rule(needs=("devices", "cases", "wrong"))
@with_pair_wave   # --nodes all: the wave of pairs every node is in (judges/pair_wave.py)
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
