"""Starting endpoint actors: placement, collective groups, health, teardown (every RDT check).

Endpoints are expensive to start (a worker process that imports torch: ~1-2 s each here), so a
check module keeps one pool and reuses it across its checks. A pool is rebuilt when the
cluster it lives on was replaced (another check needed another cluster shape) or when an
endpoint stopped answering (Ray kills both actors after a failed transfer on a transport that
cannot abort, e.g. GLOO; a broken transport can also wedge a receiver).

Endpoints ask for no CPU (they must not starve the checks' own tasks on small nodes) and for
one accelerator unit each only when the transport moves device memory, so the tensors can be
created on a device Ray assigned to them. Every actor start waits until each actor answers, as
a wait on Ray's machinery (conformance.run.machinery: stretched by the host's measured worker
start, the host's failure when it runs out): the harness's own guard (`harness_ready`, with the
run's record of Ray's machinery), or a check's; the caller always names it (`ready`).
"""
from __future__ import annotations

import itertools
import os
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Callable

from conformance.handles import Actor
from conformance.rdt.device import is_host
from conformance.rdt.registration import TransportSetup, transports_registered
from conformance.run.machinery import ACTOR_START_S, await_actors
from conformance.timing.timeouts import CheckTimeout

if TYPE_CHECKING:
    from ray.experimental.collective.communicator import CommunicatorHandle

    from conformance.timing.host_load import MachineryRecord

HEALTH_TIMEOUT_S = 15.0  # knob: hang guard of endpoint health calls
START_TIMEOUT_S = ACTOR_START_S   # the one hang guard of a new actor's start (conformance.run.machinery)
# Ray's remote classes of the endpoint actors, made once per process: (class, tensor transport on).
_remote: dict[tuple[type, bool], Any] = {}
_group_ids = itertools.count()
Ready = Callable[[list[Any], str], Any]   # (info refs, what is awaited) -> the infos, or raises at its bound


def harness_ready(machinery: MachineryRecord) -> Ready:
    """The harness's own `ready`: the actors' first answers within START_TIMEOUT_S, awaited as Ray's
    machinery, stretched by `machinery` (the record of the run, or of the command, that starts them)."""
    return lambda refs, what: await_actors(refs, START_TIMEOUT_S, what, machinery=machinery)


def endpoint_class(cls: type | None = None, *, tensor_transport: bool = True) -> Any:
    """The remote class of an endpoint actor (conformance.rdt.endpoint.Endpoint by default, or a
    subclass a check module adds); `tensor_transport=False` for a receiver created without RDT."""
    import ray

    from conformance.rdt.endpoint import Endpoint
    key = (cls or Endpoint, tensor_transport)
    if key not in _remote:
        remote: Any = ray.remote   # its overloads predate enable_tensor_transport
        _remote[key] = remote(enable_tensor_transport=True)(key[0]) if tensor_transport else remote(key[0])
    return _remote[key]


def alive_nodes(resource: str | None = None) -> list[dict[str, Any]]:
    """Alive nodes (with at least one unit of `resource` when given), head node first."""
    import ray

    nodes = [n for n in ray.nodes() if n.get("Alive")]
    if resource:
        nodes = [n for n in nodes if n.get("Resources", {}).get(resource, 0) >= 1]
    return sorted(nodes, key=lambda n: (not n.get("Resources", {}).get("node:__internal_head__"), n["NodeID"]))


@dataclass
class Endpoints:
    """A set of endpoint actors (one collective group over all of them when the transport needs one)."""

    actors: list[Any]
    infos: list[dict[str, Any]]
    device: str
    group: Any = None
    notes: list[str] = field(default_factory=list)

    def __len__(self) -> int:
        return len(self.actors)

    def node_of(self, i: int) -> str:
        node_id: str = self.infos[i]["node_id"]
        return node_id

    def pid_of(self, i: int) -> int:
        pid: int = self.infos[i]["pid"]
        return pid

    def healthy(self, timeout_s: float = HEALTH_TIMEOUT_S) -> bool:
        import ray

        try:
            ray.get([a.info.remote() for a in self.actors], timeout=timeout_s)
            return True
        except Exception:  # noqa: BLE001 - any failure means "rebuild"
            return False

    def shutdown(self) -> None:
        import ray

        destroy_group(self.group)
        self.group = None
        for a in self.actors:
            try:
                ray.kill(a)
            except Exception:  # noqa: BLE001
                pass
        self.actors = []


