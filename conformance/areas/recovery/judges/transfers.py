"""Transfer recovery (FR-012..FR-016, FR-018): each device type the transport declares, its
traits held, and what the receiver, the source and the transport did after each failure.
"""
from __future__ import annotations

from typing import Callable, Mapping

from conformance.areas.recovery.judges.common import (
    ROUNDING,
    Findings,
    M,
    guarded,
    most_fetch_timeout_s,
    record,
    recovery_rule,
    text,
    within,
)
from conformance.rdt.accelerator_rule import coverage_problem
from conformance.report.judges import (
    MissingEvidence,
    Verdict,
    number,
    param_value,
    path_of,
)
from conformance.timing.host_load import MAX_FACTOR

# ------------------------------------------------------------------------------------- transfers
PerType = Callable[[M, M, M, str], list[str]]   # (the type's evidence, the check's, params, device) -> findings
PER_TYPE: dict[str, PerType] = {}   # judge name -> its findings on one device type (asked inside each scenario)


def transfer_rule(check: str, *, params: tuple[str, ...]) -> Callable[[PerType], PerType]:
    """A judge of a transfer check: the transport and device types the manifest declares, then
    the decorated function's findings on each device type the check ran on."""
    def wrap(fn: PerType) -> PerType:
        PER_TYPE[fn.__name__] = fn

        @guarded
        def evidence(m: M, p: M, manifest: M) -> Verdict:
            out = Findings()
            types = transport_types(m, p, manifest, out)
            for device, t in types:
                out.extend(fn(t, m, p, device))
            out.extend(scenario_per_type(m, manifest, [d for d, _ in types]))
            return out.verdict(str(fn.__doc__ or "").split(".")[0].strip())

        evidence.__name__, evidence.__doc__ = fn.__name__, fn.__doc__
        recovery_rule(check, needs=("transport", "devices"), params=params)(evidence)
        return fn
    return wrap


def transport_types(m: M, p: M, manifest: M, out: list[str]) -> list[tuple[str, M]]:
    """Each device type the check ran on, with its evidence: the manifest's transport, every
    type it declares exercised (or recorded not applicable, with why; the accelerator's type
    exercised unless the manifest gives its reason: conformance.rdt.accelerator_rule), and its
    traits (transport_traits)."""
    tr = record(m, "transport")
    declared = path_of(manifest, "transport.devices") or ["cpu"]
    name = path_of(manifest, "transport.name")
    if name is not None and tr.get("name") != name:
        out.append(f"the check ran transport {tr.get('name')!r}, the manifest declares {name!r}")
    out.extend(transport_traits(tr, manifest))
    collective = manifest_collective(manifest)
    if tr.get("collective", False) is not collective:
        out.append(f"the record says the transport is{'' if tr.get('collective') else ' not'} a collective one; the "
                   f"manifest's transport {name!r} is{'' if collective else ' not'}")
    if list(tr.get("devices") or []) != list(declared):
        out.append(f"the transport ran on device types {tr.get('devices')}, the manifest declares {declared}")
    fetch = number(tr, "rdt_fetch_timeout_s")
    most = most_fetch_timeout_s(p) if "rdt_fetch_timeout_s" in p else fetch   # FR-018 runs with the partition's own
    if fetch > most + 1e-6:   # knob: float rounding, no threshold
        out.append(f"the run records an RDT fetch timeout of {fetch:g} s, more than the {most:g} s the release's "
                   f"rdt_fetch_timeout_s may be stretched to (x{MAX_FACTOR:g}): no run, argument or cluster widens a bound further")
    exercised = m.get("devices")
    raw_skipped = m.get("not_applicable_on")
    skipped: M = raw_skipped if isinstance(raw_skipped, Mapping) else {}
    if not isinstance(exercised, list) or not exercised:
        raise MissingEvidence("metric devices is missing or empty (no device type exercised)")
    problem = coverage_problem([str(d) for d in declared], exercised, skipped, manifest)
    if problem is not None:
        out.append(problem)
    if len(declared) > 1:   # each type's evidence under its name (conformance.rdt.each_device)
        return [(str(d), record(m, str(d))) for d in exercised]
    return [(str(exercised[0]), m)]


