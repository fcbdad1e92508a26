"""Driver side of the transport-usage checks (TR-015..TR-020): what users do with RDT refs
beyond one produce-then-consume, and the failures around it.

These checks run on the shared cluster, beside the data and lifecycle checks, with Ray's
default RDT fetch timeout. They transfer with the fault-injecting twin of the manifest's
transport (`<NAME>_RECOVERY`, see conformance.rdt.faults): unarmed, it is the vendor's code plus
the tracing records; armed, it can hold a receive or end the receiving process mid-transfer. It
is registered before the check's own actors exist, so they carry it.

Each check is one `Clock` (conformance.timing.clock): every wait ends at its own bound from the
checklist's params, and a wait that runs out fails the check naming the step. The transfers are
the RDT harness's bounded ones (conformance.rdt.transfer); a fresh actor's start is a wait on Ray's
machinery (conformance.run.machinery: the harness's start guard, stretched; the host's failure
when it runs out; left out of the scenario's bound).
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable

from conformance.areas.transport import handover, reference_wave
from conformance.areas.transport.context import TransportCtx
from conformance.areas.transport.reference_wave import ReferenceWave
from conformance.exc_text import first_line
from conformance.handles import Actor
from conformance.rdt import transfer
from conformance.rdt.accelerator_rule import actors_reason
from conformance.rdt.context import TransportContext, later_bytes
from conformance.rdt.device import is_host
from conformance.rdt.fixtures import open_context, transport_setup
from conformance.rdt.pool import START_TIMEOUT_S, destroy_group, make_group, pair_node, start_endpoints
from conformance.rdt.registration import TransportSetup
from conformance.rdt.transfer import short
from conformance.rdt.warm import STOPPED_UNRETURNED, WarmKey
from conformance.report.results import not_applicable
from conformance.run.check_context import CheckContext
from conformance.run.machinery import clock_ready
from conformance.timing.clock import CONTROL_CALL_S, Clock, ScenarioFailed
from conformance.timing.host_load import MAX_FACTOR
from conformance.timing.owned import Wait
from conformance.timing.timeouts import CheckTimeout

__all__ = ["UsageCtx", "short"]
LENT_KINDS = ("peer",)   # the kinds the run's warm pool lends (the others serve one check each: started for it)
FAILURE_CHARS = 2000   # knob: a recorded failure's length (a stall's evidence names every pending transfer)
STEP_ERROR_CHARS = 300   # knob: a step's recorded error or failure


def _ray() -> Any:
    import ray
    return ray


def actor_class(kind: str) -> tuple[type, bool]:
    """The class of a usage actor and whether it has the tensor transport: "peer" (UsagePeer),
    "async" (AsyncPeer), "plain" (PlainPeer, created without it)."""
    from conformance.areas.transport import usage_actors as A
    return {"peer": (A.UsagePeer, True), "async": (A.AsyncPeer, True), "plain": (A.PlainPeer, False)}[kind]


def _kill(actors: list[Any]) -> None:
    for a in actors:
        try:
            _ray().kill(a)
        except Exception:  # noqa: BLE001 - already dead
            pass


def _units_on(node_id: str, resource: str) -> float:
    """How many units of the resource the node has in all (held or free)."""
    for n in _ray().nodes():
        if n.get("NodeID") == node_id:
            return float(n.get("Resources", {}).get(resource, 0))
    return 0.0


@dataclass(kw_only=True)
class UsageCtx(TransportCtx):
    """One usage check (`transport_ctx: UsageCtx`): the transport check's context plus the
    registered twin and the actors and groups the check started (stopped after it)."""

    x: TransportSetup
    actors: list[Any] = field(default_factory=list)      # started for this check: stopped after it
    borrowed: list[Any] = field(default_factory=list)    # lent by the run's warm pool: given back after it
    discarded: dict[int, str] = field(default_factory=dict)   # lent ones the check stopped (id: why)
    groups: list[Any] = field(default_factory=list)
    current: Clock | None = None   # the scenario of the type the check is on

    @classmethod
    def open(cls, base: CheckContext, transport: TransportContext) -> "UsageCtx":
        """n/a without a transport; the twin registered before the check's actors exist; the
        shared cluster; the transport named in the check's metrics."""
        x = transport_setup(base.run, faults=True)
        ctx = open_context(cls, base, transport, x=x)
        ctx.metrics["transport"] = {"name": x.name, "one_sided": x.one_sided, "can_abort": x.can_abort}
        return ctx

    @property
    def name(self) -> str:
        """The transport the checks transfer with: the fault-injecting twin."""
        return self.x.fault_name

    @property
    def resource(self) -> str:
        return self.transport.resource

    def clock(self, scenario: str, bound_param: str = "scenario_bound_s") -> Clock:
        """The check's scenario, bounded by its `bound_param` param."""
        self.current = self.scenario(scenario, param=bound_param)   # the wait records its param
        return self.current

    def payload_bytes(self, param: str = "payload_bytes", every_type: bool = False) -> int:
        """The param's payload (capped by the run's size knob); on the second and later device
        types the smallest that still moves real bytes, unless the requirement needs its size on
        every type (`every_type`: a transfer long enough to be interrupted)."""
        from conformance.rdt.config import max_bytes
        nbytes = min(int(self.param(param)), max_bytes())
        return nbytes if every_type else later_bytes(nbytes, self.first_device)

    def each_device(self, run_one: Callable[[str, bool], None]) -> None:
        """The check's scenario on each declared device type (RdtCtx.each_device), the actors
        one type started stopped before the next starts its own. Each type's evidence is its
        steps (`step`), the scenario's time (its own, and what it left to Ray's machinery) and
        the failure that ended it, if one did: the check then decides by its judge
        (`decide_over_types("step_count")`), which re-reads all of it."""
        def one(device: str, first: bool) -> None:
            self.current = None
            ended = False   # the scenario ran to its end: its lent actors go back to the pool
            try:
                run_one(device, first)
                ended = True
            except ScenarioFailed as exc:
                self.metrics["failure"] = str(exc)[:FAILURE_CHARS]
            finally:
                if self.current is not None:   # the scenario's time, before its actors are stopped
                    self.metrics["scenario"] = {"elapsed_s": round(self.current.elapsed(), 3),
                                                "excluded_s": round(float(self.current.marks.get("excluded_s", 0.0)), 3),
                                                "bound_s": round(self.current.bound_s, 3)}
                self.close(give_back=ended)
                self.metrics.setdefault("steps", [])
                self.metrics["step_count"] = len(self.metrics["steps"])
        super().each_device(one)

    def step(self, clock: Clock, what: str, expect: str, bound_s: float, run: Callable[[], Any],
             carries: str | None = None) -> Any:
        """Run one step of the scenario and record it (what, the outcome it expects: data, an
        error, a store's size; its bound; how long it took; the error it raised or failed with):
        the evidence the check's judge reads. A step that fails the scenario is recorded too."""
        t0 = clock.elapsed()
        entry: dict[str, Any] = {"step": what, "expect": expect, "bound_s": round(float(bound_s), 3)}
        if carries:
            entry["carries"] = carries
        steps = self.metrics.setdefault("steps", [])
        try:
            value = run()
        except ScenarioFailed as exc:
            entry.update(took_s=round(clock.elapsed() - t0, 3), ok=False, error=str(exc)[:STEP_ERROR_CHARS])
            steps.append(entry)
            raise
        entry.update(took_s=round(clock.elapsed() - t0, 3), ok=True)
        if expect == "error":
            entry["error"] = str(value)[:STEP_ERROR_CHARS]
        steps.append(entry)
        return value

    # ------------------------------------------------------------------ actors
    def start(self, clock: Clock, n: int, kind: str = "peer", **options: Any) -> list[Any]:
        """n actors on one node (the first offering the device), ready, in their own collective
        group when the transport needs one; their tensors on the device type the check is on."""
        cls, rdt = actor_class(kind)
        device = self.device or self.x.device
        node = pair_node(self.x, self.resource, device)
        if rdt and not is_host(device):
            have = _units_on(node, self.resource)
            if have < n:   # they would wait for units forever: the check cannot run on this type here
                not_applicable(actors_reason(device, n, have, self.resource))
        actors = self._started(clock, n, kind, device, node, units=rdt and not is_host(device), **options)
        if rdt:
            self.group(clock, actors)
        return actors

    def start_reference(self, clock: Clock, n: int, kind: str, **options: Any) -> list[Any]:
        """n actors of `kind` on the node the check's own actors use, their tensors in host memory,
        holding no unit and in no group: the same-work reference's (conformance.areas.transport
        .reference_wave), which moves host tensors through the suite's own transport."""
        node = pair_node(self.x, self.resource, self.device or self.x.device)
        return self._started(clock, n, kind, "cpu", node, units=False, **options)

    def reference_wave(self, clock: Clock, n: int, n_actors: int, nbytes: int, bound_s: float) -> ReferenceWave:
        """A wave that ran out, done again through the suite's reference transport on fresh actors of
        the wave's kind (reference_wave: whose stall it was), within the bound the wave had. Its
        time is Ray's and the host's, not the plugin's scenario's: left out of the clock, granted
        beyond the check's hard timeout, recorded as a wait and in metrics.reference_wave. The
        wave's own actors are stopped first (their stall's evidence is taken): the reference
        meets the host the plugin's wave met, not what the plugin left running (a wedged receive
        that spins would otherwise starve the reference and pass its stall off as the host's)."""
        self.close()
        kind = "async" if self.x.one_sided else "peer"
        options = {"max_concurrency": int(self.param("max_concurrency"))} if self.x.one_sided else {}
        with clock.left_out(), self.budget.granted(bound_s + START_TIMEOUT_S * MAX_FACTOR):
            ref = reference_wave.run(lambda k: self.start_reference(clock, k, kind, **options), n, n_actors,
                                     nbytes, bound_s)
        self.metrics["reference_wave"] = ref.as_dict()
        if ref.error is None:
            self.budget.note(Wait("ray", "the same wave through the suite's reference transport", bound_s, bound_s,
                                  ref.took_s, "host" if ref.ran_out else "met"))
        return ref

    def _started(self, clock: Clock, n: int, kind: str, device: str, node: str, *, units: bool,
                 **options: Any) -> list[Any]:
        """n actors of `kind`: lent by the run's warm pool (conformance.rdt.warm) when the kind is
        one it lends and the transport forms no collective group (an actor joins one group per
        backend: a lent one could not join the next check's), else started for this check."""
        if kind in LENT_KINDS and not self.x.collective_backend:
            key = WarmKey.of(kind, device, node, units, options)
            pool = self.transport.warm
            births = pool.births
            actors = pool.borrow(self.transport.cluster(), key, n,
                                 lambda k: self._born(clock, k, kind, device, node, units=units, **options),
                                 lambda new: self._birth_readings(clock, new), _kill)
            self.borrowed.extend(actors)
            tally = self.metrics.setdefault("warm_pool", {"lent": 0, "born": 0})   # benchmarks/certify.py sums it
            tally["born"] += pool.births - births
            tally["lent"] += n - (pool.births - births)
            return actors
        actors = self._born(clock, n, kind, device, node, units=units, **options)
        self.actors.extend(actors)
        return actors

    def _born(self, clock: Clock, n: int, kind: str, device: str, node: str, *, units: bool,
              **options: Any) -> list[Any]:
        """n new actors of `kind`, answering; when they hold units, the idle lent actors on their
        node are stopped first and the units they held awaited (Ray's accounting)."""
        if units:
            idle = self.transport.warm.take_idle(holding_units=True, node=node)
            if idle:
                _kill(idle)
                self.budget.released(self.resource, f"{n} unit(s) free on node {node[:8]} after {len(idle)} idle "
                                     "lent actor(s) there stopped", node_id=node, units=n, clock=clock)
        cls, rdt = actor_class(kind)
        eps = start_endpoints(self.x, self.resource, device=device, nodes=[node] * n,
                              units=units, cls=cls, tensor_transport=rdt, group=False,
                              ready=clock_ready(clock, START_TIMEOUT_S, self.budget.machinery),
                              registered=clock_ready(clock, START_TIMEOUT_S, self.budget.machinery, runs_plugin_code=True),
                              what=f"{n} {kind} actor(s) to start", **options)
        return eps.actors

    def _watched(self) -> list[str]:
        """The variables a handover reads: the manager's visible-devices variable, when it names one."""
        name = self.manager().get_visible_accelerator_ids_env_var()
        return [name] if name else []

    def _birth_readings(self, clock: Clock, actors: list[Any]) -> list[dict[str, Any]]:
        """New lent actors' first handover readings (conformance.rdt.endpoint.Endpoint.handover),
        what later ones are compared with: new actors' first calls, awaited as Ray's machinery
        (stretched on a loaded host) and left out of the scenario's bound (Budget.started)."""
        refs = [a.handover.remote(self._watched()) for a in actors]
        readings: list[dict[str, Any]] = self.budget.started(clock, refs, f"{len(actors)} lent actor(s)' handover "
                                                             "reading at birth")
        return readings

    def group(self, clock: Clock, actors: list[Any]) -> None:
        """One collective group over a batch of new actors (GLOO/NCCL only; an actor joins one
        group per backend, so each batch the check starts forms its own)."""
        try:
            group = make_group(self.x, actors)
        except CheckTimeout:
            raise
        except Exception as exc:  # noqa: BLE001 - the finding
            raise clock.fail(f"creating a {self.x.collective_backend} group over {len(actors)} actors failed: "
                             f"{first_line(exc)}") from None
        if group is not None:
            self.groups.append(group)

    def discard(self, actor: Any) -> None:
        """Stop an actor the scenario leaves busy (TR-019's sender in its long method) now, never
        given back: waiting for it to finish would cost more than a birth."""
        self.discarded[id(actor)] = "discarded by the check: left busy"
        _kill([actor])

    def close(self, give_back: bool = False) -> None:
        """Stop the actors started for this check; with `give_back` (a scenario that ran to its
        end), give the lent ones back to the pool, which proves nothing leaked
        (conformance.rdt.warm: the record in metrics.handover, judged); else stop them too."""
        for g in self.groups:
            destroy_group(g)
        self.groups.clear()
        stop, self.actors = list(self.actors), []
        lent, self.borrowed = list(self.borrowed), []
        discarded, self.discarded = self.discarded, {}
        try:
            if lent and give_back and not self.metrics.get("failure"):
                stop += self._hand_back(lent, discarded)
                lent = []
        finally:   # whatever ended the give-back (the hard timeout): nothing lent is left running
            if lent:
                self._stopped_unreturned(len(lent))
            self.transport.warm.forget(lent)
            _kill(stop + lent)

    def _stopped_unreturned(self, n: int) -> None:
        """Borrowed actors stopped without a give-back (TR-019 stops its wave's before its pair, a
        scenario that did not end) are in metrics.handover too, as stopped: the records account for
        every actor the tally (metrics.warm_pool) names, exactly once (judges/handover.py)."""
        self.metrics.setdefault("handover", []).append(
            {"returned": 0, "stopped": n, "leaks": [], "why_stopped": [STOPPED_UNRETURNED], "took_s": 0.0,
             "bound_s": float(self.param("handover_bound_s"))})

    def _hand_back(self, lent: list[Any], discarded: dict[int, str]) -> list[Any]:
        """The lent actors handed back to the pool (conformance.areas.transport.handover): its
        record in metrics.handover (judged), the actors to stop returned."""
        record, stop = handover.hand_back(self.transport.warm, lent, self._watched(), self.name,
                                          float(self.param("handover_bound_s")), discarded)
        self.metrics.setdefault("handover", []).append(record.as_dict())
        return stop

    # ------------------------------------------------------------------ transfers (conformance.rdt.transfer)
    def produce(self, src: Actor, nbytes: int, seed: int, **options: Any) -> Any:
        return transfer.produce(src, self.name, nbytes, seed, **options)

    def expect_data(self, clock: Clock, submit: Callable[[], Any], sent: object, what: str, bound_s: float,
                    stalled: list[tuple[Any, Any, Any]] | None = None) -> Any:
        return self.step(clock, what, "data", bound_s,
                         lambda: transfer.expect_data(clock, self.name, submit, sent, what, bound_s, stalled))

    def expect_error(self, clock: Clock, submit: Callable[[], Any], what: str, bound_s: float,
                     text: str | None = None) -> str:
        return str(self.step(clock, what, "error", bound_s,
                             lambda: transfer.expect_error(clock, submit, what, bound_s, text), carries=text))

    @staticmethod
    def submitted(clock: Clock, submit: Callable[[], Any], what: str) -> Any:
        return transfer.submitted(clock, submit, what)

    def sent(self, clock: Clock, src: Actor, seed: int) -> Any:
        return transfer.sent(clock, src, seed)

    def roundtrip(self, clock: Clock, src: Actor, dst: Actor, nbytes: int, seed: int, what: str, bound_s: float) -> None:
        self.step(clock, what, "data", bound_s,
                  lambda: transfer.roundtrip(clock, self.name, src, dst, nbytes, seed, what, bound_s))

    def wait_store(self, clock: Clock, actor: Actor, target: int, what: str, bound_s: float) -> None:
        """Wait until the actor's RDT store holds `target` objects."""
        seen: list[int] = []

        def settled() -> bool:
            seen.append(clock.get(actor.rdt_objects.remote(), "the RDT store's size", CONTROL_CALL_S))
            return seen[-1] == target

        self.step(clock, what, "store", bound_s, lambda: clock.wait_for(
            settled, what, bound_s, poll_s=0.2, explain=lambda: f"{seen[-1] if seen else '?'} object(s)"))

