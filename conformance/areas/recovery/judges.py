"""The recovery area's judges: each check's recorded evidence + the release's params -> its outcome.

The checklist names a check's judge (`judge: <function name>`); the live check decides with it
(CheckContext.decide) and `verify` decides again with it (conformance/report/judges.py says the
rules every judge keeps). Pure: no Ray, no clock, no I/O.

What a recovery check records is what it observed after each kill, crash, partition or restart:
every holder's three views of its devices (Ray's assignment, the visible-devices variable, the
manager's view; `holder` records, conformance.areas.recovery.evidence), which node each ran on
(by role), the errors the callers saw (type and message), the step durations, the cluster view
(device totals, labels) and the transfer outcomes (digests of what was sent and received). A
judge recomputes the audit of those views (conformance.areas.recovery.audit), holds every step
duration to its param, every count to the release's params (rounds, devices) and the manifest
(devices per node, accelerator type, transport and its device types), and finally every recorded
scenario to its bound (`scenarios`, conformance/areas/recovery/scenario.py).

The live check asks the evidence part (`EVIDENCE[name]`) inside its scenario, so a finding fails
the scenario with the judge's reason; the whole judge (evidence, then scenarios) decides after it.
"""
from __future__ import annotations

import dataclasses
from types import SimpleNamespace
from typing import Any, Callable, Iterable, Mapping

from conformance.areas.recovery.audit import audit, holder_problems
from conformance.catalog.scenario_bounds import SCENARIO_CHECKS, scenario_bound
from conformance.report.judges import (
    FAIL,
    PASS,
    Decide,
    Judge,
    JudgeTable,
    MissingEvidence,
    Verdict,
    number,
    param_value,
    path_of,
    run_judge,
)
from conformance.timing.host_load import MAX_FACTOR

JUDGES = JudgeTable()
EVIDENCE: dict[str, Decide] = {}   # judge name -> its evidence part (what the live check asks in its scenario)

M = Mapping[str, Any]
ACTOR_ERRORS = ("RayActorError", "ActorDiedError", "WorkerCrashedError", "ActorUnavailableError",
                "OwnerDiedError", "NodeDiedError")
STRETCHED = ("FR-012", "FR-013", "FR-014", "FR-015", "FR-016")   # TransferRecoveryCtx.bound()
TYPE_LABEL = "ray.io/accelerator-type"
ROUNDING = 0.001   # recorded durations are rounded to 1 ms (conformance/areas/recovery/scenario.py)


# ------------------------------------------------------------------------------------- legacy judges
# Releases before declared judges (0.1.0+data.16 and earlier) judge FR-006 and FR-004 by these
# (conformance.report.judges.LEGACY): kept as they were, so those reports are judged as they were.
@JUDGES.rule(needs=("restart_s",), params=("restart_cluster_s",), decides_all=False)
def fresh_cluster_in_time(m: M, p: M, manifest: M) -> Verdict:
    took, bound = number(m, "restart_s"), param_value(p, "restart_cluster_s")
    if took > bound:
        return Verdict(FAIL, f"the fresh cluster took {took:.0f}s to start (bound {bound:g} s)")
    return Verdict(PASS, f"fresh cluster up in {took:.0f}s, within {bound:g} s")


@JUDGES.rule(needs=("round_s",), params=("stress_rounds",), decides_all=False)
def storm_ran_release_rounds(m: M, p: M, manifest: M) -> Verdict:
    """The restart storm ran the release's number of rounds: one recorded time per round."""
    times, rounds = m.get("round_s"), param_value(p, "stress_rounds")
    if not isinstance(times, list) or not times:
        raise MissingEvidence("metric round_s is missing or not a list")
    for t in times:
        number({"v": t}, "v")
    if len(times) != rounds:
        return Verdict(FAIL, f"round_s records {len(times)} round(s) but the release's params say stress_rounds = {rounds:g}")
    return Verdict(PASS, f"{len(times)} rounds of kills and crashes, as the release asks")


# ------------------------------------------------------------------------------------- the machinery
class Findings(list[str]):
    """What is wrong, in the order found; the verdict names the first few."""

    def verdict(self, passed: str) -> Verdict:
        return Verdict(FAIL, "; ".join(self[:6])) if self else Verdict(PASS, passed)


def recovery_rule(check: str, *, needs: tuple[str, ...] = (), params: tuple[str, ...] = ()
                  ) -> Callable[[Decide], Decide]:
    """A judge of one recovery check: its evidence part (the decorated function), then every
    scenario the check recorded ok within a bound the release's params give."""
    def wrap(fn: Decide) -> Decide:
        EVIDENCE[fn.__name__] = fn

        def whole(m: M, p: M, manifest: M) -> Verdict:
            verdict = fn(m, p, manifest)
            if verdict.outcome != PASS:
                return verdict
            bad = scenario_findings(check, m, p)
            return Verdict(FAIL, "; ".join(bad[:3])) if bad else verdict

        whole.__name__, whole.__doc__ = fn.__name__, fn.__doc__
        JUDGES.rule(needs=needs, params=params, decides_all=True)(whole)
        return fn
    return wrap


