"""Device recovery (FR-001..FR-006), and the judges of FR-004/FR-006 that releases before declared
judges name (conformance.report.judges.LEGACY), kept as they were.
"""
from __future__ import annotations

from typing import Mapping, Sequence

from conformance.areas.recovery.audit import audit, holder_problems
from conformance.areas.recovery.judges.common import (
    JUDGES,
    Findings,
    M,
    actor_error,
    assigned,
    device_count,
    env_var,
    guarded,
    holder_audit,
    left_to_ray,
    pid,
    record,
    records,
    recovery_rule,
    signature_findings,
    signatures,
    universe,
    within,
)
from conformance.report.judges import (
    FAIL,
    PASS,
    MissingEvidence,
    Verdict,
    number,
    param_value,
)


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
        within(m, "crash_error_s", p, "device_release_s", out, "the crashing holder's call failing",
               extra=left_to_ray(m, p, out, "crash_waited_s", waits="crash_waits"))
    within(m, "release_s", p, "device_release_s", out, f"the {how}ed holder's device returning to the pool",
           extra=left_to_ray(m, p, out, "released_s", waits="release_waits"))
    within(m, "reuse_s", p, "actor_ready_s", out, "a new holder starting on the released device",
           extra=left_to_ray(m, p, out, "started_s"))
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
    device_release_s and a new holder holds exactly it within actor_ready_s, views agreeing.

    Whose time (docs/recovery.md): the dead holder's unit returning to Ray's pool (released_s) and
    the new holder's start (started_s) are Ray's machinery, recorded as its waits in metrics.waits
    (stretched by the run's measurement, judged there) and left out of release_s and reuse_s here;
    a report from before they were recorded keeps the bounds unstretched. Which device the new
    holder gets, its variable and the views are the plugin's, never excused."""
    return _freed_device_reused(m, p, manifest, "kill")


@recovery_rule("FR-002", needs=("devices_on_node", "before", "new", "crash_error", "release_s", "reuse_s"),
               params=("device_release_s", "actor_ready_s"))
@guarded
def crashed_holders_device_reused(m: M, p: M, manifest: M) -> Verdict:
    """As FR-001 after the holder's process died in a method: the call failed with an actor error.

    Whose time: the call failing after its process died is Ray's (the raylet, the GCS and the
    caller's core worker; no plugin code runs on it), recorded as its wait (crash_waited_s) and left
    out of crash_error_s here; a report from before it was recorded keeps the bound unstretched."""
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
    actor_ready_s on a new worker holding exactly the device the crashed attempt held.

    Whose time: the crash noticed, the task resubmitted and its new worker started are Ray's
    machinery, a wait that also runs the plugin's code (the retry reads its device through the
    manager: Started, runs_plugin_code), recorded as retried_s and left out of retry_done_s here; a
    report from before it was recorded keeps the bound unstretched. Which device the retry holds
    stays the plugin's, never excused."""
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
    within(m, "retry_done_s", p, "actor_ready_s", out, "the retried task",
           extra=left_to_ray(m, p, out, "retried_s"))
    out.extend(holder_problems(result, env, 1, ids, "retried task"))
    if assigned(result) != assigned(crashed):
        out.append(f"the retry holds {assigned(result)} although the only free device was {assigned(crashed)} "
                   "(held by the crashed attempt)")
    if pid(result, "result") == pid(crashed, "crashed"):
        out.append("the retry reports the crashed attempt's process")
    out.extend(audit(others + [result], env, None, [f"holder {i}" for i in range(len(others))] + ["retried task"]))
    return out.verdict(f"the retry holds the crashed attempt's device {assigned(crashed)}, views agreeing")


def node_signatures_complete(sigs: Sequence[M], manifest: M, what: str) -> list[str]:
    """FR-006 runs on the nodes the suite starts from the manifest (the recovery-restart shape:
    never a --ray-address cluster), so the signatures it must record are the manifest's: cluster.nodes
    of them, at least as many with devices as its declared environment gives
    (catalog.manifest.declared_device_nodes, each with devices_per_node: signature_findings). A
    node dropped from the record, or recorded with no device, is a finding, never a smaller cluster."""
    from conformance.catalog.manifest import declared_device_nodes

    cluster = manifest.get("cluster") if isinstance(manifest, Mapping) else None
    nodes = cluster.get("nodes", 1) if isinstance(cluster, Mapping) else 1
    nodes = nodes if isinstance(nodes, int) and not isinstance(nodes, bool) and nodes >= 1 else 1
    out = []
    if len(sigs) != nodes:
        out.append(f"{what}: {len(sigs)} node signature(s); the cluster the suite starts from the manifest has "
                   f"cluster.nodes = {nodes}")
    with_devices = sum(1 for s in sigs if number(s, "devices") > 0)
    need = declared_device_nodes(manifest)
    if with_devices < need:
        out.append(f"{what}: {with_devices} node(s) advertise devices; the manifest's declared environment gives "
                   f"{need} with devices_per_node each")
    return out


@recovery_rule("FR-006", needs=("restart_s",),   # the report schema's rule for a pass (the legacy judge's needs)
               params=("restart_cluster_s", "actor_ready_s", "device_release_s"))
@guarded
def fresh_start_same_devices(m: M, p: M, manifest: M) -> Verdict:
    """After ray.shutdown() and a fresh start (within restart_cluster_s) the nodes advertise what
    they did before (the manifest's devices and type), and a holder starts with agreeing views.
    The holder's start is Ray's machinery (started_s, recorded as its wait and left out of holder_s,
    as FR-001's new holder); a report from before it was recorded keeps actor_ready_s unstretched."""
    out = Findings()
    before, after = signatures(m, "before"), signatures(m, "after")
    within(m, "restart_s", p, "restart_cluster_s", out, "the fresh start")
    if before != after:
        out.append(f"after a fresh start the nodes advertise {after}; before the shutdown: {before}")
    out.extend(signature_findings(before, manifest, "before the shutdown"))
    out.extend(node_signatures_complete(before, manifest, "before the shutdown"))
    within(m, "holder_s", p, "actor_ready_s", out, "a holder on the fresh cluster",
           extra=left_to_ray(m, p, out, "started_s"))
    holder_audit(m, "holder", env_var(m), None, out, "holder on the fresh cluster")
    return out.verdict("the fresh cluster advertises the same devices, type and labels; a holder's views agree")
