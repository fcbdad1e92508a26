"""Running the RL weight-sync scenario on a live cluster (WL-001): the actors, the rounds, the
object-store rounds. What is wrong is judged by the pure helpers in conformance.areas.workload.sync.
"""
from __future__ import annotations

from typing import TYPE_CHECKING, Any

from conformance.areas.workload import model
from conformance.areas.workload.actors import WorkloadActor
from conformance.areas.workload.sync import SyncPlan, SyncRecord, memory_problems, round_problems, timed
from conformance.exc_text import first_line
from conformance.handles import Actor
from conformance.rdt.device import is_host
from conformance.rdt.pool import Endpoints, alive_nodes, start_endpoints
from conformance.rdt.stalls import where_they_stand
from conformance.run.fixtures import not_applicable
from conformance.timing.clock import Clock, ScenarioFailed

if TYPE_CHECKING:
    from conformance.rdt.registration import TransportSetup
    from conformance.run.budget import Budget


def placement(resource: str, device: str, receivers: int) -> list[str]:
    """Node ids for the trainer then each receiver: the trainer on the first node, the receivers
    round-robin starting on the next one, so they span at least two nodes (empty: fewer than two
    nodes offer what the actors need)."""
    nodes = [n["NodeID"] for n in alive_nodes(resource if not is_host(device) else None)]
    if len(nodes) < 2:
        return []
    return [nodes[0]] + [nodes[(i + 1) % len(nodes)] for i in range(receivers)]


def receiver_nodes(resource: str, device: str, receivers: int) -> list[str]:
    """`placement` for a weight sync (WL-001, WL-004); the check is not applicable, with the one
    reason both give, when fewer than two nodes offer what the actors need."""
    nodes = placement(resource, device, receivers)
    if not nodes:
        not_applicable(f"the cluster has one node{' with ' + resource if not is_host(device) else ''}; "
                       "the weight sync needs its receivers on at least two nodes")
    return nodes


def start(setup: TransportSetup, resource: str, device: str, nodes: list[str], clock: Clock, budget: Budget) -> Endpoints:
    """The trainer (index 0) and its receivers, answering: their start is Ray's machinery, awaited
    through the check's budget and left out of the scenario's bound (Budget.started)."""
    return start_endpoints(setup, resource, device=device, nodes=list(nodes), cls=WorkloadActor,
                           ready=lambda refs, what: budget.started(clock, refs, what), what="workload actors to start")


def state_layout(trainer: Actor, clock: Clock, size: int, blocks: int) -> tuple[list[dict[str, Any]], dict[str, str]]:
    """The model-shaped state's layout (`size` bytes in `blocks` blocks) in the base dtypes and the
    optional ones the trainer's device holds, and why the others are left out."""
    probe = clock.get(trainer.supported_dtypes.remote(list(model.OPTIONAL_DTYPES)), "the trainer's dtype probe")
    held = [d for d in model.OPTIONAL_DTYPES if probe.get(d) is None]
    return model.layout(size, blocks, list(model.BASE_DTYPES) + held), \
        {d: str(why) for d, why in probe.items() if why is not None}


def run_sync(eps: Endpoints, plan: SyncPlan, transport: str, clock: Clock, round_bound_s: float) -> SyncRecord:
    """K rounds through the transport, then `store_rounds` through Ray's object store."""
    trainer, workers = eps.actors[0], eps.actors[1:]
    labels = [f"receiver {i} (node {eps.node_of(i + 1)[:8]})" for i in range(len(workers))]
    record = SyncRecord()
    clock.get(trainer.load.remote(plan.entries), "the trainer to build its state", round_bound_s)
    previous = model.expected(plan.entries, 0)
    probe_all(eps, record, clock, round_bound_s)
    for k in range(1, plan.rounds + 1):
        expect = model.expected(plan.entries, k)
        found = one_round(trainer, workers, labels, k, expect, previous, plan.device, transport,
                          record.round_s, clock, round_bound_s)
        record.problems += found
        record.round_wrong.append(len(found))
        probe_all(eps, record, clock, round_bound_s)
        previous = expect
    for k in range(plan.rounds + 1, plan.rounds + 1 + plan.store_rounds):
        try:
            store_round(trainer, workers, k, record.store_round_s, clock, round_bound_s)
        except Exception as exc:  # noqa: BLE001 - the baseline is a figure, not the vendor's guarantee
            record.notes.append(f"the object-store baseline did not run: {first_line(exc)}")
            break
    return record


def store_round(trainer: Actor, workers: list[Any], k: int, times: list[float], clock: Clock, bound_s: float) -> None:
    """Round k of the baseline: the same bytes through Ray's object store (float8 tensors as uint8
    views: torch cannot pickle float8), timed like a transport round; only timed, since what the
    object store delivers is Ray's guarantee, not the vendor's."""
    clock.get(trainer.step.remote(k), f"round {k}: the trainer's step", bound_s)

    def publish_and_take() -> list[Any]:
        ref = trainer.publish_picklable.remote()
        try:
            taken: list[Any] = clock.get([w.take.remote(ref, k) for w in workers],
                                         f"round {k}: receivers through the object store", bound_s)
            return taken
        finally:
            del ref
    _, seconds = timed(publish_and_take)
    times.append(seconds)


def one_round(trainer: Actor, workers: list[Any], labels: list[str], k: int, expect: object, previous: Any,
              device: str, transport: str, times: list[float], clock: Clock, bound_s: float) -> list[str]:
    """Round k: the trainer steps, publishes once through the transport, every worker takes the
    ref; the round's time (publish to the last worker's answer) is appended to `times`. The
    problems it shows."""
    via = transport
    sent = clock.get(trainer.step.remote(k), f"round {k}: the trainer's step", bound_s)
    problems = round_problems(k, "the trainer (after its step)", sent, expect, None, device)

    def publish_and_take() -> list[Any]:
        ref = trainer.publish.options(tensor_transport=transport).remote()
        try:
            taken: list[Any] = clock.get([w.take.remote(ref, k) for w in workers], f"round {k}: receivers through {via}", bound_s)
            return taken
        except ScenarioFailed as exc:   # a stalled round says which actor holds it, and in what
            raise ScenarioFailed(f"{exc}; {where_they_stand([trainer, *workers], ['the trainer', *labels])}") from None
        finally:
            del ref
    outs, seconds = timed(publish_and_take)
    times.append(seconds)
    for label, out in zip(labels, outs):
        problems += round_problems(k, label, out["digest"], expect, previous, device)
    held = clock.get(trainer.held.remote(), f"round {k}: the trainer's copy", bound_s)
    if not payloads_same(expect, held):
        problems.append(f"round {k}: the trainer's own copy changed after its receivers took it (through {via})")
    return problems


def payloads_same(a: Any, b: Any) -> bool:
    from conformance.rdt import payloads
    return payloads.same_bytes(a, b)


def probe_all(eps: Endpoints, record: SyncRecord, clock: Clock, bound_s: float) -> None:
    snaps = clock.get([a.probe_memory.remote() for a in eps.actors], "memory probes", bound_s)
    for i, snap in enumerate(snaps):
        label = "trainer" if i == 0 else f"receiver {i - 1}"
        record.memory.setdefault(label, []).append(snap)


def judge_memory(record: SyncRecord, warmup: int, max_growth: int, leak_per_round: int) -> list[str]:
    return memory_problems(record.memory, warmup, max_growth, leak_per_round)