def evidence_verdict(j: Judge, check_id: str, m: M, p: M, manifest: M) -> Verdict:
    """The evidence part of a recovery judge (without the scenarios, which are recorded when the
    scenario ends): what the live check asks before its scenario ends."""
    part = EVIDENCE.get(j.name)
    if part is None:
        return run_judge(j, check_id, m, p, manifest)
    return run_judge(dataclasses.replace(j, decide=part, needs=()), check_id, m, p, manifest)


def scenario_findings(check: str, m: M, p: M) -> list[str]:
    """Every recorded scenario ended ok within its bound, and no bound is more than the release's
    params give (plus what it left out for Ray's machinery, plus a longer fetch timeout the run
    recorded for the transfer checks)."""
    scenarios = m.get("scenarios")
    if not isinstance(scenarios, Mapping) or not scenarios:
        raise MissingEvidence("metric scenarios is missing or empty")
    most = None
    if check in SCENARIO_CHECKS:
        try:
            most = scenario_bound(SimpleNamespace(id=check, param=lambda n: param_value(p, n)))  # type: ignore[arg-type]
        except KeyError:
            most = None
        fetch = path_of(m, "transport.rdt_fetch_timeout_s")
        if most is not None and check in STRETCHED and isinstance(fetch, (int, float)) and not isinstance(fetch, bool):
            most += min(max(float(fetch) - param_value(p, "rdt_fetch_timeout_s"), 0.0),
                        most_fetch_timeout_s(p) - param_value(p, "rdt_fetch_timeout_s"))
    out = []
    for name, sc in scenarios.items():
        sc = sc if isinstance(sc, Mapping) else {}
        elapsed, bound = number(sc, "elapsed_s"), number(sc, "bound_s")
        raw_steps = sc.get("steps_s")
        steps: M = raw_steps if isinstance(raw_steps, Mapping) else {}
        excluded = number(steps, "excluded_s") if "excluded_s" in steps else 0.0
        if excluded < 0 or excluded > elapsed + ROUNDING:
            out.append(f"scenario {name} leaves out {excluded:g} s of its {elapsed:g} s")
        elif most is not None and bound > most + excluded + ROUNDING + ROUNDING:   # excluded_s is rounded too
            out.append(f"scenario {name} records bound_s {bound:g}, more than the {most:g} s the release's params give")
        elif sc.get("outcome") != "ok":
            out.append(f"scenario {name} records outcome {sc.get('outcome')!r}: {str(sc.get('detail'))[:160]}")
        elif elapsed > bound + ROUNDING:
            out.append(f"scenario {name} took {elapsed:g} s of its {bound:g} s bound")
    return out


# ------------------------------------------------------------------------------------- evidence readers
def records(m: M, name: str, n: int | None = None) -> list[dict[str, Any]]:
    """A list of holder records (n of them when given)."""
    value = m.get(name)
    if not isinstance(value, list) or not all(isinstance(v, Mapping) for v in value):
        raise MissingEvidence(f"metric {name} is missing or not a list of holder records")
    if n is not None and len(value) != n:
        raise _Wrong(f"{name} records {len(value)} holder(s), expected {n}")
    return [dict(v) for v in value]


def record(m: M, name: str) -> dict[str, Any]:
    value = path_of(m, name)
    if not isinstance(value, Mapping):
        raise MissingEvidence(f"metric {name} is missing or not a record")
    return dict(value)


def text(m: M, name: str) -> str:
    value = path_of(m, name)
    if not isinstance(value, str) or not value.strip():
        raise MissingEvidence(f"metric {name} is missing or empty")
    return value


class _Wrong(Exception):
    """Evidence the judge can read but that shows a failure (turned into a fail)."""


def guarded(fn: Decide) -> Decide:
    def run(m: M, p: M, manifest: M) -> Verdict:
        try:
            return fn(m, p, manifest)
        except _Wrong as exc:
            return Verdict(FAIL, str(exc))
    run.__name__, run.__doc__ = fn.__name__, fn.__doc__
    return run


def expected_devices(manifest: M) -> float | None:
    value = path_of(manifest, "accelerator.expected.devices_per_node")
    return float(value) if isinstance(value, (int, float)) and not isinstance(value, bool) else None


def expected_type(manifest: M) -> str | None:
    value = path_of(manifest, "accelerator.expected.accelerator_type")
    return value if isinstance(value, str) and value else None


