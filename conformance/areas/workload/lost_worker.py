"""The lost-worker scenario (WL-004): WL-001's rounds, with one inference actor killed mid-round.

The trainer publishes round `kill_round` and every receiver takes it; right after the takes are
submitted, receiver 0 (on another node than the trainer) is killed with `ray.kill(...,
no_restart=False)`, so Ray restarts it (max_restarts). The trainer and the other receivers must
finish that round within the round's bound, with exactly its bytes; the killed receiver's take
ends in data (exact) or an error, never a hang; the restarted receiver answers within
`restart_bound_s`; in every later round every receiver, the restarted one included, holds
exactly that round's bytes (the latest weights).

Ray 2.60 ships a custom transport to an actor once, when it is created, and not to the process
that replaces it on a restart (ray-project/ray#61014, FR-016's waiver). A user's application
works around it the way Ray's own TODO proposes, by registering the transport in the actor's
constructor; `RestartableWorker` does that when Ray reconstructed it, so what is judged is the
vendor's transport serving a replaced receiver, not Ray's gap. A transport that needs a
collective group cannot take a restarted actor in Ray 2.60 (the group is fixed at creation):
the check is not applicable there.
"""
from __future__ import annotations

import statistics
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Callable

from conformance.areas.workload import model, rounds
from conformance.areas.workload.actors import WorkloadActor
from conformance.areas.workload.sync import SyncPlan, round_problems, timed
from conformance.exc_text import first_line
from conformance.handles import Actor
from conformance.rdt.pool import Endpoints, start_endpoints
from conformance.timing.clock import Clock, ScenarioFailed

if TYPE_CHECKING:
    from conformance.rdt.registration import TransportSetup
    from conformance.run.budget import Budget

# What a round that did not end after the kill fails with (teeth rows name it): the requirement.
# (clock, actor, old pid, what, bound_s, method=...) -> the new process's answer (Budget.restarted)
Restarted = Callable[..., dict[str, Any]]
BLOCKED = "a dead receiver blocked the trainer or the other receivers (the workload MUST carry on without it)"


class RestartableWorker(WorkloadActor):
    """A trainer or inference worker that, when Ray restarted it, registers the transports its
    creator had (the application's workaround for ray-project/ray#61014)."""

    def __init__(self, device: str = "cpu", transports: dict[str, tuple[Any, list[str], Any]] | None = None) -> None:
        import ray

        if transports and ray.get_runtime_context().was_current_actor_reconstructed:
            from ray.experimental.rdt import util

            util._ensure_default_transports_registered()
            for name, (cls, devices, data_type) in transports.items():
                if name not in util.transport_manager_info:
                    util.register_tensor_transport(name, devices, cls, data_type)
        super().__init__(device)


def custom_transports() -> dict[str, tuple[Any, list[str], Any]]:
    """The driver's registered custom transports, as RestartableWorker takes them."""
    from ray.experimental.rdt import util

    return {name: (info.transport_manager_class, list(info.devices), info.data_type)
            for name, info in util.transport_manager_info.items() if name not in util.DEFAULT_TRANSPORTS}


def start(setup: TransportSetup, resource: str, device: str, nodes: list[str], clock: Clock, budget: Budget) -> Endpoints:
    """The trainer (index 0) and its receivers, each restartable once, task retries off (a take
    the kill interrupted fails instead of running again); their start is Ray's machinery, awaited
    through the check's budget and left out of the scenario's bound (Budget.started)."""
    return start_endpoints(setup, resource, device=device, nodes=list(nodes), cls=RestartableWorker,
                           ready=lambda refs, what: budget.started(clock, refs, what), what="workload actors to start",
                           init_args=(custom_transports(),), max_restarts=1, max_task_retries=0)


