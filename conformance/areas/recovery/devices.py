"""Driver-side helpers for device recovery scenarios: holders pinned to a node, releases, restarts.

Everything is derived from what Ray shows (the node's advertised count, the ids Ray assigns), not
from how the simulated accelerator numbers its devices, so a vendor plugin with other id
formats is judged by the same rules.
"""
from __future__ import annotations

import time
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Mapping, MutableMapping, Sequence

from conformance.areas.recovery.actors import Holder
from conformance.areas.recovery.audit import audit, holder_records
from conformance.run.nodes import wave
from conformance.run.release import available
from conformance.timing.clock import Clock
from conformance.timing.timeouts import CheckTimeout

if TYPE_CHECKING:
    from ray import ObjectRef
    from ray._private.accelerators.accelerator import AcceleratorManager

    from conformance.catalog.manifest import Manifest
    from conformance.run.budget import Budget


def _ray() -> Any:
    import ray
    return ray


@dataclass
class DeviceNode:
    """The node a device scenario runs on, and how to reach its devices."""

    resource: str
    env_var: str | None
    manager_ref: str | None
    node_id: str
    count: int

    @property
    def probe_args(self) -> tuple[str | None, str, str | None]:
        return (self.env_var, self.resource, self.manager_ref)


def device_nodes(resource: str) -> list[dict[str, Any]]:
    return [n for n in _ray().nodes() if n.get("Alive") and n.get("Resources", {}).get(resource, 0) >= 1]


def device_node(manifest: Manifest, manager: type[AcceleratorManager], node: dict[str, Any]) -> DeviceNode:
    """The DeviceNode of one ray.nodes() entry."""
    return DeviceNode(manifest.resource_name, manager.get_visible_accelerator_ids_env_var(),
                      manifest.view.accelerator.manager, node["NodeID"], int(node["Resources"][manifest.resource_name]))


def first_device_node(manifest: Manifest, manager: type[AcceleratorManager]) -> DeviceNode | None:
    nodes = device_nodes(manifest.resource_name)
    return device_node(manifest, manager, nodes[0]) if nodes else None


def chosen_device_nodes(run: object, manifest: Manifest, manager: type[AcceleratorManager]) -> list[DeviceNode]:
    """The nodes a device scenario runs on (one read of Ray's view): the run's seed's choice of
    its sample size per failure domain (conformance.run.nodes.domain_choice, by the label keys of
    the domains the manifest declares; verify's `nodes` line recomputes it); the first device node
    for a run without a seed (a stand-in); [] when no node advertises the resource."""
    from conformance.catalog.labels import load_vocabulary
    from conformance.catalog.node_sample import manifest_domain_keys
    from conformance.run.nodes import domain_choice

    nodes = device_nodes(manifest.resource_name)
    keys = manifest_domain_keys(manifest.data, load_vocabulary())
    chosen = domain_choice(run, nodes, manifest.resource_name, 1, keys)
    by_id = {n["NodeID"]: n for n in nodes}
    picked = [by_id[i] for i in chosen if i in by_id] if chosen is not None else nodes[:1]
    return [device_node(manifest, manager, n) for n in picked]


def pinned(node_id: str) -> Any:
    from ray.util.scheduling_strategies import NodeAffinitySchedulingStrategy
    return NodeAffinitySchedulingStrategy(node_id=node_id, soft=False)


def spawn_holders(dev: DeviceNode, n: int, *, max_restarts: int = 0, node_id: str | None = None,
                  **options: Any) -> list[Any]:
    """`n` one-device holder actors; pinned to `node_id` (default: the scenario's node) unless
    `options` bring their own scheduling (label_selector, placement group)."""
    ray = _ray()
    from conformance.cluster.requests import demand

    opts: dict[str, Any] = {"num_cpus": 0, **demand(dev.resource, 1), "max_restarts": max_restarts,
                            "max_task_retries": 0}
    if "label_selector" not in options and "scheduling_strategy" not in options:
        opts["scheduling_strategy"] = pinned(node_id or dev.node_id)
    opts.update(options)
    actor = ray.remote(Holder).options(**opts)
    return [actor.remote(*dev.probe_args) for _ in range(n)]


def make_ledger() -> Any:
    """An attempt ledger on the driver's node (never on a node a scenario kills)."""
    from conformance.areas.recovery.actors import Ledger

    ray = _ray()
    return ray.remote(Ledger).options(num_cpus=0, scheduling_strategy=pinned(
        ray.get_runtime_context().get_node_id())).remote()