def device_count(m: M, name: str, manifest: M, out: list[str]) -> int:
    """A node's device count, as the manifest declares it (devices per node)."""
    count = number(m, name)
    want = expected_devices(manifest)
    if count < 1 or count != int(count):
        out.append(f"{name} is {count:g}: not a device count")
    elif want is not None and count != want:
        out.append(f"{name} is {count:g} but the manifest declares {want:g} devices per node")
    return int(count)


def env_var(m: M) -> str | None:
    if "env_var" not in m:
        raise MissingEvidence("metric env_var is missing")
    value = m["env_var"]
    if value is not None and not isinstance(value, str):
        raise MissingEvidence("metric env_var is not a name")
    return value


def universe(m: M, devices: int, out: list[str]) -> list[str]:
    ids = m.get("universe")
    if not isinstance(ids, list) or not all(isinstance(i, str) for i in ids):
        raise MissingEvidence("metric universe is missing or not a list of device ids")
    if len(set(ids)) != devices:
        out.append(f"universe records {len(set(ids))} device id(s) of a node with {devices}")
    return ids


def within(m: M, name: str, p: M, param: str, out: list[str], what: str, extra: float = 0.0) -> float:
    took, bound = number(m, name), param_value(p, param) + extra
    if took < 0:
        out.append(f"{name} is {took:g} s: negative")
    elif took > bound + ROUNDING:
        out.append(f"{what} took {took:.1f}s, over its {bound:g} s bound ({param})")
    return took


def at_least(m: M, name: str, p: M, param: str, out: list[str], what: str) -> None:
    got, want = number(m, name), param_value(p, param)
    if got + ROUNDING < want:
        out.append(f"{what} lasted {got:.1f}s, less than the {want:g} s the release asks ({param})")


def pid(rec: M, what: str) -> int:
    value = rec.get("pid")
    if isinstance(value, bool) or not isinstance(value, int):
        raise MissingEvidence(f"{what} records no pid")
    return value


def assigned(rec: M) -> list[str]:
    return sorted(str(i) for i in rec.get("assigned") or [])


def actor_error(m: M, name: str, out: list[str], what: str) -> None:
    got = text(m, name)
    if got.split(":")[0].strip() not in ACTOR_ERRORS:
        out.append(f"{what} ended in {got[:120]!r}, not an actor error ({', '.join(ACTOR_ERRORS[:3])} ...)")


def on_node(rec: M, role: str, out: list[str], what: str) -> None:
    if rec.get("node") != role:
        out.append(f"{what} ran on node {rec.get('node')!r}, not on {role}")


def selector_of(m: M, manifest: M, out: list[str]) -> dict[str, str]:
    """The label selector the work was placed by; it selects the manifest's accelerator type."""
    sel = record(m, "selector")
    want = expected_type(manifest)
    if want is not None and sel.get(TYPE_LABEL) != want:
        out.append(f"the selector {sel} does not select the manifest's accelerator type {want} ({TYPE_LABEL})")
    return {str(k): str(v) for k, v in sel.items()}


def labels_match(labels: M, selector: M) -> bool:
    return all(labels.get(k) == v for k, v in selector.items())


def view_after_loss(m: M, name: str, devices: int, out: list[str]) -> None:
    """The cluster view after a node was lost: it is dead, the device total dropped by exactly its
    count and no live node carries its labels."""
    view = record(m, name)
    before, after = number(view, "total_before"), number(view, "total_after")
    if view.get("alive") is not False:
        out.append(f"{name}: the lost node is still alive in the cluster view ({view.get('alive')!r})")
    if abs(before - after - devices) > 1e-9:
        out.append(f"{name}: the device total went {before:g} -> {after:g}, not down by the node's {devices}")
    if number(view, "labelled_live_nodes") != 0:
        out.append(f"{name}: {view.get('labelled_live_nodes')} live node(s) still carry the lost node's labels")


def signatures(m: M, name: str) -> list[dict[str, Any]]:
    value = m.get(name)
    if not isinstance(value, list) or not value or not all(isinstance(v, Mapping) for v in value):
        raise MissingEvidence(f"metric {name} is missing or not a list of node signatures")
    return [dict(v) for v in value]


def signature_findings(sigs: Iterable[M], manifest: M, what: str) -> list[str]:
    """Nodes that advertise the resource advertise the manifest's count and accelerator type."""
    out = []
    want_n, want_t = expected_devices(manifest), expected_type(manifest)
    for s in sigs:
        devices = number(s, "devices")
        if devices == 0:
            continue
        if want_n is not None and devices != want_n:
            out.append(f"{what}: a node advertises {devices:g} devices; the manifest declares {want_n:g}")
        if want_t is not None and f"accelerator_type:{want_t}" not in (s.get("types") or []):
            out.append(f"{what}: a node advertises types {s.get('types')}, not the manifest's {want_t}")
    return out


