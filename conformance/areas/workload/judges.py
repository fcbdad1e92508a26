"""The workload area's judges: each check's recorded evidence + the release's params -> its outcome.

The checklist names a check's judge (`judge: <function name>`); the live check decides with it
(CheckContext.decide) and `verify` decides again with it (conformance/report/judges.py says the
rules every judge keeps). Pure: no Ray, no clock, no I/O (numpy: WL-002's reference).

Every scenario records, per device type it ran on (`devices.<type>`), the counts the release's
params fix (rounds, waves, receivers, stages, steps), each round's seconds and the number of
problems each round showed (`wrong_per_round`), and its actors' memory series: the judge holds
the counts to the params, every round to its bound, every count of problems to zero, and decides
memory flatness again from the series (sync.memory_problems, the live check's own rule; a device
type's memory never read is missing evidence). The sizes are the params': the state's bytes and
tensors are the model layout of state_bytes in blocks (model.layout, recomputed here), an
activation's bytes the pipeline plan's of activation_bytes, each capped by the run's size knob
only where the check records it (metric size_cap, as the transport checks do: verify holds it to
the run record's selection.environment, and a capped run is not a certification run). WL-002's
judge recomputes the single-process reference from the params and holds the parameters the ranks
ended with (all equal, by their digests) to its rounding bound. The library findings (WL-010..013)
are recomputed from what the scenario observed.
"""
from __future__ import annotations

from typing import Any, Callable, Mapping

from conformance.report.judges import FAIL, PASS, JudgeTable, MissingEvidence, Verdict, number, param_value, ran_remote

JUDGES = JudgeTable()
HOST = "cpu"   # the host device type (conformance.rdt.device.HOST): its memory is the host figure

# the driver reads a round's seconds after its bounded wait returns: a loaded driver may read one a
# little past the bound the wait itself held (the same allowance as CC-009's)
_WAIT_SLACK_S = 2.0   # knob: the driver times a round after its bounded wait returns (see above)


class _Wrong(Exception):
    """A record that contradicts the params or the manifest (a fail, not missing evidence)."""


def _declared(manifest: Mapping[str, Any], block: str, default: tuple[str, ...] = ("cpu",)) -> list[str]:
    section = manifest.get(block) if isinstance(manifest, Mapping) else None
    value = section.get("devices") if isinstance(section, Mapping) else None
    return [str(v) for v in value] if isinstance(value, list) and value else list(default)


def _per_device(m: Mapping[str, Any], declared: list[str], where: str) -> list[tuple[str, Mapping[str, Any]]]:
    """The record of every device type the manifest declares (`where` names the manifest field)."""
    devices = m.get("devices")
    if not isinstance(devices, Mapping) or not devices:
        raise MissingEvidence("metric devices is missing or empty")
    if sorted(map(str, devices)) != sorted(declared):
        raise _Wrong(f"records device types {sorted(map(str, devices))}, the manifest's {where} are {declared}")
    out = []
    for d in declared:
        if not isinstance(devices[d], Mapping):
            raise MissingEvidence(f"metric devices.{d} is not a record")
        out.append((d, devices[d]))
    return out


def _count(ev: Mapping[str, Any], name: str, want: float, device: str) -> None:
    if number(ev, name) != want:
        raise _Wrong(f"on {device}: records {name} = {ev[name]:g}, the release's params give {want:g}")


def _series(ev: Mapping[str, Any], name: str, length: int, device: str) -> list[float]:
    values = ev.get(name)
    if not isinstance(values, list):
        raise MissingEvidence(f"metric devices.{device}.{name} is missing")
    out = [number({"v": v}, "v") for v in values]
    if len(out) != length:
        raise _Wrong(f"on {device}: {name} has {len(out)} entr(ies), the release's params give {length}")
    return out