def scenario_per_type(m: M, manifest: M, exercised: list[str]) -> list[str]:
    """A transfer check runs its one scenario on each type it exercised (RecoveryCtx.timed: named
    "<scenario> on <type>" when the transport declares several), so the scenarios it must record
    are those the manifest's types and the exercised ones give, never what the record kept: a
    scenario dropped (one that failed, say) is a finding, not a type without one."""
    scenarios = m.get("scenarios")
    if not isinstance(scenarios, Mapping) or not scenarios:
        raise MissingEvidence("metric scenarios is missing or empty")
    declared = path_of(manifest, "transport.devices") or ["cpu"]
    names = [str(k) for k in scenarios]
    if len(declared) < 2:
        return [] if len(names) == 1 else [f"records scenarios {names}; the check runs one"]
    bases = {k.rsplit(" on ", 1)[0] for k in names}
    want = {f"{b} on {d}" for b in bases for d in exercised} if len(bases) == 1 else set()
    if set(names) != want or len(names) != len(exercised):
        return [f"records scenarios {sorted(names)}; the check runs one on each type it exercised ({exercised})"]
    return []


def transport_traits(tr: M, manifest: M) -> list[str]:
    """The transport's recorded traits (one_sided: is_one_sided(); can_abort: can_abort_transport();
    what the vendor's class returned) decide which recovery a judge asks for (recovered, FR-014), so
    they are held to what the submitter cannot edit alone: both must be recorded (a trait dropped is
    missing evidence, never "cannot abort"); a built-in transport the manifest names has Ray's
    (conformance.rdt.config.BUILTIN_TRAITS); a vendor's own has no declaration in the manifest, so
    the branch's evidence holds it (the recovery `recovered.how`, FR-014's abort calls: abort_branch)
    and verify holds every record of it in the report to the others (signing/evidence.py
    transport_trait_problems)."""
    from conformance.rdt.config import TRAITS, builtin_traits

    for trait in TRAITS:
        if not isinstance(tr.get(trait), bool):
            raise MissingEvidence(f"metric transport.{trait} is missing or not a bool")
    fixed = builtin_traits(manifest)
    if fixed is None:
        return []
    return [f"the record says {t} is {tr.get(t)}, but Ray's built-in {path_of(manifest, 'transport.name')} returns {fixed[t]}"
            for t in TRAITS if tr.get(t) != fixed[t]]


ABORT_EVIDENCE = ("abort_calls", "abort_seen_s", "abort_failed", "alive_after_abort")   # FR-014, can abort
NO_ABORT_EVIDENCE = ("actors_killed_s",)                                              # FR-014, cannot abort


def abort_branch(t: M, can_abort: bool, device: str) -> list[str]:
    """FR-014's record is the branch of its can_abort: Ray calls abort_transport only on a
    transport whose class says it can abort, and kills both actors only of one that cannot, and
    the check records each only in its branch. An abort observed (abort_calls, abort_seen_s, ...)
    beside can_abort False, or the actors killed beside True, is a trait edited after the run."""
    other = NO_ABORT_EVIDENCE if can_abort else ABORT_EVIDENCE
    seen = [k for k in other if t.get(k) is not None]
    if not seen:
        return []
    what = "Ray killing both actors" if can_abort else "an abort Ray made"
    return [f"on {device}: the record says can_abort is {can_abort}, but it records {what} ({', '.join(seen)}), "
            "which happens only to a transport whose class answers the other way"]


def fetch_bound(m: M, p: M) -> float:
    """A failed transfer surfaces within the run's RDT fetch timeout plus transfer_error_s."""
    return number(record(m, "transport"), "rdt_fetch_timeout_s") + param_value(p, "transfer_error_s")


def ended_in_data_or_error(t: M, bound: float, out: list[str], what: str) -> None:
    """A transfer that ended within `bound`, in the exact bytes sent or an error."""
    kind, took = t.get("result"), number(t, "result_s")
    if took > bound + ROUNDING:
        out.append(f"{what} ended after {took:.1f}s, over its {bound:g} s bound")
    if kind == "error":
        text(t, "error")
    elif kind == "data":
        if record(t, "sent") != record(t, "got"):
            out.append(f"{what} delivered {t.get('got')}, not the {t.get('sent')} sent: corrupted, not an error")
    else:
        out.append(f"{what} records result {kind!r}, neither data nor an error")