def holder_audit(m: M, name: str, env: str | None, ids: list[str] | None, out: list[str], label: str) -> dict[str, Any]:
    rec = record(m, name)
    out.extend(holder_problems(rec, env, 1, ids, label))
    return rec


# ------------------------------------------------------------------------------------- devices
def _freed_device_reused(m: M, p: M, manifest: M, how: str) -> Verdict:
    out = Findings()
    devices = device_count(m, "devices_on_node", manifest, out)
    env = env_var(m)
    ids = universe(m, devices, out)
    before = records(m, "before", devices)
    out.extend(audit(before, env, ids, [f"holder {i} before the {how}" for i in range(len(before))]))
    if how == "crash":
        actor_error(m, "crash_error", out, "the crashing holder's call")
        within(m, "crash_error_s", p, "device_release_s", out, "the crashing holder's call failing")
    within(m, "release_s", p, "device_release_s", out, f"the {how}ed holder's device returning to the pool")
    within(m, "reuse_s", p, "actor_ready_s", out, "a new holder starting on the released device")
    new = holder_audit(m, "new", env, ids, out, "new holder")
    if assigned(new) != assigned(before[0]):
        out.append(f"the new holder holds {assigned(new)}, not the released device {assigned(before[0])}")
    if pid(new, "new") in {pid(b, "before") for b in before}:
        out.append("the new holder answers from the process of an earlier holder")
    out.extend(audit(before[1:] + [new], env, ids, [f"holder {i}" for i in range(1, devices)] + ["new holder"]))
    return out.verdict(f"the {how}ed holder's device {assigned(before[0])} came back and a new holder uses it "
                       "with its views in agreement")


@recovery_rule("FR-001", needs=("devices_on_node", "before", "new", "release_s", "reuse_s"),
               params=("device_release_s", "actor_ready_s"))
@guarded
def killed_holders_device_reused(m: M, p: M, manifest: M) -> Verdict:
    """Every device held; after ray.kill() of one holder its device is free within
    device_release_s and a new holder holds exactly it within actor_ready_s, views agreeing."""
    return _freed_device_reused(m, p, manifest, "kill")


@recovery_rule("FR-002", needs=("devices_on_node", "before", "new", "crash_error", "release_s", "reuse_s"),
               params=("device_release_s", "actor_ready_s"))
@guarded
def crashed_holders_device_reused(m: M, p: M, manifest: M) -> Verdict:
    """As FR-001 after the holder's process died in a method: the call failed with an actor error."""
    return _freed_device_reused(m, p, manifest, "crash")


@recovery_rule("FR-003", needs=("devices_on_node", "before", "restarts"), params=("actor_ready_s", "device_release_s"))
@guarded
def restarted_holder_views_agree(m: M, p: M, manifest: M) -> Verdict:
    """The restartable holder came back from a new process after a crash and after a kill, each
    within actor_ready_s, holding one of the node's devices no live holder holds."""
    out = Findings()
    devices = device_count(m, "devices_on_node", manifest, out)
    env = env_var(m)
    ids = universe(m, devices, out)
    before = records(m, "before", devices)
    out.extend(audit(before, env, ids))
    restarts = m.get("restarts")
    if not isinstance(restarts, list) or not all(isinstance(r, Mapping) for r in restarts):
        raise MissingEvidence("metric restarts is missing or not a list")
    last = pid(before[0], "before[0]")
    for r in restarts:
        label = f"holder restarted after {r.get('cause')}"
        within(r, "restart_s", p, "actor_ready_s", out, f"the restart after {r.get('cause')}")
        holder = holder_audit(r, "holder", env, ids, out, label)
        if pid(holder, label) == last:
            out.append(f"{label}: still answers from the old process {last}")
        if holder.get("restarted") is False:
            out.append(f"{label}: Ray does not report it as restarted")
        last = pid(holder, label)
        out.extend(audit(before[1:] + [holder], env, ids, [f"holder {k}" for k in range(1, devices)] + [label]))
    causes = [r.get("cause") for r in restarts]
    if causes != ["crash", "kill"]:
        out.append(f"restarts records causes {causes}, expected a crash then a kill (no_restart=False)")
    return out.verdict("the holder restarted after a crash and a kill, each time on a new process with one "
                       "device its views agree on")


@recovery_rule("FR-004", needs=("round_s",),   # the report schema's rule for a pass (the legacy judge's needs)
               params=("stress_rounds", "stress_round_s", "actor_ready_s", "device_release_s"))