def _in_time(seconds: list[float], bound: float, what: str, device: str) -> None:
    late = [i + 1 for i, s in enumerate(seconds) if s > bound + _WAIT_SLACK_S]
    if late:
        raise _Wrong(f"on {device}: {what} {late} took past the {bound:g} s bound ({max(seconds):.3g} s)")


def _ray_error_ending(take: object) -> bool:
    """A take that ended in an error the check records: "<Ray error class>: <its first line>"
    (conformance.areas.workload.lost_worker catches ray.exceptions.RayError and nothing else; a
    take that never ends fails the round, it is never recorded as a string)."""
    import ray.exceptions as rex

    name, sep, _ = take.partition(":") if isinstance(take, str) else ("", "", "")
    cls = getattr(rex, name, None)
    return bool(sep) and isinstance(cls, type) and issubclass(cls, rex.RayError)


def _none_wrong(ev: Mapping[str, Any], name: str, length: int, what: str, device: str) -> None:
    wrong = _series(ev, name, length, device)
    bad = [i + 1 for i, w in enumerate(wrong) if w]
    if bad:
        raise _Wrong(f"on {device}: {what} {bad} showed {sum(wrong):g} problem(s) in what was received")


def _sized(m: Mapping[str, Any], p: Mapping[str, Any], name: str) -> int:
    """The param `name` (bytes) as the check sized it: the release's, capped by the run's size knob
    only where the check records the knob (metric size_cap: conformance.rdt.config.recorded_max_bytes;
    a record that is not the knob's is a fail). Without the record, the release's size exactly."""
    from conformance.rdt.config import recorded_max_bytes

    try:
        cap = recorded_max_bytes(m)
    except ValueError as exc:
        raise _Wrong(str(exc)) from None
    return min(int(param_value(p, name)), cap)


def _state_sizes(ev: Mapping[str, Any], p: Mapping[str, Any], device: str, total: int) -> None:
    """The state a scenario moved is the release's: its bytes and tensor count are those of the
    model layout (conformance.areas.workload.model) of `total` (the params' state_bytes, capped by
    a recorded size knob: _sized) in their blocks,
    in the base dtypes and the optional ones the device held. Where the record names the dtypes
    held, exactly those (and every other optional one recorded not held, with why); else any
    choice of the optional ones. A smaller state (a run argument that shrank it, or an edit) is
    not the release's workload."""
    from itertools import combinations

    from conformance.areas.workload import model

    blocks = int(param_value(p, "blocks"))
    optional = list(model.OPTIONAL_DTYPES)
    if "dtypes" in ev:
        dtypes = ev.get("dtypes")
        if not isinstance(dtypes, list) or not all(isinstance(d, str) for d in dtypes):
            raise MissingEvidence(f"metric devices.{device}.dtypes is not a list of dtype names")
        held = [d for d in optional if d in dtypes]
        if sorted(dtypes) != sorted([*model.BASE_DTYPES, *held]):
            raise _Wrong(f"on {device}: the state holds dtypes {sorted(dtypes)}; the layout holds "
                         f"{list(model.BASE_DTYPES)} and the optional ones the device holds")
        not_held = ev.get("dtypes_not_held")
        if not isinstance(not_held, Mapping) or sorted(map(str, not_held)) != sorted(set(optional) - set(held)) \
                or not all(isinstance(v, str) and v for v in not_held.values()):
            raise _Wrong(f"on {device}: dtypes_not_held {not_held!r} does not say why each optional dtype left out "
                         f"({sorted(set(optional) - set(held))}) was")
        choices = [held]
    else:
        choices = [list(c) for k in range(len(optional) + 1) for c in combinations(optional, k)]
    layouts = [model.layout(total, blocks, [*model.BASE_DTYPES, *c]) for c in choices]
    sizes = {(model.nbytes(e), model.tensor_count(e)) for e in layouts}
    got = (number(ev, "state_bytes"), number(ev, "tensors"))
    if got not in sizes:
        want = " or ".join(f"{b:g} bytes in {t} tensors" for b, t in sorted(sizes)[:3])
        raise _Wrong(f"on {device}: the state moved was {got[0]:g} bytes in {got[1]:g} tensors; the release's "
                     f"state_bytes (as the run sized it: {total}) in {blocks} blocks is {want}")


