"""The transport's calls (TR-010..TR-012): the data path its sidedness gives, metadata extracted once
on the source, garbage collected once.
"""
from __future__ import annotations

from typing import Any, Mapping

from conformance.areas.transport.judges.common import (
    EXTRACT_CASES,
    GC_OBJECTS,
    JUDGES,
    SIDEDNESS_TRANSFERS,
    Refused,
    TypeFailures,
    count_of,
    errors_of,
    names,
    per_type,
    refusing,
    sidedness,
    total_agrees,
)
from conformance.report.judges import PASS, MissingEvidence, Verdict, number, param_value


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