@guarded
def storm_rounds_audited(m: M, p: M, manifest: M) -> Verdict:
    """stress_rounds rounds in which half of the holders were killed (alternately
    ray.kill(no_restart=False) and a crash), each ending within stress_round_s with every victim
    on a new process, every other holder on its old one, and the audit clean."""
    out = Findings()
    times = m.get("round_s")
    if not isinstance(times, list):
        raise MissingEvidence("metric round_s is not a list of round times")
    for i, t in enumerate(times):
        number({f"round_s[{i}]": t}, f"round_s[{i}]")
    devices = device_count(m, "devices_on_node", manifest, out)
    env = env_var(m)
    ids = universe(m, devices, out)
    current = records(m, "before", devices)
    out.extend(audit(current, env, ids))
    rounds, want = m.get("rounds"), param_value(p, "stress_rounds")
    if not isinstance(rounds, list) or not all(isinstance(r, Mapping) for r in rounds):
        raise MissingEvidence("metric rounds is missing or not a list")
    restarts = 0
    for r, rnd in enumerate(rounds):
        cause = "kill" if r % 2 == 0 else "crash"
        victims = [i for i in range(devices) if i % 2 == r % 2] or [0]
        if rnd.get("cause") != cause or rnd.get("victims") != victims:
            out.append(f"round {r + 1} records {rnd.get('cause')!r} of {rnd.get('victims')}, expected {cause} of "
                       f"{victims}")
        within(rnd, "round_s", p, "stress_round_s", out, f"round {r + 1}")
        holders = records(rnd, "holders", devices)
        for i, (old, new) in enumerate(zip(current, holders)):
            moved = pid(new, f"round {r + 1} holder {i}") != pid(old, f"holder {i}")
            if i in victims and not moved:
                out.append(f"round {r + 1}: holder {i} was a victim but answers from its old process")
            if i not in victims and moved:
                out.append(f"round {r + 1}: holder {i} was no victim but its process changed")
        out.extend(audit(holders, env, ids, [f"round {r + 1} holder {i}" for i in range(devices)]))
        restarts += len(victims)
        current = holders
    if len(rounds) != want or len(times) != want:
        out.append(f"round_s records {len(times)} round(s), rounds {len(rounds)}, but the release's params say "
                   f"stress_rounds = {want:g}")
    if number(m, "restarts") != restarts:
        out.append(f"restarts is {m.get('restarts')} but the rounds' victims add up to {restarts}")
    if m.get("round_s") != [r.get("round_s") for r in rounds]:
        out.append(f"round_s {m.get('round_s')} is not the rounds' own times {[r.get('round_s') for r in rounds]}")
    return out.verdict(f"{len(rounds)} rounds of kills and crashes, every audit clean")


@recovery_rule("FR-005", needs=("devices_on_node", "others", "crashed", "result", "attempts", "retry_done_s"),
               params=("actor_ready_s", "device_release_s"))
@guarded
def retry_holds_crashed_attempts_device(m: M, p: M, manifest: M) -> Verdict:
    """With every other device held, the retried task (its first worker died) completed within
    actor_ready_s on a new worker holding exactly the device the crashed attempt held."""
    out = Findings()
    devices = device_count(m, "devices_on_node", manifest, out)
    env = env_var(m)
    others = records(m, "others", devices - 1)
    crashed, result = record(m, "crashed"), record(m, "result")
    ids = sorted({i for s in others for i in assigned(s)} | set(assigned(crashed)))
    if len(ids) != devices:
        out.append(f"the holders and the crashed attempt held {len(ids)} device(s) of a node with {devices}")
    if number(m, "attempts") < 2:   # knob: structure: a retry is the second attempt
        out.append(f"the ledger records {m.get('attempts')} attempt(s): the task was never retried")
    within(m, "retry_done_s", p, "actor_ready_s", out, "the retried task")
    out.extend(holder_problems(result, env, 1, ids, "retried task"))
    if assigned(result) != assigned(crashed):
        out.append(f"the retry holds {assigned(result)} although the only free device was {assigned(crashed)} "
                   "(held by the crashed attempt)")
    if pid(result, "result") == pid(crashed, "crashed"):
        out.append("the retry reports the crashed attempt's process")
    out.extend(audit(others + [result], env, None, [f"holder {i}" for i in range(len(others))] + ["retried task"]))
    return out.verdict(f"the retry holds the crashed attempt's device {assigned(crashed)}, views agreeing")


@recovery_rule("FR-006", needs=("restart_s",),   # the report schema's rule for a pass (the legacy judge's needs)
               params=("restart_cluster_s", "actor_ready_s", "device_release_s"))
@guarded
def fresh_start_same_devices(m: M, p: M, manifest: M) -> Verdict:
    """After ray.shutdown() and a fresh start (within restart_cluster_s) the nodes advertise what
    they did before (the manifest's devices and type), and a holder starts with agreeing views."""
    out = Findings()
    before, after = signatures(m, "before"), signatures(m, "after")
    within(m, "restart_s", p, "restart_cluster_s", out, "the fresh start")
    if before != after:
        out.append(f"after a fresh start the nodes advertise {after}; before the shutdown: {before}")
    out.extend(signature_findings(before, manifest, "before the shutdown"))
    within(m, "holder_s", p, "actor_ready_s", out, "a holder on the fresh cluster")
    holder_audit(m, "holder", env_var(m), None, out, "holder on the fresh cluster")
    return out.verdict("the fresh cluster advertises the same devices, type and labels; a holder's views agree")