def start_endpoints(setup: TransportSetup, resource: str, *, device: str, nodes: list[str | None],
                    units: bool | None = None, cls: type | None = None, tensor_transport: bool = True,
                    group: bool = True, ready: Ready, what: str = "endpoints to start",
                    registered: Ready | None = None, init_args: tuple[Any, ...] = (), **options: Any) -> Endpoints:
    """One endpoint per entry of `nodes` (a node id to pin it to, or None for anywhere), each
    answering before this returns, in one collective group when the transport needs one (and
    `group`).

    Each holds one unit of the accelerator resource when `units` (default: when the tensors live
    on a device, so Ray assigns one to it). `ready` waits for their first answers (`harness_ready`:
    within START_TIMEOUT_S; a check's budget: `ctx.budget.actors`); `init_args` follow the device in each actor's constructor (a subclass's
    own); `options` go to Ray's actor options (max_restarts, a scheduling strategy, ...). On any
    failure the endpoints started are stopped.

    `registered`: Ray's registration of this process's transports on each endpoint
    (registration.transports_registered: started by Ray at an endpoint's creation, or by it for
    one created without the transport) is awaited by it once they answered, so the first transfer
    does not block on it; it imports the transport's module, the plugin's code, so the caller's
    wait says so.
    """
    from ray.util.scheduling_strategies import NodeAffinitySchedulingStrategy

    remote_cls = endpoint_class(cls, tensor_transport=tensor_transport)
    actors = []
    for node in nodes:
        opts: dict[str, Any] = {"num_cpus": 0}
        if units if units is not None else not is_host(device):
            from conformance.cluster.requests import demand
            opts.update(demand(resource, 1))
        if node is not None:
            opts["scheduling_strategy"] = NodeAffinitySchedulingStrategy(node_id=node, soft=False)
        opts.update(options)
        actors.append(remote_cls.options(**opts).remote(device, *init_args))
    eps = Endpoints(actors=actors, infos=[], device=device)
    try:
        answers = [a.info.remote() for a in actors]
        registering = [r for r in map(transports_registered, actors) if r is not None] if registered is not None else []
        eps.infos = ready(answers, what)
        if registering and registered is not None:
            _await_registration(registered, registering)
        if group and tensor_transport:
            eps.group = make_group(setup, actors)
    except BaseException:
        eps.shutdown()
        raise
    return eps


def _await_registration(registered: Ready, refs: list[Any]) -> None:
    """Ray's registrations awaited; one that raised is left to the first transfer, which meets
    Ray's error there as it would without this wait (the checks judge that error where it lands)."""
    from ray.exceptions import RayError

    try:
        registered(refs, f"Ray's registration of the transports on {len(refs)} actor(s)")
    except RayError as exc:
        if isinstance(exc, TimeoutError):
            raise


def pair_node(setup: TransportSetup, resource: str, device: str | None = None) -> str:
    """The node a scenario's actors share: the first offering two units when the payloads live on
    a device (`device`, default the transport's primary one), else the driver's."""
    import ray

    if not is_host(device or setup.device):
        for n in ray.nodes():
            if n.get("Alive") and n.get("Resources", {}).get(resource, 0) >= 2:  # knob: a pair needs 2 devices
                return str(n["NodeID"])
    return str(ray.get_runtime_context().get_node_id())


def make_group(setup: TransportSetup, actors: list[Any]) -> Any:
    """A collective group over `actors` when the transport needs one (GLOO/NCCL) and there are two
    or more, else None. A fresh name each time: Ray keeps rendezvous data per name, and an actor
    joins one group per backend, so each batch of new actors forms its own."""
    backend = setup.collective_backend
    if not backend or len(actors) < 2:
        return None
    from ray.experimental.collective import create_collective_group
    return create_collective_group(actors, backend=backend,
                                   name=f"conformance-{backend}-{os.getpid()}-{next(_group_ids)}")


def destroy_group(group: CommunicatorHandle | None) -> None:
    """Destroy a collective group (None: nothing); never raises but the hard timeout."""
    if group is None:
        return
    try:
        from ray.experimental.collective import destroy_collective_group
        destroy_collective_group(group)
    except CheckTimeout:
        raise
    except Exception:  # noqa: BLE001 - Ray destroys groups itself after failed transfers
        pass


def alive(actor: Actor, timeout_s: float = 5.0) -> bool:  # knob: liveness probe of one call
    """Whether the actor answers within timeout_s (dead, restarting or unreachable: False)."""
    from conformance.timing.waits import bounded_get
    try:
        bounded_get(actor.info.remote(), timeout_s, "endpoint info")
        return True
    except CheckTimeout:
        raise
    except Exception:  # noqa: BLE001 - dead, restarting or unreachable
        return False


class PoolCache:
    """At most one live Endpoints per key (e.g. "intra-node"), rebuilt when stale."""

    def __init__(self) -> None:
        self._pools: dict[str, tuple[object, Endpoints]] = {}

    def get(self, key: str, cluster: object, factory: Callable[[], Endpoints]) -> Endpoints:
        entry = self._pools.get(key)
        if entry is not None:
            owner, eps = entry
            if owner is cluster and len(eps) and eps.healthy():
                return eps
            self.drop(key)
        eps = factory()
        self._pools[key] = (cluster, eps)
        return eps

    def drop(self, key: str) -> None:
        entry = self._pools.pop(key, None)
        if entry is not None:
            owner, eps = entry
            import ray
            if ray.is_initialized():
                eps.shutdown()

    def close(self) -> None:
        for key in list(self._pools):
            self.drop(key)


def device_endpoint_nodes(resource: str, device: str, cap: int = 8) -> tuple[list[str | None], bool]:
    """Nodes for one endpoint per accelerator unit, round-robin over nodes, at most `cap`.

    Returns (node of each endpoint, whether each endpoint holds a unit). Without accelerator
    units in the cluster, one endpoint per node (not holding units) when the tensors are on
    the host; none when they must be on a device.
    """
    per_node = [[n["NodeID"]] * int(n.get("Resources", {}).get(resource, 0)) for n in alive_nodes()]
    with_units = any(per_node)
    if not with_units:
        if not is_host(device):
            return [], True
        per_node = [[n["NodeID"]] for n in alive_nodes()]
    nodes: list[str | None] = []
    while any(per_node) and len(nodes) < cap:
        for lst in per_node:
            if lst and len(nodes) < cap:
                nodes.append(lst.pop())
    return nodes, with_units