def _memory_flat(ev: Mapping[str, Any], labels: list[str], probes: int, warmup: int, max_growth: int,
                 leak: int, device: str) -> None:
    """Every actor's memory series: one probe before the first round and one after each, the host
    figure read every time, and on a device type other than the host the device figure too (a
    device read missing is missing evidence: the device's memory flatness cannot be judged
    without it, so it never passes as "not measured"); flat by the live rule."""
    from conformance.areas.workload.sync import memory_problems

    memory = ev.get("memory")
    if not isinstance(memory, Mapping):
        raise MissingEvidence(f"metric devices.{device}.memory is missing")
    if sorted(memory) != sorted(labels):
        raise _Wrong(f"on {device}: memory is recorded for {sorted(memory)}, the scenario's actors are {labels}")
    for label in labels:
        snaps = memory[label]
        if not isinstance(snaps, list) or len(snaps) != probes or not all(isinstance(s, Mapping) for s in snaps):
            raise _Wrong(f"on {device}: {label}'s memory has {len(snaps) if isinstance(snaps, list) else 0} "
                         f"probe(s), the scenario reads {probes}")
        for s in snaps:
            number(s, "held_bytes")
        device_reads = [s.get("device_used_bytes") is not None for s in snaps]
        if any(device_reads) and not all(device_reads):
            raise _Wrong(f"on {device}: {label}'s device memory was read in {sum(device_reads)} of {probes} probes")
        if device != HOST and not all(device_reads):
            raise MissingEvidence(f"metric devices.{device}.memory.{label}[].device_used_bytes is missing: the device's "
                                  "memory was not read, so its flatness cannot be judged")
        for s in snaps:
            if s.get("device_used_bytes") is not None:
                number(s, "device_used_bytes")
    found = memory_problems({k: list(v) for k, v in memory.items()}, warmup, max_growth, leak)
    if found:
        raise _Wrong(f"on {device}: " + "; ".join(found[:2]))


def _judged(decide: Callable[[], Verdict]) -> Verdict:
    try:
        return decide()
    except _Wrong as exc:
        return Verdict(FAIL, str(exc))


def _collective(manifest: Mapping[str, Any]) -> Mapping[str, Any] | None:
    block = manifest.get("collective") if isinstance(manifest, Mapping) else None
    return block if isinstance(block, Mapping) and block else None


def _broadcast_expected(manifest: Mapping[str, Any], device: str, dtypes: Any) -> bool:
    """WL-001's broadcast rounds ran on `device` (broadcast.broadcast_entries' rule): a collective
    block that claims broadcast, declares the device and claims a dtype of the state."""
    from conformance.collective.config import ALL_OPS, DEFAULT_DTYPES

    block = _collective(manifest)
    if block is None:
        return False
    ops = block.get("ops") or ALL_OPS
    claimed = set(block.get("dtypes") or DEFAULT_DTYPES)
    held = set(dtypes) if isinstance(dtypes, list) else set()
    return "broadcast" in ops and device in (block.get("devices") or ["cpu"]) and bool(held & claimed)


# ---------------------------------------------------------------- WL-001, WL-003, WL-004

@JUDGES.rule(needs=("devices",), params=("receivers", "rounds", "round_bound_s", "warmup_rounds",
                                         "max_memory_growth_bytes", "leak_per_round_bytes", "broadcast_rounds",
                                         "state_bytes", "blocks"),
             decides_all=True)