# ------------------------------------------------------------------------------------- nodes
@recovery_rule("FR-007", needs=("node_b_devices", "gone_s", "view_after", "in_flight_call_error", "call_failed_s",
                                "survivors", "survivors_watched_s"),
               params=("node_gone_s", "survivor_watch_s", "actor_ready_s"))
@guarded
def dead_node_left_view_survivors_kept(m: M, p: M, manifest: M) -> Verdict:
    """Node b killed hard: gone from the view (its devices and labels) within node_gone_s, the call
    in flight on it failed with an actor error within node_gone_s, and the holders on the head and
    node c kept their process and devices while watched for survivor_watch_s."""
    out = Findings()
    devices = device_count(m, "node_b_devices", manifest, out)
    env = env_var(m)
    within(m, "gone_s", p, "node_gone_s", out, "node b leaving the cluster view")
    view_after_loss(m, "view_after", devices, out)
    actor_error(m, "in_flight_call_error", out, "the call in flight on node b")
    within(m, "call_failed_s", p, "node_gone_s", out, "the call in flight on node b failing")
    survivors = record(m, "survivors")
    if sorted(survivors) != ["c", "head"]:
        out.append(f"survivors records nodes {sorted(survivors)}, expected head and c")
    for role, seen in survivors.items():
        seen = seen if isinstance(seen, Mapping) else {}
        old, now = record(seen, "before"), seen.get("after")
        if not isinstance(now, Mapping):
            out.append(f"holder on node {role} stopped answering after node b died ({str(now)[:120]})")
            continue
        on_node(old, role, out, f"holder on node {role}")
        on_node(now, role, out, f"holder on node {role} after node b died")
        if (pid(old, role), assigned(old)) != (pid(now, role), assigned(now)):
            out.append(f"holder on node {role}: was pid {old.get('pid')} with {assigned(old)}, now pid "
                       f"{now.get('pid')} with {assigned(now)}: disturbed by another node's death")
        out.extend(holder_problems(dict(now), env, 1, None, f"holder on node {role}"))
    if not out:   # the watch ends early when a survivor is disturbed
        at_least(m, "survivors_watched_s", p, "survivor_watch_s", out, "the watch of the survivors")
    return out.verdict("node b left the view with its devices and labels; the survivors kept their processes "
                       "and devices")


def _moved_to_c(m: M, p: M, name: str, selector: Mapping[str, str], env: str | None, out: list[str],
                bound: str, label: str) -> None:
    """A piece of pool work (`label`) that started on b and ran again on c (the only surviving match)."""
    work = record(m, name)
    first, moved = record(work, "first"), record(work, "moved")
    on_node(first, "b", out, f"{label} before node b was lost")
    on_node(moved, "c", out, label)
    labels = record(work, "moved_labels")
    if not labels_match(labels, selector):
        out.append(f"{label} ran on a node with labels {labels}, which do not match its selector {selector}")
    if pid(moved, name) == pid(first, name):
        out.append(f"{label} answers from its old process")
    within(work, "moved_s", p, bound, out, f"{label} running again")
    out.extend(holder_problems(dict(moved), env, 1, None, label))


@recovery_rule("FR-008", needs=("node_b_devices", "selector", "gone_s", "view_after", "actor"),
               params=("reschedule_s", "node_gone_s", "actor_ready_s", "device_release_s", "rejoin_s"))
@guarded
def pool_work_moved_to_matching_survivor(m: M, p: M, manifest: M) -> Verdict:
    """The restartable actor (and, with a device to spare on b, the retried task) placed on b by a
    selector with the accelerator type ran again within reschedule_s on node c, the only surviving
    node matching it, holding one device with agreeing views."""
    out = Findings()
    devices = device_count(m, "node_b_devices", manifest, out)
    env = env_var(m)
    selector = selector_of(m, manifest, out)
    within(m, "gone_s", p, "node_gone_s", out, "node b leaving the cluster view")
    view_after_loss(m, "view_after", devices, out)
    _moved_to_c(m, p, "actor", selector, env, out, "reschedule_s", "pool actor")
    if devices >= 2:   # knob: structure: the task needs a device beside the actor's (as the check)
        _moved_to_c(m, p, "task", selector, env, out, "reschedule_s", "pool task")
    return out.verdict("the pool work ran again on node c, the surviving node matching its selector")


@recovery_rule("FR-009", needs=("node_b_devices", "selector", "first", "gone_s", "window", "back", "back_labels",
                                "ran_after_rejoin_s"),
               params=("pending_window_s", "rejoin_s", "node_gone_s", "actor_ready_s", "view_settle_s"))
