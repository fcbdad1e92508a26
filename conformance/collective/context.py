"""What a collective check works with: the backend registered in the driver, a pool of member
actors spread over the cluster's nodes, groups made by any of Ray's three paths, and bounded waits.

One `CollectiveContext` per run (kept in the run's stash under harness.STATE; built by
harness.run_backend the first time a check needs it). When the collective block declares a device type (`devices`), each
member holds one unit of the manifest's resource, as a real backend's members would, so Ray sets
its visible devices and its device tensors live on the device Ray gave it; on a cluster without
the units the checks that need the pool are not applicable, with the reason. A pool holding no
units lives across the area's modules and costs one start of three actors per cluster; one holding
units is stopped when each module ends (harness.run_backend hands it to the module), so other areas find
every device free. A check that kills a member replaces it. Group names carry a per-run token, so runs side
by side never share a name.

What one check receives is a `CollectiveCtx` (`collective_ctx`, opened by the collective area): the common CheckContext
(its thresholds through `param(name)`, its metrics, the cluster its checklist entry names) with the manifest's
collective block and a typed reference to the run's CollectiveContext.
"""
from __future__ import annotations

import itertools
import time
import uuid
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Callable

from conformance.collective.config import POOL_SIZE, CollectiveConfig
from conformance.collective.members import SPEC_ENV, BarrierLog, CollectiveMember, register_backend, spec_env
from conformance.exc_text import first_line
from conformance.handles import Actor
from conformance.rdt.device import is_host
from conformance.run.check_context import CheckContext
from conformance.run.machinery import ACTOR_START_S
from conformance.timing.owned import BIRTH_SLICE_S
from conformance.timing.waits import StillRunning, call_on_thread

if TYPE_CHECKING:
    from ray.experimental.collective.communicator import CommunicatorHandle

    from conformance.run.check_context import RunView
    from conformance.timing.host_load import MachineryRecord
    from conformance.timing.waits import Refs

START_TIMEOUT_S = ACTOR_START_S   # the one hang guard of a new actor's start (conformance.run.machinery)
CALL_TIMEOUT_S = 30.0     # knob: hang guard of one control call (init, destroy, info)
# how often a call into the backend still pending looks for actors it asked Ray to start (CollectiveContext.op):
# one knob with what verify allows it (conformance.timing.owned.BIRTH_SLICE_S)
BIRTH_CHECK_S = BIRTH_SLICE_S


class CollectiveError(Exception):
    """A bounded wait ran out or a member raised; the message names what was awaited."""


def bounded(refs: Refs, timeout_s: float, what: str) -> Any:
    """ray.get with a total bound; every failure becomes CollectiveError naming `what`."""
    from conformance.timing.timeouts import CheckTimeout
    from conformance.timing.waits import bounded_get

    try:
        return bounded_get(refs, timeout_s, what)
    except CheckTimeout:
        raise
    except TimeoutError:
        raise Hang(f"{what}: no answer within {timeout_s:.0f}s (a hang)") from None
    except Exception as exc:  # noqa: BLE001 - what the member raised is the finding
        cause = getattr(exc, "cause", None)
        raise CollectiveError(f"{what}: {first_line(cause if isinstance(cause, BaseException) else exc)}") from None


def start_answers(refs: Refs, what: str, machinery: MachineryRecord) -> Any:
    """New members' first answers, awaited as Ray's machinery (conformance.run.machinery: the
    start guard stretched by the worker start the run measured, its `machinery` record; the host's
    failure, "not judged: host", when it runs out); what a member raised while starting becomes
    CollectiveError."""
    from conformance.run.machinery import await_actors
    from conformance.timing.host_load import HostNotReady
    from conformance.timing.timeouts import CheckTimeout

    try:
        return await_actors(refs, START_TIMEOUT_S, what, machinery=machinery)
    except (CheckTimeout, HostNotReady):
        raise
    except Exception as exc:  # noqa: BLE001 - what the member raised is the finding
        cause = getattr(exc, "cause", None)
        raise CollectiveError(f"{what}: {first_line(cause if isinstance(cause, BaseException) else exc)}") from None