def weight_sync_rounds_exact_and_flat(m: Mapping[str, Any], p: Mapping[str, Any], manifest: Mapping[str, Any]) -> Verdict:
    """On every device type the transport declares: the release's rounds to its receivers, each
    within round_bound_s and with no problem (stale, mixed, wrong bytes, another device, the
    trainer's copy changed); every actor's memory flat after the warm-up rounds; and where the
    manifest's collective block claims broadcast on the device for a dtype of the state, the
    release's broadcast rounds, none with a problem."""
    def decide() -> Verdict:
        rounds, receivers = int(param_value(p, "rounds")), int(param_value(p, "receivers"))
        bound = param_value(p, "round_bound_s")
        records = _per_device(m, _declared(manifest, "transport"), "transport.devices")
        total = _sized(m, p, "state_bytes")
        for device, ev in records:
            _count(ev, "rounds", rounds, device)
            _count(ev, "receivers", receivers, device)
            _state_sizes(ev, p, device, total)
            _in_time(_series(ev, "round_seconds", rounds, device), bound, "round(s)", device)
            _none_wrong(ev, "wrong_per_round", rounds, "round(s)", device)
            _memory_flat(ev, ["trainer", *(f"receiver {i}" for i in range(receivers))], rounds + 1,
                         int(param_value(p, "warmup_rounds")), int(param_value(p, "max_memory_growth_bytes")),
                         int(param_value(p, "leak_per_round_bytes")), device)
            if _broadcast_expected(manifest, device, ev.get("dtypes")):
                many = int(param_value(p, "broadcast_rounds"))
                _in_time(_series(ev, "broadcast_round_seconds", many, device), bound, "broadcast round(s)", device)
                _none_wrong(ev, "broadcast_wrong_per_round", many, "broadcast round(s)", device)
        return Verdict(PASS, f"{rounds} rounds exact on {', '.join(d for d, _ in records)}, memory flat")
    return _judged(decide)


@JUDGES.rule(needs=("devices",), params=("stages", "in_flight", "waves", "activation_bytes", "wave_bound_s",
                                         "warmup_waves", "max_memory_growth_bytes", "leak_per_wave_bytes"),
             decides_all=True)
def pipeline_waves_exact_and_flat(m: Mapping[str, Any], p: Mapping[str, Any], manifest: Mapping[str, Any]) -> Verdict:
    """On every device type the transport declares: the release's stages on at least two nodes,
    its waves of in_flight microbatches (activations no larger than activation_bytes), each wave
    within wave_bound_s and every output bit-exact (no problem counted), every stage's memory flat
    after the warm-up waves."""
    from conformance.areas.workload import pipeline

    def decide() -> Verdict:
        stages, waves = int(param_value(p, "stages")), int(param_value(p, "waves"))
        records = _per_device(m, _declared(manifest, "transport"), "transport.devices")
        activation = _sized(m, p, "activation_bytes")
        for device, ev in records:
            _count(ev, "stages", stages, device)
            _count(ev, "in_flight", param_value(p, "in_flight"), device)
            _count(ev, "waves", waves, device)
            size = number(ev, "activation_bytes")
            want = pipeline.plan_for(device, stages, int(param_value(p, "in_flight")), waves, activation).activation_bytes
            if size != want:   # the plan's rows x 256 float32 and their int64 trace, from the param
                raise _Wrong(f"on {device}: activations of {size:g} bytes, the release's activation_bytes = "
                             f"{param_value(p, 'activation_bytes'):g} (as the run sized it: {activation}) give {want}")
            if number(ev, "nodes") < 2:   # knob: "on at least two nodes" (the requirement's shape)
                raise _Wrong(f"on {device}: the stages ran on {ev['nodes']:g} node(s), at least two are required")
            _in_time(_series(ev, "wave_seconds", waves, device), param_value(p, "wave_bound_s"), "wave(s)", device)
            _none_wrong(ev, "wrong_per_wave", waves, "wave(s)", device)
            _memory_flat(ev, [f"stage {s}" for s in range(stages)], waves + 1, int(param_value(p, "warmup_waves")),
                         int(param_value(p, "max_memory_growth_bytes")), int(param_value(p, "leak_per_wave_bytes")),
                         device)
        return Verdict(PASS, f"{waves} waves exact through {stages} stages on {', '.join(d for d, _ in records)}")
    return _judged(decide)