def states(clock: Clock, holders: list[Any], what: str, bound_s: float | None = None) -> list[dict[str, Any]]:
    answers: list[dict[str, Any]] = clock.get([h.state.remote() for h in holders], what, bound_s)
    return answers


def kill_quietly(actors: list[Any]) -> None:
    """Clean-up: end actors whatever state they are in (never raises)."""
    ray = _ray()
    for a in actors:
        try:
            ray.kill(a, no_restart=True)
        except CheckTimeout:
            raise
        except Exception:  # noqa: BLE001 - already dead or never created
            pass


def remove_group_quietly(pg: Any) -> None:
    """Clean-up: remove a placement group if there is one (never raises but a check's timeout)."""
    if pg is None:
        return
    from ray.util.placement_group import remove_placement_group

    try:
        remove_placement_group(pg)
    except CheckTimeout:
        raise
    except Exception:  # noqa: BLE001 - already removed
        pass


def view_shows_held(budget: Budget, clock: Clock, dev: DeviceNode, held: int) -> float:
    """Wait until Ray's resource view of the node shows `held` of its devices in use; returns the
    free units it then shows.

    Holders that answered a call hold their devices, but the view a driver reads (GCS) is fed
    asynchronously by the raylet: right after the holders start it can still show the node as
    it was before them. A free-device baseline read then is too high, and "one more unit free"
    after a release is never reached on a node whose holders hold every device. The baseline is
    therefore taken only once the view agrees with the holders.

    Whose time: the raylet's resource report reaching the GCS is Ray's machinery (no plugin code
    runs on it): a wait through the check's `budget` bounded by device_release_s, stretched by the
    run's measurement, recorded in metrics.waits, left out of the scenario's bound (groups.await_ray)."""
    from conformance.areas.recovery.groups import await_ray

    expected_free = dev.count - held
    await_ray(budget, clock, lambda: available(dev.resource, dev.node_id) <= expected_free + 1e-9,
              f"Ray's resource view of node {dev.node_id[:8]} to show the {held} held device(s) in use",
              "device_release_s", explain=lambda: f"{available(dev.resource, dev.node_id):g} shown free")
    return available(dev.resource, dev.node_id)


def device_returned(budget: Budget, clock: Clock, dev: DeviceNode, free_before: float, what: str) -> float:
    """The unit a killed or crashed holder held free again on its node (free units >= `free_before`
    + 1); returns the seconds the wait took.

    Whose time (the contract, docs/recovery.md): a dead worker's unit returning to Ray's pool is
    Ray's accounting; no code of the plugin runs on that path. So it is Ray's wait through the
    check's `budget` (Budget.released: bounded by device_release_s, stretched by the run's
    measurement, a fresh sample before blaming, recorded in metrics.waits, left out of the
    scenario's bound). A holder Ray still reports alive beyond the node's other holders is a leak
    (NotReleased); the host running out is "not judged: host". Which device comes back, and who
    gets it next, stay the plugin's (the judges)."""
    t0 = time.monotonic()
    budget.released(dev.resource, what, param="device_release_s", node_id=dev.node_id, units=free_before + 1,
                    clock=clock)
    return time.monotonic() - t0


class Started:
    """A wave's get (conformance.run.nodes.wave) awaiting new holders' first answers as Ray's
    machinery: a worker's start (Budget.started, bounded by actor_ready_s, stretched by the run's
    measurement, recorded in metrics.waits, left out of the scenario's bound). The answer is the
    holder's `state`, which reads its devices through the vendor's manager, so the wait runs the
    plugin's code (`runs_plugin_code`: a host that did its part leaves a hang to the plugin).
    `seconds`: what its waits took, for the judged figure that spans them (judges.left_to_ray).
    What the holders answer (which device, its variable, the views) stays the plugin's."""

    def __init__(self, budget: Budget, clock: Clock, param: str = "actor_ready_s") -> None:
        self.budget, self.clock, self.param = budget, clock, param
        self.seconds = 0.0

    def __call__(self, refs: list[Any], what: str) -> list[Any]:
        t0 = time.monotonic()
        try:
            return list(self.budget.started(self.clock, refs, what, param=self.param, runs_plugin_code=True))
        finally:
            self.seconds += time.monotonic() - t0


def census_of(got: list[dict[str, Any]], env_var: str | None) -> tuple[list[str], list[str]]:
    """Pure: what is wrong with the states of holders that together hold every device of one node
    (their views disagree or overlap), and the node's id set (the ids they were assigned)."""
    return audit(got, env_var), sorted({i for s in got for i in s["assigned"]})