def manifest_collective(manifest: M) -> bool:
    """The manifest's transport needs a collective group (a built-in GLOO/NCCL: conformance.rdt.
    config.TransportConfig.collective_backend): a trait of the transport the manifest names, never
    a flag of the evidence."""
    from conformance.rdt.config import BUILTIN_TRANSPORTS, COLLECTIVE_TRANSPORTS

    block = manifest.get("transport") if isinstance(manifest, Mapping) else None
    if not isinstance(block, Mapping) or not isinstance(block.get("name"), str):
        raise MissingEvidence("the manifest declares no transport.name")
    name = block["name"].upper()
    return block.get("manager") is None and name in BUILTIN_TRANSPORTS and name in COLLECTIVE_TRANSPORTS


def recovered(t: M, m: M, p: M, out: list[str], device: str) -> None:
    """After the failure: a transport that can abort keeps its receiver (a new source sends to it),
    one that cannot gives way to a new pair; either transfer bit-exact within transfer_error_s."""
    tr = record(m, "transport")
    rec = record(t, "recovered")
    if rec.get("how") == "receiver died" and tr.get("can_abort"):
        out.append(f"on {device}: the receiver died with its source although the transport can abort "
                   "(Ray only kills actors of transports that cannot)")
        return
    # tr.collective is held to the manifest's transport (transport_types)
    want = "same receiver" if tr.get("can_abort") and not tr.get("collective") else "new pair"
    if rec.get("how") != want:
        out.append(f"on {device}: the transport recovered by {rec.get('how')!r}; for can_abort={tr.get('can_abort')} "
                   f"the requirement asks for a {want}")
    if rec.get("bitexact") is not True:
        out.append(f"on {device}: the transfer after the failure was not bit-exact")
    within(rec, "s", p, "transfer_error_s", out, f"on {device}: the transfer after the failure")


def no_leftovers(t: M, p: M, out: list[str]) -> None:
    number(t, "killed_source_files_held")
    left = number(t, "left_by_killed_source")
    if left:
        names = t.get("left_files") if isinstance(t.get("left_files"), list) else []
        out.append(f"the transport left behind what its killed source held: {left:g} file(s) still there, held by "
                   f"no process, {param_value(p, 'leftover_bound_s'):g}s after the receiver recovered"
                   + (f": {', '.join(str(n)[:120] for n in names[:5])}" if names else ""))


def _dead_source(t: M, m: M, p: M, device: str, during: bool) -> list[str]:
    out: list[str] = []
    bound = fetch_bound(m, p) + (param_value(p, "held_receive_s") if during else 0.0)
    ended_in_data_or_error(t, bound, out, f"on {device}: the receiver's task after its source died")
    if not out:
        recovered(t, m, p, out, device)
    if not out:
        no_leftovers(t, p, out)
    return out


@transfer_rule("FR-012", params=("transfer_error_s", "rdt_fetch_timeout_s", "actor_ready_s", "leftover_bound_s"))
def dead_source_before_fetch_ended(t: M, m: M, p: M, device: str) -> list[str]:
    """The source killed before the fetch: the receiver's task ended within the fetch timeout plus
    transfer_error_s in the exact bytes or an error, the transport recovered within
    transfer_error_s, and nothing the source held was left behind."""
    return _dead_source(t, m, p, device, during=False)


@transfer_rule("FR-013", params=("transfer_error_s", "held_receive_s", "rdt_fetch_timeout_s", "actor_ready_s",
                                 "leftover_bound_s"))
def dead_source_mid_transfer_ended(t: M, m: M, p: M, device: str) -> list[str]:
    """The source killed while the held receive was in flight: as FR-012, held_receive_s more."""
    return _dead_source(t, m, p, device, during=True)