def bounded_driver_call(fn: Callable[[], Any], timeout_s: float, what: str) -> Any:
    """Call `fn` (one of Ray's driver-side group calls, which wait on the members with an
    unbounded ray.get) on a daemon thread; CollectiveError naming `what` when it does not return
    within the bound. The hard timeout cannot cut a wait inside Ray's C++ get, so the driver's own
    thread never makes one; the caller discards the members, which ends the abandoned wait."""
    from conformance.timing.timeouts import CheckTimeout

    try:
        return call_on_thread(fn, timeout_s, f"collective: {what}")
    except StillRunning:
        raise Hang(f"{what}: did not return within {timeout_s:.0f}s (a hang)") from None
    except CheckTimeout:
        raise           # the enclosing hard timeout, raised in this thread while it waited
    except Exception as exc:   # noqa: BLE001 - fn's own error, handed back by call_on_thread
        raise CollectiveError(f"{what}: {first_line(exc)}") from None


class Hang(CollectiveError):
    """A bounded wait on the members ran out: they may be stuck inside the backend for good."""


def alive_nodes(resource: str | None = None) -> list[str]:
    """The alive nodes (the head first), only those offering `resource` when one is named."""
    return [node for node, _ in node_units(resource)]


def node_units(resource: str | None) -> list[tuple[str, int]]:
    """(node id, units of `resource` it has) of the alive nodes, the head first; with a resource
    named, only the nodes that offer it."""
    import ray

    nodes = [n for n in ray.nodes() if n.get("Alive")]
    nodes.sort(key=lambda n: (not n.get("Resources", {}).get("node:__internal_head__"), n["NodeID"]))
    got = [(str(n["NodeID"]), int(n.get("Resources", {}).get(resource, 0)) if resource else 0) for n in nodes]
    return [g for g in got if g[1] > 0] if resource else got


