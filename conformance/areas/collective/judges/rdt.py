"""RDT over the backend (CC-011, CC-012).
"""
from __future__ import annotations

from typing import Any, Mapping

from conformance.areas.collective.judges.common import (
    _WAIT_SLACK_S,
    JUDGES,
    _claimed,
)
from conformance.collective.config import DEFAULT_DTYPES
from conformance.rdt.accelerator_rule import coverage_problem
from conformance.report.judges import FAIL, PASS, MissingEvidence, Verdict, number, param_value

# ---------------------------------------------------------------- RDT over the backend (CC-011, CC-012)

def _per_device(m: Mapping[str, Any], manifest: Mapping[str, Any]) -> list[tuple[str, Mapping[str, Any]]]:
    """Each exercised device type's record (conformance.rdt.each_device: nested under the type
    when the block declares more than one); every declared type exercised or not applicable with
    a reason, the accelerator's type exercised unless the manifest gives its reason
    (conformance.rdt.accelerator_rule)."""
    declared = _claimed(manifest, "rdt_devices", ("cpu",))
    exercised = m.get("devices")
    skipped = m.get("not_applicable_on") or {}
    if not isinstance(exercised, list) or not exercised:
        raise MissingEvidence("metric devices (the device types exercised) is missing or empty")
    if not isinstance(skipped, Mapping) or sorted(map(str, exercised)) != sorted(d for d in declared if d not in skipped):
        raise _Wrong(f"exercised {exercised}, but the manifest's collective.rdt_devices are {declared} "
                     f"(not applicable on {sorted(skipped) if isinstance(skipped, Mapping) else skipped!r})")
    problem = coverage_problem(declared, exercised, skipped, manifest)
    if problem is not None:
        raise _Wrong(problem)
    if len(declared) == 1:
        return [(declared[0], m)]
    out = []
    for d in exercised:
        ev = m.get(d)
        if not isinstance(ev, Mapping):
            raise MissingEvidence(f"metric {d} (the record on that device type) is missing")
        out.append((str(d), ev))
    return out


class _Wrong(Exception):
    """A record that contradicts the manifest or the params (a fail, not missing evidence)."""


@JUDGES.rule(needs=("transfers", "devices"), decides_all=True)
def rdt_objects_arrive_two_sided(m: Mapping[str, Any], p: Mapping[str, Any], manifest: Mapping[str, Any]) -> Verdict:
    """On every device type the transport moves: both objects (one tensor; one per claimed dtype)
    arrived with no field wrong, the transport said it is two-sided, the driver's ray.get was
    refused (not returned, not hung) and the copy through the object store arrived right."""
    try:
        records = _per_device(m, manifest)
    except _Wrong as exc:
        return Verdict(FAIL, str(exc))
    sizes = {"one tensor": 1, "a tensor per dtype": len(_claimed(manifest, "dtypes", DEFAULT_DTYPES)),
             "through the object store": 1}
    if number(m, "transfers") != len(sizes) * len(records):
        return Verdict(FAIL, f"records {m['transfers']:g} transfer(s), the check makes {len(sizes)} on each of "
                             f"{len(records)} device type(s)")
    for device, ev in records:
        if ev.get("error"):
            return Verdict(FAIL, f"on {device}: {ev['error']}")
        objects = ev.get("objects")
        if not isinstance(objects, Mapping) or set(objects) != set(sizes):
            return Verdict(FAIL, f"on {device}: objects recorded {sorted(objects) if isinstance(objects, Mapping) else objects!r}, "
                                 f"the check moves {sorted(sizes)}")
        for what, n in sizes.items():
            got = objects[what] if isinstance(objects[what], Mapping) else {}
            if got.get("tensors") != n or got.get("arrived") != n:
                return Verdict(FAIL, f"on {device}: {what}: {got.get('arrived')!r} of {got.get('tensors')!r} tensor(s) "
                                     f"arrived, {n} sent")
            if number(got, "wrong"):
                return Verdict(FAIL, f"on {device}: {what}: {got['wrong']:g} tensor(s) arrived wrong")
        if ev.get("one_sided") is not False:
            return Verdict(FAIL, f"on {device}: is_one_sided() is {ev.get('one_sided')!r}, a transport over send/recv "
                                 "is two-sided")
        if ev.get("driver_get") != "refused":
            return Verdict(FAIL, f"on {device}: ray.get in the driver {ev.get('driver_get')!r}, Ray refuses it")
    return Verdict(PASS, f"every object right on {', '.join(d for d, _ in records)}")


@JUDGES.rule(needs=("devices", "error_bound_s"), params=("error_bound_s",), decides_all=True)
def rdt_without_a_group_errs_in_time(m: Mapping[str, Any], p: Mapping[str, Any], manifest: Mapping[str, Any]) -> Verdict:
    """On every device type the transport moves: the transfer between actors in no group ended
    in an error (refused or raised), within error_bound_s of its submission (the bound recorded is
    the release's)."""
    bound = param_value(p, "error_bound_s")
    if number(m, "error_bound_s") != bound:
        return Verdict(FAIL, f"records error_bound_s {m['error_bound_s']!r}, the release's is {bound:g}")
    try:
        records = _per_device(m, manifest)
    except _Wrong as exc:
        return Verdict(FAIL, str(exc))
    for device, ev in records:
        outcome = ev.get("outcome")
        if outcome == "hang":
            return Verdict(FAIL, f"on {device}: an RDT transfer between two actors in no group got no error within "
                                 f"{bound:g} s (the transport found no communicator and said nothing)")
        if outcome == "delivered":
            return Verdict(FAIL, f"on {device}: an RDT transfer between two actors in no group delivered "
                                 f"{ev.get('tensors')!r} tensor(s): the transport moved it without the group")
        if outcome != "error" or not ev.get("error"):
            return Verdict(FAIL, f"on {device}: the transfer between actors in no group ended {outcome!r}, no error")
        took = number(ev, "error_s")
        if took > bound + _WAIT_SLACK_S:
            return Verdict(FAIL, f"on {device}: the error came after {took:g} s, past the {bound:g} s bound")
    return Verdict(PASS, f"an error within {bound:g} s on {', '.join(d for d, _ in records)}")