@JUDGES.rule(needs=("devices",), params=("receivers", "rounds", "kill_round", "round_bound_s", "restart_bound_s",
                                         "state_bytes", "blocks"), decides_all=True)
def lost_worker_rounds_exact(m: Mapping[str, Any], p: Mapping[str, Any], manifest: Mapping[str, Any]) -> Verdict:
    """On every device type the transport declares: the release's rounds with receiver 0 killed
    in kill_round; every other round and the survivors' kill round within round_bound_s; the
    killed take ended in data or a Ray error (what the check records; a hang fails the round);
    Ray restarted it within the kill round and the restart's bound (both the plugin's time,
    never stretched: restart_seconds runs from the kill); no round (the restarted receiver's
    included) showed a problem."""
    def decide() -> Verdict:
        rounds, kill = int(param_value(p, "rounds")), int(param_value(p, "kill_round"))
        bound = param_value(p, "round_bound_s")
        records = _per_device(m, _declared(manifest, "transport"), "transport.devices")
        total = _sized(m, p, "state_bytes")
        for device, ev in records:
            _count(ev, "rounds", rounds, device)
            _count(ev, "kill_round", kill, device)
            _count(ev, "receivers", param_value(p, "receivers"), device)
            _state_sizes(ev, p, device, total)
            _in_time(_series(ev, "round_seconds", rounds - 1, device), bound, "round(s)", device)
            _in_time([number(ev, "kill_round_seconds")], bound, "the kill round", device)
            # Ray restarted the killed receiver: from the kill, the rest of the kill round, then the
            # restart's own bounded wait
            _in_time([number(ev, "restart_seconds")], bound + param_value(p, "restart_bound_s"),
                     "Ray's restart of the killed receiver", device)
            take = ev.get("killed_take")
            if take != "data" and not _ray_error_ending(take):
                raise _Wrong(f"on {device}: the killed receiver's take ended in {str(take)[:80]!r}, neither data nor "
                             "the Ray error the check records")
            _none_wrong(ev, "wrong_per_round", rounds, "round(s)", device)
        return Verdict(PASS, f"{rounds} rounds exact around the lost receiver on {', '.join(d for d, _ in records)}")
    return _judged(decide)


# ---------------------------------------------------------------- WL-002

def _is_digest(value: object) -> bool:
    """A recorded parameter digest: the first DIGEST_CHARS hex characters of a sha256 (an empty
    or shorter string would be a prefix of any digest)."""
    from conformance.areas.workload import dp

    return isinstance(value, str) and len(value) == dp.DIGEST_CHARS and all(c in "0123456789abcdef" for c in value)


def _dp_workers(manifest: Mapping[str, Any], device: str, most: int) -> int | None:
    """The workers WL-002 starts on `device` (dp_run.placement: the params' workers, fewer where
    the device units run out): on a cluster the suite started, the manifest's nodes each with
    devices_per_node units (the host: no limit); None on the vendor's own cluster (not known)."""
    if ran_remote(manifest):
        return None
    if device == HOST:
        return most
    acc = manifest.get("accelerator") if isinstance(manifest, Mapping) else None
    per = (acc.get("expected") or {}).get("devices_per_node") if isinstance(acc, Mapping) else None
    cluster = manifest.get("cluster") if isinstance(manifest, Mapping) else None
    nodes = cluster.get("nodes", 1) if isinstance(cluster, Mapping) else 1
    if isinstance(per, bool) or not isinstance(per, int) or not isinstance(nodes, int) or isinstance(nodes, bool):
        raise MissingEvidence("the manifest has no accelerator.expected.devices_per_node or cluster.nodes")
    return min(most, per * nodes)