@dataclass
class LostRecord:
    """What the scenario saw."""

    round_s: list[float] = field(default_factory=list)     # every round but the kill round
    kill_round_s: float | None = None                        # the survivors' round, kill included
    restart_s: float | None = None                           # the kill to the new process answering
    killed_take: str = ""                                    # "data" or the error the killed take ended in
    problems: list[str] = field(default_factory=list)
    round_wrong: list[int] = field(default_factory=list)     # per round: the problems it showed (the judge's evidence)

    def figures(self, plan: SyncPlan, kill_round: int) -> dict[str, Any]:
        """The figures (diff gates `median_round_s`, lower is better; the kill round and the
        restart are single events, named so diff leaves them alone)."""
        out: dict[str, Any] = {"rounds": plan.rounds, "kill_round": kill_round, "state_bytes": plan.state_bytes,
                               "tensors": model.tensor_count(plan.entries), "receivers": plan.receivers,
                               "round_seconds": [round(x, 4) for x in self.round_s],
                               "kill_round_seconds": None if self.kill_round_s is None else round(self.kill_round_s, 4),
                               "restart_seconds": None if self.restart_s is None else round(self.restart_s, 4),
                               "killed_take": self.killed_take, "wrong_per_round": list(self.round_wrong)}
        if self.round_s:
            out["median_round_s"] = round(statistics.median(self.round_s), 4)
        return out


def run_lost_worker(eps: Endpoints, plan: SyncPlan, transport: str, clock: Clock, round_bound_s: float,
                    restart_bound_s: float, kill_round: int, restarted: Restarted) -> LostRecord:
    """`restarted`: the check budget's restart wait (conformance.run.budget.Budget.restarted)."""
    trainer, workers = eps.actors[0], eps.actors[1:]
    labels = [f"receiver {i} (node {eps.node_of(i + 1)[:8]})" for i in range(len(workers))]
    labels[0] += " (the killed one)"
    record = LostRecord()
    clock.get(trainer.load.remote(plan.entries), "the trainer to build its state", round_bound_s)
    previous = model.expected(plan.entries, 0)
    victim_pid = int(eps.infos[1]["pid"])
    killed_at = 0.0
    for k in range(1, plan.rounds + 1):
        expect = model.expected(plan.entries, k)
        if k == kill_round + 1:   # Ray's restart: its bound is the restart's, not a round's
            restarted(clock, workers[0], victim_pid, "receiver 0 to be restarted by Ray (max_restarts)",
                      restart_bound_s, method="info")
            record.restart_s = clock.elapsed() - killed_at
        before = len(record.problems)
        try:
            if k == kill_round:
                killed_at = clock.elapsed()
                record.kill_round_s = kill_mid_round(trainer, workers, labels, k, expect, previous, plan.device,
                                                     transport, clock, round_bound_s, record)
            else:
                record.problems += rounds.one_round(trainer, workers, labels, k, expect, previous, plan.device, transport,
                                                    record.round_s, clock, round_bound_s)
        except ScenarioFailed as exc:
            if k < kill_round:
                raise
            raise ScenarioFailed(f"{BLOCKED}: {exc}") from None   # the requirement first: a stall's evidence follows it
        record.round_wrong.append(len(record.problems) - before)
        previous = expect
    return record


def kill_mid_round(trainer: Actor, workers: list[Any], labels: list[str], k: int, expect: object, previous: Any,
                   device: str, transport: str, clock: Clock, bound_s: float, record: LostRecord) -> float:
    """Round k with receiver 0 killed once every take is submitted: the survivors' round time."""
    import ray
    from ray.exceptions import RayError

    sent = clock.get(trainer.step.remote(k), f"round {k}: the trainer's step", bound_s)
    record.problems += round_problems(k, "the trainer (after its step)", sent, expect, None, device)

    def publish_kill_take() -> list[Any]:
        ref = trainer.publish.options(tensor_transport=transport).remote()
        takes = [w.take.remote(ref, k) for w in workers]
        ray.kill(workers[0], no_restart=False)
        try:
            return [takes[0]] + list(clock.get(takes[1:], f"round {k}: the surviving receivers through {transport} "
                                                          "after receiver 0 was killed", bound_s))
        finally:
            del ref
    outs, seconds = timed(publish_kill_take)
    for label, out in zip(labels[1:], outs[1:]):
        record.problems += round_problems(k, label, out["digest"], expect, previous, device)
    try:
        got = clock.get(outs[0], f"round {k}: the killed receiver's take to end (data or an error)", bound_s)
        record.killed_take = "data"
        record.problems += round_problems(k, labels[0] + " (its take ended before the kill)", got["digest"],
                                          expect, previous, device)
    except RayError as exc:
        record.killed_take = f"{type(exc).__name__}: {first_line(exc)}"[:200]
    held = clock.get(trainer.held.remote(), f"round {k}: the trainer's copy", bound_s)
    if not rounds.payloads_same(expect, held):
        record.problems.append(f"round {k}: the trainer's own copy changed after its receivers took it")
    return seconds
