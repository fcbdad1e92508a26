"""What the recovery area's judges share: the table and its evidence parts, the machinery of a
recovery judge (findings, the rule that registers a check's judge, its scenarios) and the readers
of the evidence every check records (holders, devices, nodes, labels, errors, bounds).
"""
from __future__ import annotations

import dataclasses
from typing import Any, Callable, Iterable, Mapping

from conformance.areas.recovery.audit import holder_problems
from conformance.catalog.node_sample import RECOVERY_CHECKS
from conformance.catalog.scenario_bounds import BOUND_PARAM, fetch_stretch
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
from conformance.report.per_node import each_node
from conformance.timing.host_load import MAX_FACTOR
from conformance.timing.owned import LEFT_TO_RAY, RESAMPLE_S

JUDGES = JudgeTable()
EVIDENCE: dict[str, Decide] = {}   # judge name -> its evidence part (what the live check asks in its scenario)

M = Mapping[str, Any]
ACTOR_ERRORS = ("RayActorError", "ActorDiedError", "WorkerCrashedError", "ActorUnavailableError",
                "OwnerDiedError", "NodeDiedError")
TYPE_LABEL = "ray.io/accelerator-type"
ROUNDING = 0.001   # recorded durations are rounded to 1 ms (conformance/areas/recovery/scenario.py)


# ------------------------------------------------------------------------------------- the machinery
class Findings(list[str]):
    """What is wrong, in the order found; the verdict names the first few."""

    def verdict(self, passed: str) -> Verdict:
        return Verdict(FAIL, "; ".join(self[:6])) if self else Verdict(PASS, passed)


def recovery_rule(check: str, *, needs: tuple[str, ...] = (), params: tuple[str, ...] = ()
                  ) -> Callable[[Decide], Decide]:
    """A judge of one recovery check: its evidence part (the decorated function), then every
    scenario the check recorded ok within a bound the release's params give. A check whose
    scenario runs on each node of the run's failure-domain choice (node_sample.RECOVERY_CHECKS)
    has both judged on the top-level record and on each node's (metrics.per_node over the
    check's shared fields: conformance.report.per_node.each_node), and each node its coverage
    names must have its record, so a node's scenario cannot be dropped from the evidence."""
    def wrap(fn: Decide) -> Decide:
        per_node = each_node(every_covered=True) if check in RECOVERY_CHECKS else (lambda f: f)
        EVIDENCE[fn.__name__] = per_node(fn)

        def whole(m: M, p: M, manifest: M) -> Verdict:
            verdict = fn(m, p, manifest)
            if verdict.outcome != PASS:
                return verdict
            bad = scenario_findings(m, p)
            return Verdict(FAIL, "; ".join(bad[:3])) if bad else verdict

        whole.__name__, whole.__doc__ = fn.__name__, fn.__doc__
        JUDGES.rule(needs=needs, params=params, decides_all=True)(per_node(whole))
        return fn
    return wrap


def evidence_verdict(j: Judge, check_id: str, m: M, p: M, manifest: M) -> Verdict:
    """The evidence part of a recovery judge (without the scenarios, which are recorded when the
    scenario ends): what the live check asks before its scenario ends."""
    part = EVIDENCE.get(j.name)
    if part is None:
        return run_judge(j, check_id, m, p, manifest)
    return run_judge(dataclasses.replace(j, decide=part, needs=()), check_id, m, p, manifest)


def scenario_findings(m: M, p: M) -> list[str]:
    """Every recorded scenario ended ok within its bound, and no bound is more than the release's
    params give (`scenario_bound_s`, from the check's steps: conformance.catalog.scenario_bounds),
    plus what it left out for Ray's machinery, plus a longer fetch timeout the run recorded for the
    transfer checks."""
    scenarios = m.get("scenarios")
    if not isinstance(scenarios, Mapping) or not scenarios:
        raise MissingEvidence("metric scenarios is missing or empty")
    most = param_value(p, BOUND_PARAM) + fetch_stretch(p, path_of(m, "transport.rdt_fetch_timeout_s"))
    out = []
    for name, sc in scenarios.items():
        sc = sc if isinstance(sc, Mapping) else {}
        elapsed, bound = number(sc, "elapsed_s"), number(sc, "bound_s")
        raw_steps = sc.get("steps_s")
        steps: M = raw_steps if isinstance(raw_steps, Mapping) else {}
        excluded = number(steps, "excluded_s") if "excluded_s" in steps else 0.0
        if excluded < 0 or excluded > elapsed + ROUNDING:
            out.append(f"scenario {name} leaves out {excluded:g} s of its {elapsed:g} s")
        elif bound > most + excluded + ROUNDING + ROUNDING:   # excluded_s is rounded too
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


def left_to_ray(m: M, p: M, out: list[str], name: str = "registered_s", waits: str | None = None) -> float:
    """The seconds of a scenario that went to Ray's machinery inside a figure that spans them (`name`:
    a rejoined node starting and registering, conformance.areas.recovery.nodes.rejoined; a dead
    holder's device returning to Ray's pool, a new holder's start, conformance.areas.recovery
    .devices), left out of that figure's bound: the wait is Ray's, stretched by the run's
    measurement, recorded in metrics.waits and judged there (conformance.timing.owned). 0 in a
    report from before it was recorded (the figure then keeps its whole bound). More than the
    widest any wait on Ray's machinery is granted (`param` stretched x MAX_FACTOR, plus one fresh
    sample) is a finding; `waits` names the metric that counts the waits, one after another, the
    seconds add up (one when it is absent). Which param bounds the waits of each such figure is
    conformance.timing.owned.LEFT_TO_RAY (verify holds each figure to what those waits took:
    conformance.signing.ray_seconds)."""
    param = LEFT_TO_RAY[name]
    value = m.get(name)
    if value is None:
        return 0.0
    took = number(m, name)
    count = 1.0
    if waits is not None and m.get(waits) is not None:
        count = number(m, waits)
        if count < 1 or count != int(count):
            out.append(f"{waits} is {count:g}: not a count of waits")
            count = 1.0
    widest = (param_value(p, param) * MAX_FACTOR + RESAMPLE_S) * count
    if took < 0:
        out.append(f"{name} is {took:g} s: negative")
        return 0.0
    if took > widest + ROUNDING:
        out.append(f"{name} records {took:.1f}s of Ray's machinery, more than "
                   + ("any wait on it is granted" if count == 1 else f"{count:g} waits on it are granted")
                   + f" ({param} x{MAX_FACTOR:g} and one {RESAMPLE_S:g} s fresh sample"
                   + ("" if count == 1 else " each") + f": {widest:g} s)")
        return 0.0
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


def most_fetch_timeout_s(p: M) -> float:
    """The longest RDT fetch timeout a run may record: the release's, stretched at most as far as
    the suite stretches any wait on Ray's machinery (a loaded host, or a vendor's own cluster
    configured longer: that run is not applicable beyond it)."""
    return param_value(p, "rdt_fetch_timeout_s") * MAX_FACTOR