@JUDGES.rule(needs=("devices",), params=("workers", "samples", "features", "dtype", "steps", "step_fraction",
                                         "seed", "step_bound_s"), decides_all=True)
def data_parallel_replicas_on_reference(m: Mapping[str, Any], p: Mapping[str, Any],
                                        manifest: Mapping[str, Any]) -> Verdict:
    """On every device type the collective block declares: the release's steps by its workers (as
    many as the manifest's units give on a cluster the suite started; 2..workers on the vendor's
    own) on at least two nodes, each within step_bound_s; after every step every rank's
    parameter digest the same; after the last, the parameters (rank 0's, recorded; every rank's
    digest is theirs) within the rounding bound of the single-process reference, both recomputed
    here from the params (the shards are seeded) for the number of workers that ran."""
    import numpy as np

    from conformance.areas.workload import dp

    def decide() -> Verdict:
        block = _collective(manifest)
        if block is None:
            raise _Wrong("the manifest declares no collective block: the check has nothing to pass")
        steps, most = int(param_value(p, "steps")), int(param_value(p, "workers"))
        records = _per_device(m, [str(d) for d in (block.get("devices") or ["cpu"])], "collective.devices")
        for device, ev in records:
            workers = int(number(ev, "workers"))
            started = _dp_workers(manifest, device, most)
            if started is None and not 2 <= workers <= most:   # knob: a data-parallel group has at least two ranks
                raise _Wrong(f"on {device}: {workers} worker(s) ran, the release's params give 2..{most}")
            if started is not None and workers != started:
                raise _Wrong(f"on {device}: {workers} worker(s) ran; on the cluster the suite started from the "
                             f"manifest the release's workers = {most} give {started}")
            _count(ev, "features", param_value(p, "features"), device)
            _count(ev, "samples", param_value(p, "samples"), device)
            _count(ev, "steps", steps, device)
            if ev.get("dtype") != p.get("dtype"):
                raise _Wrong(f"on {device}: the parameters were {ev.get('dtype')!r}, the release's dtype is {p.get('dtype')!r}")
            if number(ev, "nodes") < 2:   # knob: "on at least two nodes" (the requirement's shape)
                raise _Wrong(f"on {device}: the workers ran on {ev['nodes']:g} node(s), at least two are required")
            _in_time(_series(ev, "step_seconds", steps, device), param_value(p, "step_bound_s"), "step(s)", device)
            digests = ev.get("digests")
            if not isinstance(digests, list) or len(digests) != steps or not all(
                    isinstance(d, list) and len(d) == workers and all(_is_digest(x) for x in d) for d in digests):
                raise _Wrong(f"on {device}: digests are not one per rank ({workers}) after each of {steps} steps, "
                             f"each {dp.DIGEST_CHARS} hex characters of a parameter digest")
            for k, per_rank in enumerate(digests, start=1):
                if len(set(per_rank)) > 1:
                    raise _Wrong(f"on {device}: replicas hold different parameters from step {k} on (digests "
                                 f"{per_rank}): the allreduce did not leave identical results on every rank")
            final = ev.get("final_params")
            if not isinstance(final, list):
                raise MissingEvidence(f"metric devices.{device}.final_params is missing")
            values = [number({"v": v}, "v") for v in final]
            if dp.digest(values)[:dp.DIGEST_CHARS] != digests[-1][0]:
                raise _Wrong(f"on {device}: final_params are not the parameters the ranks' last digests name")
            plan = dp.make_plan(workers, int(param_value(p, "features")), int(param_value(p, "samples")), steps,
                                str(p.get("dtype")), int(param_value(p, "seed")), param_value(p, "step_fraction"))
            want, bound = dp.reference(plan)
            if len(values) != want.size:
                raise _Wrong(f"on {device}: {len(values)} parameters recorded, the model has {want.size}")
            dist = float(np.linalg.norm(np.asarray(values) - want))
            if not dist <= bound:
                raise _Wrong(f"on {device}: the replicas' parameters are {dist:.3g} (2-norm) from the single-process "
                             f"reference, beyond the rounding bound {bound:.3g}: the allreduce did not give the sum "
                             "of the workers' gradients")
        return Verdict(PASS, f"replicas identical every step and on the reference on {', '.join(d for d, _ in records)}")
    return _judged(decide)