@guarded
def pinned_work_waited_for_rejoin(m: M, p: M, manifest: M) -> Verdict:
    """The actor only node b matched neither ran elsewhere nor failed while watched for
    pending_window_s after b died, then ran on the rejoined b within rejoin_s, views agreeing."""
    out = Findings()
    device_count(m, "node_b_devices", manifest, out)
    env = env_var(m)
    selector = selector_of(m, manifest, out)
    if selector.get("conformance.areas.recovery/node") != "b":
        out.append(f"the selector {selector} does not pin the work to node b")
    within(m, "gone_s", p, "node_gone_s", out, "node b leaving the cluster view")
    first = record(m, "first")
    on_node(first, "b", out, "the pinned actor before node b died")
    window = record(m, "window")
    at_least(window, "watched_s", p, "pending_window_s", out, "the pending window")
    if window.get("ran_on") is not None:
        out.append(f"the actor pinned to node b by label ran on node {window.get('ran_on')!r} while no node "
                   f"matched {selector}")
    if window.get("failed") is not None:
        out.append(f"the actor whose only matching node died failed with {window.get('failed')!r} instead of "
                   "waiting for a matching node")
    if out:
        return out.verdict("")   # what came after a failed window judges nothing more
    back = record(m, "back")
    on_node(back, "b", out, "the actor after the rejoin")
    if not labels_match(record(m, "back_labels"), selector):
        out.append(f"after the rejoin the actor ran on a node with labels {m.get('back_labels')}, not matching {selector}")
    if pid(back, "back") == pid(first, "first"):
        out.append("after the rejoin the actor answers from its old process")
    within(m, "ran_after_rejoin_s", p, "rejoin_s", out, "the pending actor running on the rejoined node")
    out.extend(holder_problems(back, env, 1, None, "actor after the rejoin"))
    return out.verdict("the pinned actor waited while no node matched and ran on the rejoined node b")


@recovery_rule("FR-010", needs=("node_b_devices", "placed", "lost", "gone_s", "pg_states_seen", "new_node",
                                "pg_rescheduled_s", "moved", "moved_s", "survivor_before", "survivor_after"),
               params=("pg_reschedule_s", "node_gone_s", "actor_ready_s", "device_release_s", "rejoin_s"))
@guarded
def lost_bundle_placed_again_survivor_kept(m: M, p: M, manifest: M) -> Verdict:
    """The STRICT_SPREAD group's bundle on b was placed again (group CREATED) within
    pg_reschedule_s on another live node than the kept bundle's, its actor answered there within
    pg_reschedule_s holding one device, and the kept bundle's actor kept its process and device."""
    out = Findings()
    device_count(m, "node_b_devices", manifest, out)
    env = env_var(m)
    within(m, "gone_s", p, "node_gone_s", out, "node b leaving the cluster view")
    placed, lost = record(m, "placed"), number(m, "lost")
    if sorted(str(v) for v in placed.values()) != ["b", "c"] or lost not in (0, 1):
        out.append(f"the bundles were placed on {placed} (lost bundle {lost:g}), not one on b and one on c")
        return out.verdict("")
    lost_i, kept_i = int(lost), 1 - int(lost)
    if placed.get(str(lost_i)) != "b":
        out.append(f"the lost bundle {lost_i} was placed on {placed.get(str(lost_i))!r}, not on node b")
    new_node = m.get("new_node")
    if new_node in ("b", placed.get(str(kept_i))) or not isinstance(new_node, str):
        out.append(f"the lost bundle was placed again on {new_node!r}: not another live node than the kept "
                   f"bundle's {placed.get(str(kept_i))!r} (STRICT_SPREAD)")
    if "CREATED" not in (m.get("pg_states_seen") or []):
        out.append(f"the group was never seen CREATED again (states {m.get('pg_states_seen')})")
    within(m, "pg_rescheduled_s", p, "pg_reschedule_s", out, "the lost bundle being placed again")
    within(m, "moved_s", p, "pg_reschedule_s", out, "the lost bundle's actor running again")
    moved = record(m, "moved")
    if moved.get("node") != new_node:
        out.append(f"the lost bundle's actor runs on {moved.get('node')!r}, not on its bundle's new node {new_node!r}")
    out.extend(holder_problems(moved, env, 1, None, "lost bundle's actor"))
    old, now = record(m, "survivor_before"), record(m, "survivor_after")
    if (pid(old, "survivor"), assigned(old)) != (pid(now, "survivor"), assigned(now)):
        out.append("the actor in the surviving bundle was restarted or changed device: "
                   f"{assigned(old)} (pid {old.get('pid')}) -> {assigned(now)} (pid {now.get('pid')})")
    return out.verdict(f"the lost bundle was placed again on {new_node}; the kept bundle's actor kept its device")