@transfer_rule("FR-014", params=("rdt_fetch_timeout_s", "transfer_error_s", "abort_seen_s", "actor_ready_s"))
def fetch_timeout_failed_and_transport_recovered(t: M, m: M, p: M, device: str) -> list[str]:
    """The receive held past the fetch timeout failed the task in time; a transport that can abort
    got abort_transport on the required sides within abort_seen_s without raising and both actors
    transferred both ways; one that cannot had both actors killed and a new pair transferred.
    can_abort (and one_sided, which names the sides) are the recorded ones, held by
    transport_traits, and the record must be their branch's (abort_branch): an abort that raised
    cannot be excused as "abort not supported" beside the abort calls the run saw."""
    out: list[str] = []
    tr = record(m, "transport")
    if t.get("result") != "error":
        out.append(f"on {device}: a transfer held past Ray's fetch timeout ended in {t.get('result')!r}, not an error")
    else:
        ended_in_data_or_error(t, fetch_bound(m, p), out, f"on {device}: the receiver's task")
    if out:
        return out
    out.extend(abort_branch(t, bool(tr.get("can_abort")), device))
    if out:
        return out
    if tr.get("can_abort"):
        sides = ["receiver"] if tr.get("one_sided") else ["receiver", "sender"]
        calls = record(t, "abort_calls")
        for side in sides:
            if number(calls, side) < 1:
                out.append(f"on {device}: Ray's abort_transport never reached the {side}")
        if t.get("abort_failed"):
            out.append(f"on {device}: abort_transport raised: {t.get('abort_failed')}")
        within(t, "abort_seen_s", p, "abort_seen_s", out, f"on {device}: abort_transport being seen")
        if t.get("alive_after_abort") != {s: True for s in sides}:
            out.append(f"on {device}: after the abort the actors' liveness was {t.get('alive_after_abort')}")
        if out:
            return out
        if not isinstance(t.get("transferred_again"), list):
            raise MissingEvidence("metric transferred_again is missing")
        if t.get("transferred_again") != ["forward", "backward"]:
            out.append(f"on {device}: the same pair transferred again {t.get('transferred_again')}, not both ways")
    else:
        within(t, "actors_killed_s", p, "abort_seen_s", out, f"on {device}: Ray killing both actors")
        if t.get("transferred_again") != ["new pair"]:
            out.append(f"on {device}: no new pair transferred after Ray killed the old one")
    return out


@transfer_rule("FR-015", params=("transfer_error_s", "rdt_fetch_timeout_s", "actor_ready_s"))
def receive_error_reached_caller(t: M, m: M, p: M, device: str) -> list[str]:
    """The receive's own error (InjectedReceiveError) reached the caller within transfer_error_s,
    both actors stayed alive, and the same object and a new one arrived bit-exact."""
    out: list[str] = []
    error = text(t, "error")
    if "InjectedReceiveError" not in error:
        out.append(f"on {device}: the caller saw {error[:160]!r}, not the receive's own error (InjectedReceiveError)")
    within(t, "error_s", p, "transfer_error_s", out, f"on {device}: the receive's error reaching the caller")
    if t.get("alive") != {"sender": True, "receiver": True}:
        out.append(f"on {device}: after the receive error the actors' liveness was {t.get('alive')}")
    if out:
        return out
    if record(t, "sent") != record(t, "again"):
        out.append(f"on {device}: sending the same object again gave {t.get('again')}, not the source's "
                   f"{t.get('sent')}: the failed receive lost the source's copy")
    within(t, "again_s", p, "transfer_error_s", out, f"on {device}: the same object sent again")
    if out:
        return out
    if not isinstance(t.get("new_transfer"), bool):
        raise MissingEvidence("metric new_transfer is missing")
    if t.get("new_transfer") is not True:
        out.append(f"on {device}: a new transfer after the receive error did not arrive bit-exact")
    return out


@transfer_rule("FR-016", params=("actor_ready_s", "transfer_error_s", "rdt_fetch_timeout_s"))
def restarted_actor_transfers_again(t: M, m: M, p: M, device: str) -> list[str]:
    """The source, then the receiver, crashed and came back from a new process within
    actor_ready_s, and a transfer with each arrived bit-exact."""
    out: list[str] = []
    restarts = record(t, "restarts")
    if sorted(restarts) != ["receiver", "source"]:
        out.append(f"on {device}: restarts records {sorted(restarts)}, expected the source and the receiver")
    for role, r in restarts.items():
        r = r if isinstance(r, Mapping) else {}
        old, new = number(r, "old_pid"), number(r, "new_pid")
        if old == new:
            out.append(f"on {device}: the {role} answers from its old process")
        within(r, "restart_s", p, "actor_ready_s", out, f"on {device}: the {role}'s restart")
        if r.get("transferred") is not True:
            out.append(f"on {device}: no bit-exact transfer with the restarted {role}")
    return out


@transfer_rule("FR-018", params=("transfer_end_s", "transfer_error_s", "actor_ready_s"))
def partition_transfer_ended_in_bound(t: M, m: M, p: M, device: str) -> list[str]:
    """The transfer from the partitioned node ended within transfer_end_s in the exact bytes or an
    error, and the transport recovered (bit-exact within transfer_error_s)."""
    out: list[str] = []
    ended_in_data_or_error(t, param_value(p, "transfer_end_s"), out, f"on {device}: the transfer across the partition")
    if not out:
        recovered(t, m, p, out, device)
    return out
