"""The class and its registration (CC-001..CC-003).
"""
from __future__ import annotations

from typing import Any, Mapping

from conformance.areas.collective.judges.common import (
    HOOK_ELEMENTS,
    HOOK_MEMBERS,
    JUDGES,
    _block,
)
from conformance.collective.config import POOL_SIZE
from conformance.report.judges import FAIL, PASS, MissingEvidence, Verdict, number

# ---------------------------------------------------------------- the class and its registration (CC-001..CC-003)

@JUDGES.rule(needs=("contract",), decides_all=True)
def group_class_meets_the_contract(m: Mapping[str, Any], p: Mapping[str, Any], manifest: Mapping[str, Any]) -> Verdict:
    """The facts read off the class (BaseGroup subclass, abstract members, the constructor's and
    every op's signature against what Ray passes, check_backend_availability a classmethod),
    decided again by the live check's own rule; a built-in class only where the manifest names
    no group_class."""
    from conformance.areas.collective.contract import OP_ARITY, facts_problems

    facts = m["contract"]
    if isinstance(facts, Mapping) and facts.get("base_group") is True and number(facts, "ops_read") != len(OP_ARITY):
        return Verdict(FAIL, f"the facts read {facts['ops_read']:g} op signature(s) of the {len(OP_ARITY)} Ray calls")
    if isinstance(facts, Mapping) and facts.get("builtin") is not (not _block(manifest).get("group_class")):
        return Verdict(FAIL, f"the facts say builtin={facts.get('builtin')!r}, but the manifest "
                             f"{'names' if _block(manifest).get('group_class') else 'names no'} collective.group_class")
    problems = facts_problems(dict(facts) if isinstance(facts, Mapping) else facts)
    if problems:
        return Verdict(FAIL, "; ".join(problems[:4]))
    return Verdict(PASS, "the class meets every call Ray makes")


@JUDGES.rule(needs=("hosts", "answers"), params=("unavailable_on",), decides_all=True)
def availability_false_where_missing(m: Mapping[str, Any], p: Mapping[str, Any], manifest: Mapping[str, Any]) -> Verdict:
    """One answer per host the manifest declares among the release's unavailable_on, and the
    manifest's own: True there; on the others False for a backend that requires its device
    (collective.requires_device, default true), True for one that does not; never raised."""
    answers = m["answers"]
    if not isinstance(answers, Mapping):
        raise MissingEvidence("metric answers is not a mapping")
    if number(m, "hosts") != len(answers):
        return Verdict(FAIL, f"records {m['hosts']:g} host(s) asked beside {len(answers)} answer(s)")
    hosts = (manifest.get("accelerator") or {}).get("hosts") or {}
    kinds = [str(k) for k in (p.get("unavailable_on") or []) if k in hosts]
    if set(answers) != {"manifest host", *kinds}:
        return Verdict(FAIL, f"answers record hosts {sorted(answers)}, the manifest and the release's params give "
                             f"{sorted({'manifest host', *kinds})}")
    here = answers["manifest host"] if isinstance(answers["manifest host"], Mapping) else {}
    if here.get("value") is not True:
        return Verdict(FAIL, f"on the manifest's own host it answered {here.get('value', here.get('raised'))!r}, "
                             "expected True")
    want = _block(manifest).get("requires_device", True) is False
    for kind in kinds:
        got = answers[kind] if isinstance(answers[kind], Mapping) else {}
        if "raised" in got or got.get("value") is not want:
            return Verdict(FAIL, f"on a {kind} host it answered {got.get('value', got.get('raised'))!r}, expected {want}")
    return Verdict(PASS, f"True on the manifest's host, {want} on {', '.join(kinds) or 'no other host declared'}")


@JUDGES.rule(needs=("pool_size", "driver_available", "members", "hook_job"), decides_all=True)
def registered_in_driver_and_workers(m: Mapping[str, Any], p: Mapping[str, Any], manifest: Mapping[str, Any]) -> Verdict:
    """Registered and available in the driver and in every member of the pool; in the hook job,
    both members registered by the hook, a second registration harmless and the allreduce's
    digests right."""
    from conformance.collective import programs

    if number(m, "pool_size") != POOL_SIZE:
        return Verdict(FAIL, f"records a pool of {m['pool_size']:g} member(s), the check starts {POOL_SIZE}")
    if m["driver_available"] is not True:
        return Verdict(FAIL, "in the driver is_backend_available is not True after registering")
    members = m["members"]
    if not isinstance(members, list) or len(members) != POOL_SIZE:
        return Verdict(FAIL, f"records {len(members) if isinstance(members, list) else 0} member(s) of the pool's "
                             f"{POOL_SIZE}")
    for i, info in enumerate(members):
        if not (isinstance(info, Mapping) and info.get("registered") is True and info.get("available") is True):
            return Verdict(FAIL, f"member {i} (registered in its constructor): {info!r}")
    hooked = m["hook_job"]
    if not isinstance(hooked, Mapping) or "error" in hooked:
        return Verdict(FAIL, f"a job whose worker_process_setup_hook registers the backend: "
                             f"{hooked.get('error') if isinstance(hooked, Mapping) else hooked!r}")
    infos, again = hooked.get("infos"), hooked.get("again")
    if not isinstance(infos, list) or len(infos) != HOOK_MEMBERS or not all(
            isinstance(i, Mapping) and i.get("registered") is True for i in infos):
        return Verdict(FAIL, f"the hook job's members: {infos!r} (each of {HOOK_MEMBERS} registered by the hook)")
    if not isinstance(again, list) or len(again) != HOOK_MEMBERS or any(again):
        return Verdict(FAIL, f"registering again in the hook job's members: {again!r} (an idempotent helper must allow it)")
    if hooked.get("problems"):
        return Verdict(FAIL, f"the hook job's allreduce: {hooked['problems']!r}")
    steps = programs.op_matrix(HOOK_MEMBERS, ["float32"], ["torch"], ["allreduce"], HOOK_ELEMENTS)
    if hooked.get("digests") != programs.wanted_digests(steps, HOOK_MEMBERS):
        return Verdict(FAIL, f"the hook job's allreduce digests {hooked.get('digests')!r} are not its program's")
    return Verdict(PASS, "registered in the driver, the pool's members and the hook job's")