@recovery_rule("FR-011", needs=("node_b_devices", "before", "after", "gone_s", "alive_s", "rejoin_s", "holder"),
               params=("rejoin_s", "view_settle_s", "actor_ready_s", "node_gone_s", "device_release_s"))
@guarded
def rejoined_node_advertises_as_before(m: M, p: M, manifest: M) -> Verdict:
    """The killed node b, added again, was alive within rejoin_s and advertised its devices, type
    and labels as before within view_settle_s more; a holder selecting it started there."""
    out = Findings()
    device_count(m, "node_b_devices", manifest, out)
    env = env_var(m)
    within(m, "gone_s", p, "node_gone_s", out, "node b leaving the cluster view")
    before, after = signatures(m, "before"), signatures(m, "after")
    if before != after:
        out.append(f"the rejoined node b advertises {after}; before it died: {before}")
    out.extend(signature_findings(before, manifest, "node b before it died"))
    within(m, "alive_s", p, "rejoin_s", out, "the rejoined node b being alive")
    within(m, "rejoin_s", p, "rejoin_s", out, "the rejoined node b advertising as before",
           extra=param_value(p, "view_settle_s"))
    holder = record(m, "holder")
    on_node(holder, "b", out, "the holder selecting the rejoined node")
    out.extend(holder_problems(holder, env, 1, None, "actor on the rejoined node"))
    return out.verdict("the rejoined node b advertises its devices, type and labels as before")


@recovery_rule("FR-017", needs=("node_b_devices", "selector", "declared_dead_s", "view_after", "actor",
                                "healed_watch", "rejoined", "rejoin_s"),
               params=("dead_within_s", "reschedule_s", "healed_watch_s", "rejoin_s"))
@guarded
def partitioned_node_replaced_and_rejoined_new(m: M, p: M, manifest: M) -> Verdict:
    """Node b partitioned: dead in the view within dead_within_s (devices and labels gone), its
    pool actor ran again on c within reschedule_s, the old node stayed dead for healed_watch_s
    after the link came back, and the restarted host joined as a new node advertising as before
    within rejoin_s."""
    out = Findings()
    devices = device_count(m, "node_b_devices", manifest, out)
    env = env_var(m)
    selector = selector_of(m, manifest, out)
    within(m, "declared_dead_s", p, "dead_within_s", out, "the partitioned node b being declared dead")
    view_after_loss(m, "view_after", devices, out)
    _moved_to_c(m, p, "actor", selector, env, out, "reschedule_s", "pool actor after the partition")
    if out:
        return out.verdict("")   # the partition was not handled: what came after judges nothing more
    watch = record(m, "healed_watch")
    at_least(watch, "watched_s", p, "healed_watch_s", out, "the watch of the healed node")
    if watch.get("old_node_back") is not False:
        out.append("node b is alive again under its old id after the partition healed")
    rejoined = record(m, "rejoined")
    if rejoined.get("new_id") is not True:
        out.append("the healed host did not join as a new node (its old node id)")
    before, after = signatures(rejoined, "before"), signatures(rejoined, "after")
    if before != after:
        out.append(f"the healed host advertises {after}; before the partition: {before}")
    out.extend(signature_findings(before, manifest, "node b before the partition"))
    within(m, "rejoin_s", p, "rejoin_s", out, "the healed host joining as a new node")
    return out.verdict("the partitioned node was replaced; the healed host joined as a new node")


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
            for device, t in transport_types(m, p, manifest, out):
                out.extend(fn(t, m, p, device))
            return out.verdict(str(fn.__doc__ or "").split(".")[0].strip())

        evidence.__name__, evidence.__doc__ = fn.__name__, fn.__doc__
        recovery_rule(check, needs=("transport", "devices"), params=params)(evidence)
        return fn
    return wrap


def transport_types(m: M, p: M, manifest: M, out: list[str]) -> list[tuple[str, M]]:
    """Each device type the check ran on, with its evidence: the manifest's transport, every
    type it declares exercised (or recorded not applicable, with why), and its traits
    (transport_traits)."""
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
    missing = [d for d in declared if d not in exercised and d not in skipped]
    if missing:
        out.append(f"declared device type(s) {missing} were never exercised")
    if len(declared) > 1:   # each type's evidence under its name (conformance.rdt.each_device)
        return [(str(d), record(m, str(d))) for d in exercised]
    return [(str(exercised[0]), m)]


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


def most_fetch_timeout_s(p: M) -> float:
    """The longest RDT fetch timeout a run may record: the release's, stretched at most as far as
    the suite stretches any wait on Ray's machinery (a loaded host, or a vendor's own cluster
    configured longer: that run is not applicable beyond it)."""
    return param_value(p, "rdt_fetch_timeout_s") * MAX_FACTOR


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