class CollectiveContext:
    def __init__(self, run: RunView, config: CollectiveConfig,
                 publish: Callable[[RunView, dict[str, Any]], None]) -> None:
        self.run = run
        self.config = config
        self._publish = publish           # the Collective section's publisher (conformance.collective.report.publish)
        self.python_path = list(run.manifest.python_path)
        self.token = uuid.uuid4().hex[:8]
        self._names = itertools.count()
        self._pool: list[Any] = []
        self._pool_cluster: object = None
        self._cluster: object = None         # the cluster the running check's mark gave it (on_cluster)
        self._rdt_registered = False
        self._rdt_pairs: dict[str, list[Any]] = {}   # by device type
        self.resource = str(run.manifest.resource_name)
        self.started_ids: set[str] = set()   # every member actor the suite started (the leftovers audit leaves them out)
        self.driver_registration = register_backend(config.backend, config.group_class, config.register,
                                                    self.python_path)
        self.section: dict[str, Any] = {"backend": config.backend, "group_class": config.group_class or "built in",
                                        "checks": {}, "bandwidth": []}

    def note(self, cid: str, text: str, **data: Any) -> None:
        """One line about a check for the report's Collective section (published at once)."""
        self.section["checks"][cid] = text
        self.section.update(data)
        self._publish(self.run, self.section)

    # ------------------------------------------------------------------ members
    def on_cluster(self, handle: object) -> None:
        """The live cluster of the check about to run (its shape mark's, CheckContext.cluster):
        the pool is rebuilt when it is not the one the members were started on."""
        self._cluster = handle

    def _remote(self, rdt: bool = False) -> Any:
        import ray

        return ray.remote(num_cpus=0, enable_tensor_transport=rdt)(CollectiveMember)  # type: ignore[call-overload]  # Ray's hints: pyproject.toml

    def register_rdt(self) -> None:
        """The manifest's RDT transport over the backend, registered in the driver once (Ray needs
        it there before the actors that use it are created); raises what the registration raised."""
        if not self._rdt_registered:
            from conformance.collective.members import register_rdt_transport

            register_rdt_transport(self.config.backend, self.config.rdt_transport, list(self.config.rdt_devices),
                                   self.python_path)
            self._rdt_registered = True

    @property
    def member_units(self) -> bool:
        """Whether the pool's members hold a unit of the resource each: the collective block
        declares a device type (its ops then take tensors on the vendor's device)."""
        return any(not is_host(d) for d in self.config.devices)

    def need_units(self, n: int, why: str) -> None:
        """Not applicable unless the alive nodes offering the resource can give n members one
        unit each, placed round-robin as `start` places them (the reason names what is missing)."""
        from conformance.rdt.accelerator_rule import members_reason
        from conformance.run.fixtures import not_applicable

        nodes = node_units(self.resource)
        want = [0] * len(nodes)
        for i in range(n):
            if nodes:
                want[i % len(nodes)] += 1
        if not nodes or any(w > have for w, (_, have) in zip(want, nodes)):
            not_applicable(members_reason(why, n, self.resource, [have for _, have in nodes]))

    def start(self, n: int, *, hook: bool = False, offset: int = 0, rdt: bool = False,
              units: bool = False) -> list[Any]:
        """n new members round-robin over the alive nodes (from node `offset`), started and ready.

        hook: the member does not register the backend itself; the registration runs as a
        worker_process_setup_hook of its runtime environment. rdt: created with
        enable_tensor_transport (after register_rdt), so Ray pushes the RDT transport to it.
        units: each holds one unit of the resource (on the nodes that offer it), so Ray sets its
        visible devices as it does for a vendor's own workers."""
        from ray.util.scheduling_strategies import NodeAffinitySchedulingStrategy

        from conformance.cluster.requests import demand

        nodes = alive_nodes(self.resource if units else None)
        cfg = self.config
        actors = []
        for i in range(n):
            opts: dict[str, Any] = {"scheduling_strategy": NodeAffinitySchedulingStrategy(
                nodes[(offset + i) % len(nodes)], soft=False)}
            if units:
                opts.update(demand(self.resource, 1))
            if hook:
                opts["runtime_env"] = {"worker_process_setup_hook": "conformance.collective.members.register_from_env",
                                       "env_vars": {SPEC_ENV: spec_env(cfg.backend, cfg.group_class, cfg.register,
                                                                       self.python_path)}}
            actors.append(self._remote(rdt).options(**opts).remote(cfg.backend, cfg.group_class, cfg.register,
                                                                   self.python_path, not hook, rdt))
        self.started_ids |= {a._actor_id.hex() for a in actors}
        self.infos = start_answers([a.info.remote() for a in actors], "starting the member actors", self.run.machinery)
        return actors

    def pool(self) -> list[Any]:
        """POOL_SIZE members over the nodes (rank i on node i mod nodes), rebuilt when one died;
        each holding a unit of the resource when the block declares a device type (not
        applicable where the cluster cannot give them one each)."""
        handle = self._cluster
        if self._pool and self._pool_cluster is handle:
            try:
                bounded([a.info.remote() for a in self._pool], CALL_TIMEOUT_S, "pool health")
                return self._pool
            except CollectiveError:
                self.stop(self._pool)
        if self.member_units:
            self.need_units(POOL_SIZE, f"the collective block declares {', '.join(self.config.devices)}")
        self._pool, self._pool_cluster = self.start(POOL_SIZE, units=self.member_units), handle
        return self._pool

    def discard(self, members: list[Any]) -> None:
        """Kill members that may be stuck inside the backend (a bounded wait on them ran out):
        Ray cannot interrupt an actor's running call, so every later call on them would queue
        behind the hang. The next pool() starts fresh members in their place."""
        self.stop(members)
        if any(m in self._pool for m in members):
            self._pool = []

    def guard(self, members: list[Any], call: Callable[..., Any]) -> Any:  # call() with no arguments (a lambda may bind defaults); its result
        """Run `call()`; on a hang, discard `members` before the Hang goes on (see discard)."""
        try:
            return call()
        except Hang:
            self.discard(members)
            raise

    def op(self, members: list[Any], refs: Refs, bound_s: float, what: str, *, param: str | None = None) -> Any:
        """The members' answers to a call into the backend (`refs`), within the plugin's bound
        `bound_s` (the checklist's `param` when one gives it, never stretched); Hang, with the
        members discarded (guard), when they do not come.

        A backend may start actors of its own inside a call (a rendezvous or store actor per
        group): starting them is Ray's machinery (a worker start, the class's imports), whose time
        on a loaded host the plugin does not own. So a call still pending looks, every
        BIRTH_CHECK_S and when its bound runs out, for actors the members asked for that Ray is still starting
        (leftovers.starting_actors); the wait until they answer is Ray's (machinery.await_births:
        stretched by the run's measurement, a fresh sample, "not judged: host" when the host ran
        out) and is left out of the call's bound. Every call is recorded in the check's budget
        (metrics.waits: the plugin's wait, naming `param`, with what it left to Ray beside Ray's
        own waits), so verify holds its bound to the release's and a pass to its bound."""
        from conformance.leftovers import starting_actors
        from conformance.run.machinery import await_births
        from conformance.timing.host_load import HostNotReady
        from conformance.timing.owned import Wait, record
        from conformance.timing.timeouts import granted
        from conformance.timing.waits import BoundRanOut

        ids = [m._actor_id.hex() for m in members]

        def born_for_them() -> list[str]:
            return [f"{a.class_name} {a.name!r}" if a.name else a.class_name for a in starting_actors(ids)]

        t0 = time.monotonic()
        entry = Wait("plugin", what, float(bound_s), float(bound_s), None, "met", param)
        try:
            while True:
                looked = time.monotonic()
                left = float(bound_s) + entry.excluded_s - (looked - t0)
                if left > 0:
                    try:
                        return bounded(refs, min(BIRTH_CHECK_S, left), what)
                    except Hang:
                        pass
                starting = born_for_them()
                if not starting and left <= BIRTH_CHECK_S:
                    entry.verdict = "ran out"
                    raise Hang(f"{what}: no answer within {bound_s:.0f}s (a hang)")
                if starting:
                    # the slice in which they were first seen counts as theirs (they began in it)
                    with granted(ACTOR_START_S):
                        entry.excluded_s += min(BIRTH_CHECK_S, left) + await_births(
                            born_for_them, f"Ray to start the actor(s) the backend asked for during {what} "
                            f"({', '.join(starting[:3])})", machinery=self.run.machinery)
                    entry.granted_s = float(bound_s) + entry.excluded_s
        except BoundRanOut as exc:   # its actors never answered, on a host that was not slower: the plugin's
            entry.verdict = "ran out"
            self.discard(members)
            raise Hang(f"{what}: no answer within {bound_s:.0f}s (a hang): {exc}") from None
        except (Hang, HostNotReady) as exc:
            entry.verdict = "host" if isinstance(exc, HostNotReady) else entry.verdict
            self.discard(members)
            raise
        except BaseException:
            entry.verdict = "error"
            raise
        finally:
            entry.took_s = time.monotonic() - t0
            record(entry)

    def ask(self, members: list[Any], method: str, *args: Any, timeout_s: float = CALL_TIMEOUT_S,
            what: str | None = None, param: str | None = None) -> list[Any]:
        """`method(*args)` on every member at once, within `timeout_s` (the check's `param` when
        one gives it; see op)."""
        refs = [getattr(m, method).remote(*args) for m in members]
        return list(self.op(members, refs, timeout_s, what or method, param=param))

    def rdt_pair(self, device: str) -> list[Any]:
        """Two members created for RDT (after register_rdt, with enable_tensor_transport) on two
        nodes where there are two, their tensors on `device` (each holding a unit of the resource
        when that is not the host: not applicable where the cluster has none for them), kept for
        the RDT checks while they answer; in no group between checks (each check destroys what
        it made)."""
        pair = self._rdt_pairs.get(device, [])
        if pair:
            try:
                bounded([a.info.remote() for a in pair], CALL_TIMEOUT_S, "RDT pair health")
                return pair
            except CollectiveError:
                self.stop(pair)
        units = not is_host(device)
        if units:
            self.release_units()   # the pool's units: the pair may need them
            self.need_units(2, f"RDT over {self.config.backend} on {device}")
        self._rdt_pairs[device] = self.start(2, rdt=True, units=units)
        return self._rdt_pairs[device]

    def replace(self, dead: Actor) -> None:
        """Put a fresh member in the pool where `dead` was (same node slot, holding a unit as the
        pool's members do)."""
        i = self._pool.index(dead)
        self._pool[i] = self.start(1, offset=i, units=self.member_units)[0]

    def release_units(self) -> None:
        """Stop the members that hold units of the resource (the pool when it holds them, RDT
        pairs on a device) and wait until Ray has every unit back, so what runs next finds every
        device free."""
        held = [pair for device, pair in self._rdt_pairs.items() if not is_host(device)]
        for device in [d for d in self._rdt_pairs if not is_host(d)]:
            del self._rdt_pairs[device]
        if self.member_units and self._pool:
            held.append(self._pool)
            self._pool = []
        if not held:
            return
        import ray

        from conformance.run.release import await_released
        for members in held:
            self.stop(members)
        if ray.is_initialized():   # Ray's accounting, recorded in the check running (conformance.run.release)
            await_released(self.resource, "every device to be free after the collective members ended",
                           machinery=self.run.machinery)

    def stop(self, actors: list[Any]) -> None:
        import ray

        for a in actors:
            try:
                ray.kill(a)
            except Exception:  # noqa: BLE001 - already gone
                pass

    def close(self) -> None:
        import ray

        if ray.is_initialized():
            self.stop(self._pool + [a for pair in self._rdt_pairs.values() for a in pair])
        self._pool, self._rdt_pairs = [], {}

    # ------------------------------------------------------------------ groups
    def group_name(self, tag: str) -> str:
        return f"cc-{tag}-{self.token}-{next(self._names)}"

    def create(self, members: list[Any], group: str, path: str = "init", ranks: list[int] | None = None) -> Any:
        """A group over `members` by one of Ray's paths; rank of members[i] is ranks[i] (default i).

        init: init_collective_group inside each member; declarative: the driver's
        create_collective_group (members build the group lazily on their first op);
        experimental: ray.experimental.collective.create_collective_group (ranks in list order)."""
        ranks = list(range(len(members))) if ranks is None else ranks
        ws, backend = len(members), self.config.ray_backend
        if path == "init":
            self.guard(members, lambda: bounded(
                [m.init_group.remote(ws, r, backend, group) for m, r in zip(members, ranks)], CALL_TIMEOUT_S,
                f"init_collective_group({group!r}) in {ws} members"))
            return group
        if path == "declarative":
            from ray.util import collective as col

            self.guard(members, lambda: bounded_driver_call(
                lambda: col.create_collective_group(members, ws, ranks, backend=backend, group_name=group),  # type: ignore[arg-type]  # Ray's hints: pyproject.toml
                CALL_TIMEOUT_S, f"create_collective_group({group!r}) on the driver"))
            return group
        from ray.experimental import collective as xcol

        ordered = [m for _, m in sorted(zip(ranks, members), key=lambda p: p[0])]
        return self.guard(members, lambda: bounded_driver_call(
            lambda: xcol.create_collective_group(ordered, backend=backend, name=group), CALL_TIMEOUT_S,
            f"ray.experimental.collective.create_collective_group({group!r})"))

    def destroy(self, members: list[Any], group: str, timeout_s: float = CALL_TIMEOUT_S) -> None:
        self.guard(members, lambda: bounded([m.destroy.remote(group) for m in members], timeout_s,
                                            f"destroy_collective_group({group!r})"))

    def destroy_handle(self, handle: CommunicatorHandle) -> None:
        from ray.experimental import collective as xcol

        self.guard(list(handle.actors), lambda: bounded_driver_call(
            lambda: xcol.destroy_collective_group(handle), CALL_TIMEOUT_S,
            "ray.experimental.collective.destroy_collective_group"))

    def execute(self, members: list[Any], steps: list[dict[str, Any]], group: str, bound_s: float,
                ranks: list[int] | None = None, log: Actor | None = None, *,
                param: str | None = None) -> list[list[dict[str, Any]]]:
        """Run the program on every member at once; outputs indexed by rank. `log`: a BarrierLog
        (barrier_log) the program's barriers report to. `bound_s`: the check's `param` when one
        gives it."""
        ranks = list(range(len(members))) if ranks is None else ranks
        refs = [m.run.remote(steps, r, len(members), group, log) for m, r in zip(members, ranks)]
        got = self.op(members, refs, bound_s, f"{len(steps)} op(s) in group of {len(members)}", param=param)
        by_rank: list[Any] = [None] * len(members)
        for r, out in zip(ranks, got):
            by_rank[r] = out
        return by_rank

    def barrier_log(self) -> Any:
        """A new BarrierLog actor (members.BarrierLog), started and answering; the caller stops it
        (stop) when its programs are done."""
        import ray

        log: Any = ray.remote(num_cpus=0)(BarrierLog).remote()
        self.started_ids.add(log._actor_id.hex())
        start_answers([log.count.remote("")], "starting the barrier log actor", self.run.machinery)
        return log

    def info_actor_alive(self, group: str) -> bool:
        """Whether the detached `info_<group>` actor of Ray's declarative path is still alive."""
        import ray

        try:
            ray.get_actor("info_" + group)
        except ValueError:
            return False
        return True


def wait_until(predicate: Callable[..., object], timeout_s: float, interval_s: float = 0.2) -> bool:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if predicate():
            return True
        time.sleep(interval_s)
    return bool(predicate())


@dataclass(kw_only=True)
class CollectiveCtx(CheckContext):
    """What a collective check receives (`collective_ctx`), and nothing else.

    `config` is the manifest's collective block. A check whose checklist entry names a cluster works on the live
    cluster with the backend registered in the driver: `backend` is then the run's one
    CollectiveContext (member pool, groups, bounded waits), which lives in the stash for the
    session. A check without one (CC-001, CC-002) reads the class alone and gets none: building it
    registers the backend, and a class Ray refuses must be judged by the contract check, not fail
    its registration first."""

    config: CollectiveConfig
    _backend: CollectiveContext | None = field(default=None, repr=False)

    @property
    def backend(self) -> CollectiveContext:
        """The run's CollectiveContext (only for a check whose checklist entry names a cluster)."""
        if self._backend is None:
            raise RuntimeError(f"{self.check_id}: a collective check of cluster 'none' has no live backend "
                               "(name its shape in its checklist entry's `cluster` to work on the cluster)")
        return self._backend