# ---------------------------------------------------------------- WL-010..WL-013: findings for the SIG

def _findings_agree(m: Mapping[str, Any], p: Mapping[str, Any], manifest: Mapping[str, Any],
                    derive: Any) -> Verdict:
    """The scenario answered within scenario_bound_s, on the manifest's resource, and its
    findings are what its own observation gives (`derive(observed, resource, env_var, nodes)`)."""
    def decide() -> Verdict:
        took, bound = number(m, "scenario_s"), param_value(p, "scenario_bound_s")
        if took > bound + _WAIT_SLACK_S:
            raise _Wrong(f"the scenario took {took:g} s, past its {bound:g} s bound")
        resource = ((manifest.get("accelerator") or {}) if isinstance(manifest, Mapping) else {}).get("resource_name")
        if m.get("resource") != resource:
            raise _Wrong(f"the findings are about {m.get('resource')!r}, the manifest's resource is {resource!r}")
        observed, nodes = m.get("observed"), m.get("vendor_nodes")
        if not isinstance(observed, Mapping) or not isinstance(nodes, list):
            raise MissingEvidence("metric observed / vendor_nodes is missing")
        if m.get("findings") != derive(dict(observed), str(resource), str(m.get("env_var")), [str(n) for n in nodes]):
            raise _Wrong("the findings are not what the recorded observation gives")
        return Verdict(PASS, f"findings recorded within {bound:g} s")
    return _judged(decide)


_LIBRARY_NEEDS = ("scenario_s", "findings", "observed", "resource", "vendor_nodes")


@JUDGES.rule(needs=_LIBRARY_NEEDS, params=("scenario_bound_s",), decides_all=True)
def train_findings_recorded(m: Mapping[str, Any], p: Mapping[str, Any], manifest: Mapping[str, Any]) -> Verdict:
    """WL-010: Train's findings, recomputed from the workers' views (and the torch device the
    check compared them with)."""
    from conformance.areas.workload import libraries

    return _findings_agree(m, p, manifest, lambda obs, res, env, nodes: libraries.train_findings(
        obs, res, env, nodes, m.get("torch_device") if isinstance(m.get("torch_device"), str) else None))


@JUDGES.rule(needs=_LIBRARY_NEEDS, params=("scenario_bound_s",), decides_all=True)
def data_findings_recorded(m: Mapping[str, Any], p: Mapping[str, Any], manifest: Mapping[str, Any]) -> Verdict:
    """WL-011: Data's findings, recomputed from the tasks' views and the budget it tracks."""
    from conformance.areas.workload import libraries

    return _findings_agree(m, p, manifest, libraries.data_findings)


@JUDGES.rule(needs=_LIBRARY_NEEDS, params=("scenario_bound_s",), decides_all=True)
def serve_findings_recorded(m: Mapping[str, Any], p: Mapping[str, Any], manifest: Mapping[str, Any]) -> Verdict:
    """WL-012: Serve's findings, recomputed from the replicas' views."""
    from conformance.areas.workload import libraries

    return _findings_agree(m, p, manifest, libraries.serve_findings)


@JUDGES.rule(needs=_LIBRARY_NEEDS, params=("scenario_bound_s",), decides_all=True)
def metrics_findings_recorded(m: Mapping[str, Any], p: Mapping[str, Any], manifest: Mapping[str, Any]) -> Verdict:
    """WL-013: the dashboard's findings, recomputed from the probe's view."""
    from conformance.areas.workload import libraries

    return _findings_agree(m, p, manifest, lambda obs, res, env, nodes: libraries.metrics_findings(obs, res))
