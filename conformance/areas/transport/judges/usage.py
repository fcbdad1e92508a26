"""Usage and failures (TR-015..TR-020): each scenario's steps, bounds and time, and the branch the
transport's traits chose.
"""
from __future__ import annotations

from typing import Any, Mapping

from conformance.areas.transport.judges.common import (
    BORROWER_STEPS,
    BUSY_SENDER_STEP,
    EXCLUDED_SLACK_S,
    FETCH_STEPS,
    JUDGES,
    LATER_OBJECT,
    NEW_PAIR_STEPS,
    OWNERSHIP_STEPS,
    PRODUCER_ERROR_STEPS,
    RECEIVER_DIED,
    RECEIVER_KILLED,
    RECOVERY_PHASES,
    RETRY_ATTEMPTS,
    SOURCE_KEPT_STEPS,
    STEP_READ_SLACK,
    USER_REF_STEPS,
    USER_TIMEOUT_GETS,
    WAVE_STRETCH_MAX,
    Refused,
    TypeFailures,
    count_of,
    first_type_payload,
    per_type,
    refusing,
    sidedness,
    total_agrees,
    trait,
)
from conformance.areas.transport.judges.handover import handover_record, pooled_transport
from conformance.report.judges import PASS, MissingEvidence, Verdict, number, param_value
from conformance.timing.owned import seconds_backed


# ------------------------------------------------------------------------------ usage and failures (TR-015 .. TR-020)
def scenario_record(d: str, r: Mapping[str, Any], p: Mapping[str, Any], step_params: tuple[str, ...],
                    pooled: bool = True) -> list[Mapping[str, Any]]:
    """One type's scenario (conformance.areas.transport.usage: UsageCtx records each step): no
    recorded failure, every step ended as expected within its bound, each bound at most the
    release's for a step, the scenario within scenario_bound_s (less the time left to Ray's
    machinery, which cannot exceed the time it ran). Returns the steps."""
    failure = r.get("failure")
    if failure:
        raise Refused(f"on {d}: {failure}")
    handover = p.get("handover_bound_s")   # declared from data.33 on (judges/handover.py)
    handover_record(d, r.get("handover"), r.get("warm_pool"),
                    float(handover) if isinstance(handover, (int, float)) and not isinstance(handover, bool) else None,
                    pooled)
    steps = r.get("steps")
    if not isinstance(steps, list) or not steps or not all(isinstance(s, Mapping) for s in steps):
        raise MissingEvidence(f"metric steps (on {d}) is missing or empty")
    for s in steps:
        what, took, bound = s.get("step"), number(s, "took_s"), number(s, "bound_s")
        if s.get("ok") is not True:
            raise Refused(f"on {d}: step {what!r} did not end as expected: {s.get('error')}")
        own = step_bound_params(str(what), step_params)
        most = sum(param_value(p, name) for name in own)
        if bound > most + STEP_BOUND_ROUNDING_S:
            raise Refused(f"on {d}: step {what!r} was bounded by {bound:g}s; the release bounds that step at {most:g}s "
                          f"({' + '.join(own)})")
        if took > bound * STEP_READ_SLACK:
            raise Refused(f"on {d}: step {what!r} took {took:.1f}s, past its bound {bound:g}s")
        if s.get("expect") in ("data", "store") and s.get("error"):   # held-out round 38, N38_28
            raise Refused(f"on {d}: step {what!r} expected {s.get('expect')} but records the error {str(s.get('error'))[:200]!r}")
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


STEP_BOUND_ROUNDING_S = 0.0005   # knob: a step records its bound rounded to 1 ms (UsageCtx.step), no threshold
# The steps whose bound is not their check's first step param (the live checks, test_transport_usage.py
# and test_transport_failures.py): (label prefixes, the step param of the checks that run them, the
# params whose sum bounds them).
OWN_STEP_PARAMS: tuple[tuple[tuple[str, ...], str, tuple[str, ...]], ...] = (
    (("the source to free",), "free_bound_s", ("free_bound_s",)),
    (("a receiver without the transport",), "fail_fast_s", ("fail_fast_s",)),
    (USER_TIMEOUT_GETS, "fail_fast_s", ("user_timeout_s", "timeout_slack_s")),
    ((RECEIVER_KILLED, RECEIVER_DIED), "error_bound_s", ("error_bound_s",)),
    (RECOVERY_PHASES, "recover_bound_s", ("recover_bound_s",)),
)


def step_bound_params(what: str, step_params: tuple[str, ...]) -> tuple[str, ...]:
    """The params whose sum bounds the step labelled `what` in a check whose steps `step_params`
    bound: the step's own (OWN_STEP_PARAMS), else the check's first. Never the largest of them: a
    fail-fast step recorded with the bound of a slow one is a stretched bound (issue 43's held-out X08)."""
    for prefixes, signal, params in OWN_STEP_PARAMS:
        if signal in step_params and any(what.startswith(x) for x in prefixes):
            return params
    return step_params[:1]


def ran(steps: list[Mapping[str, Any]], *labels: str) -> list[str]:
    """The labels among `labels` no recorded step starts with."""
    have = [str(s.get("step")) for s in steps]
    return [x for x in labels if not any(h.startswith(x) for h in have)]


def missing_steps(d: str, missing: list[str]) -> None:
    if missing:
        raise Refused(f"on {d}: the scenario records no step {missing}")


def scenario_checks(m: Mapping[str, Any], manifest: Mapping[str, Any]) -> dict[str, Mapping[str, Any]]:
    """Every type's record, its step count its own, and the time its scenarios left out of their
    bound no more than the check's recorded waits on Ray's machinery back (metrics.waits: an actor
    start, a wave and the more it was given; conformance.timing.owned.seconds_backed), when that
    record is whole."""
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
            ray_s = sum(seconds_backed(w) for w in each
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
            steps = scenario_record(d, r, p, ("error_bound_s", "recover_bound_s"), pooled_transport(manifest))
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
            steps = scenario_record(d, r, p, ("error_bound_s",), pooled_transport(manifest))
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
            steps = scenario_record(d, r, p, ("step_bound_s", "free_bound_s"), pooled_transport(manifest))
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
            steps = scenario_record(d, r, p, ("step_bound_s",), pooled_transport(manifest))
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
            steps = scenario_record(d, r, p, ("busy_bound_s",), pooled_transport(manifest))
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
            steps = scenario_record(d, r, p, ("step_bound_s", "fail_fast_s"), pooled_transport(manifest))
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