def census(clock: Clock, dev: DeviceNode, got: list[dict[str, Any]]) -> tuple[list[dict[str, Any]], list[str]]:
    """The states of holders that together hold every device of the node (read already: a wave's
    share of one node), and the node's id set.

    Fails the scenario if the holders' views disagree or overlap: recovery cannot be judged on a
    node whose devices are not handed out correctly in the first place.
    """
    problems, universe = census_of(got, dev.env_var)
    if problems:
        raise clock.fail(f"before any failure, the holders' devices on node {dev.node_id[:8]} were already wrong: "
                         + "; ".join(problems[:4]))
    return got, universe


def starting(nodes: Sequence[DeviceNode]) -> str:
    """Pure: what the first wave of a device scenario waits for (its timeout names it)."""
    return f"{sum(d.count for d in nodes)} holders on {len(nodes)} node(s) to start"


def hold_every_device(start: Started, nodes: Sequence[DeviceNode], holders: Mapping[str, list[Any]],
                      by_node: Mapping[str, MutableMapping[str, Any]]
                      ) -> tuple[dict[str, list[dict[str, Any]]], dict[str, list[str]]]:
    """The start FR-001..FR-004 share: `holders` (node id -> the holders spawned there, which
    together hold every device of the node) answer in one wave (one wait of Ray's machinery:
    `start`, a `Started` on the scenario's clock), each node's census is taken (`census`: a node
    whose devices are wrong before any failure fails the scenario) and each node's record in
    `by_node` gets its `before` (holder_record of each holder) and `universe` (the node's ids).
    Returns (the holders' states, the node's ids), by node id."""
    got = wave(lambda nid: [h.state.remote() for h in holders[nid]], list(holders), start, starting(nodes))
    before: dict[str, list[dict[str, Any]]] = {}
    universe: dict[str, list[str]] = {}
    for d in nodes:
        before[d.node_id], universe[d.node_id] = census(start.clock, d, got[d.node_id])
        by_node[d.node_id].update(before=holder_records(before[d.node_id]), universe=universe[d.node_id])
    return before, universe


def _ended(ref: ObjectRef[Any], wait_s: float = 0.0) -> str | None:
    """How a call on a dying actor ended, waiting at most `wait_s` for it: the actor error's type,
    "returned normally", or None while it has not ended."""
    ray = _ray()
    from ray.exceptions import GetTimeoutError, RayActorError, WorkerCrashedError

    try:
        ray.get(ref, timeout=wait_s)
    except GetTimeoutError:
        return None
    except (RayActorError, WorkerCrashedError) as exc:
        return type(exc).__name__
    return "returned normally"


def wait_dead(clock: Clock, ref: ObjectRef[Any], what: str, bound_s: float | None = None) -> str:
    """A call on a dying actor must end in an actor error (not hang, not succeed)."""
    outcome: list[str] = []

    def probe() -> bool:
        got = _ended(ref, 0.5)   # knob: polling slice
        if got is not None:
            outcome.append(got)
        return got is not None

    clock.wait_for(probe, what, bound_s, poll_s=0.01)
    if outcome[0] == "returned normally":
        raise clock.fail(f"{what}: the call returned normally instead of failing with an actor error")
    return outcome[0]


def call_failed(budget: Budget, clock: Clock, ref: ObjectRef[Any], what: str) -> tuple[str, float]:
    """The call on a holder that died inside it (os._exit, no cleanup) ending in an actor error;
    returns (the error's type, the seconds the wait took).

    Whose time (the contract, docs/recovery.md): the process is gone before the call can answer,
    and what follows is Ray's alone: the raylet noticing its worker exit, the GCS marking the actor
    dead, the caller's core worker failing the call. No code of the plugin runs on that path. So it
    is Ray's wait through the check's `budget` (Budget.ray via groups.await_ray: bounded by
    device_release_s, stretched by the run's measurement, a fresh sample before blaming, recorded
    in metrics.waits, left out of the scenario's bound). The call returning normally instead is a
    finding whatever the host."""
    from conformance.areas.recovery.groups import await_ray

    t0 = time.monotonic()
    outcome = await_ray(budget, clock, lambda: _ended(ref), what, "device_release_s")
    took = time.monotonic() - t0
    if outcome == "returned normally":
        raise clock.fail(f"{what}: the call returned normally instead of failing with an actor error")
    return outcome, took


def settle(seconds: float) -> None:
    """A short pause where Ray documents asynchrony (e.g. ray.kill returns before the kill)."""
    time.sleep(seconds)
