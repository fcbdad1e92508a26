"""Cluster shapes as data: the registry of the shapes checks name in `@pytest.mark.cluster(...)`.

A check names its shape only through its mark; the `cluster_shape` / `cluster` fixtures
(conformance.run.fixtures) read the mark and get the cluster. A *kind* here is frozen data: what
the shape is for, when it runs (its rank), what happens to it with `--ray-address`, and a pure
function that resolves it against the run's manifest (and the vendor's manager) into a
concrete, frozen `ClusterShape`. Two kinds whose concrete shapes have equal parameters are one
cluster: conformance.cluster.manager.ClusterManager starts it once, and the rank keeps them adjacent
in the run so that it does not have to start it twice.

Every decision "this shape needs nodes the suite starts itself" is made in one place,
`remote_reason`, from the kind's `on_remote` policy.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable, Iterable

from conformance.cluster.manager import SHARED, ClusterShape, complete

# What a kind does on a `--ray-address` cluster (the suite cannot start, kill or configure its nodes):
VENDOR = "vendor"              # runs on the vendor's cluster as it is
FAULT_DRIVER = "fault-driver"  # runs there when a fault driver can kill and restart its nodes
OWN_NODES = "own-nodes"        # not applicable: only nodes the suite starts itself can give what it needs
REMOTE_POLICIES = (VENDOR, FAULT_DRIVER, OWN_NODES)

MARK = "cluster"
NO_REMOTE_TAIL = "needs nodes the suite starts itself (not possible with --ray-address)"


class ShapeNotApplicable(Exception):
    """The shape cannot exist in this run (the manifest, the manager or --ray-address rule it out):
    the check that names it is not applicable, with this message as the reason."""


class UnknownShape(KeyError):
    """A mark names a shape the registry does not hold."""

    def __str__(self) -> str:
        return str(self.args[0])


@dataclass(frozen=True)
class ShapeKind:
    """One registered shape: frozen data plus the pure function that makes it concrete."""

    name: str
    rank: int                                  # run order; kinds that resolve alike sit side by side
    summary: str                               # what the shape is for (docs, errors)
    resolve: Callable[[Any, "type | None"], ClusterShape]   # (manifest, manager) -> concrete shape
    on_remote: str = VENDOR
    needs: str = ""                            # OWN_NODES/FAULT_DRIVER: what only own nodes give
    starts_from: str = ""                      # a check that starts this shape afresh itself finds
                                               # this shape's cluster first (FR-006)

    def __post_init__(self) -> None:
        if self.on_remote not in REMOTE_POLICIES:
            raise ValueError(f"shape {self.name!r}: on_remote must be one of {REMOTE_POLICIES}")
        if self.on_remote != VENDOR and not self.needs:
            raise ValueError(f"shape {self.name!r}: say what it needs that only nodes the suite starts give")


# ---------------------------------------------------------------------------------------------- resolvers
def _named(name: str, shape: ClusterShape, manifest: Any) -> ClusterShape:
    from dataclasses import replace
    return complete(replace(shape, name=name), manifest)


def _manifest_nodes(name: str) -> Callable[[Any, "type | None"], ClusterShape]:
    """The manifest's own nodes, as they are."""
    return lambda manifest, manager: _named(name, SHARED, manifest)


def _short_fetch_timeout(name: str) -> Callable[[Any, "type | None"], ClusterShape]:
    """The manifest's nodes with Ray's RDT fetch timeout lowered in every node (FR-012..016)."""
    def resolve(manifest: Any, manager: "type | None") -> ClusterShape:
        from conformance.areas.recovery.transfers import transfer_shape
        return _named(name, transfer_shape(manifest), manifest)
    return resolve


def _fresh_start(manifest: Any, manager: "type | None") -> ClusterShape:
    """FR-006's fresh start: the manifest's nodes again. With a transport declared, they start
    with the recovery-transfers node environment, which differs only in Ray's RDT fetch timeout
    (no device detection reads it): the transfer checks that follow then run on this cluster
    instead of starting their own."""
    resolve = _short_fetch_timeout if getattr(manifest, "transport", None) else _manifest_nodes
    return resolve("recovery-restart")(manifest, manager)


def _recovery_nodes(manifest: Any, manager: "type | None") -> ClusterShape:
    from conformance.areas.recovery.nodes import node_shape
    return complete(node_shape(manifest, manager), manifest)


def _host_without_device(manifest: Any, manager: "type | None") -> ClusterShape:
    overlay = (manifest.accelerator.get("hosts") or {}).get("without_device")
    if overlay is None:
        raise ShapeNotApplicable("the manifest declares no accelerator.hosts.without_device (how a host without "
                                 "the device or its driver looks)")
    head_env = (manifest.cluster.get("node_env") or [{}])[0]
    return complete(ClusterShape(name="host-without-device", nodes=2,  # knob: structure: a head + the host
                                 node_env=[dict(head_env), dict(overlay)]), manifest)


PRESET_IDS = ("1", "2")   # knob: structure: two devices pre-selected, a third (id 0) stays hidden


def _preset_visible(manifest: Any, manager: "type | None") -> ClusterShape:
    env_var = manager.get_visible_accelerator_ids_env_var() if manager is not None else None
    if env_var is None:
        raise ShapeNotApplicable("the manager names no visible-devices variable")
    return complete(ClusterShape(name="preset-visible", nodes=1, node_env=[{env_var: ",".join(PRESET_IDS)}]),
                    manifest)


# ---------------------------------------------------------------------------------------------- the registry
KINDS: tuple[ShapeKind, ...] = (
    ShapeKind("shared", 10, "the manifest's own cluster, shared by every check that does not disturb it",
              _manifest_nodes("shared")),
    ShapeKind("recovery-devices", 20, "the manifest's nodes as they are; device scenarios kill only actors and "
              "tasks they created, after the shared checks (so a leak cannot spoil them)",
              _manifest_nodes("recovery-devices")),
    ShapeKind("recovery-restart", 30, "the manifest's nodes, shut down and started again in this process "
              "(FR-006); with a transport, started as the recovery-transfers nodes", _fresh_start, OWN_NODES,
              "shuts the cluster down and starts a fresh one in this process", starts_from="recovery-devices"),
    ShapeKind("recovery-transfers", 40, "the manifest's nodes with RAY_rdt_fetch_fail_timeout_milliseconds "
              "lowered in every node (on a --ray-address cluster: its own timeout)",
              _short_fetch_timeout("recovery-transfers")),
    ShapeKind("recovery-fetch-timeout", 41, "the recovery-transfers nodes, for a check that needs their lowered "
              "fetch timeout (FR-014)", _short_fetch_timeout("recovery-fetch-timeout"), OWN_NODES,
              "needs RAY_rdt_fetch_fail_timeout_milliseconds lowered on every node"),
    ShapeKind("recovery-nodes", 50, "head + pool nodes b and c with role labels and fast health checks; "
              "checks kill node b", _recovery_nodes, FAULT_DRIVER, "kills and restarts nodes"),
    ShapeKind("host-without-device", 60, "a head + a node that looks like the manifest's host without the device "
              "(on a --ray-address cluster: its own nodes without devices)", _host_without_device),
    ShapeKind("preset-visible", 70, "one node started with the visible-devices variable preset to two ids",
              _preset_visible, OWN_NODES, "presets the visible-devices variable of a node"),
)
REGISTRY: dict[str, ShapeKind] = {k.name: k for k in KINDS}


def kind(name: str) -> ShapeKind:
    try:
        return REGISTRY[name]
    except KeyError:
        raise UnknownShape(f"unknown cluster shape {name!r} (known: {', '.join(REGISTRY)}; "
                           "conformance/cluster/shapes.py)") from None


def resolve(name: str, manifest: Any, manager: "type | None" = None) -> ClusterShape:
    """The concrete shape of `name` for this manifest (ShapeNotApplicable when it cannot exist)."""
    return kind(name).resolve(manifest, manager)


def remote_reason(name: str, *, fault_driver: bool = False) -> str | None:
    """Why a check on shape `name` is not applicable on a --ray-address cluster; None when it runs.

    The one place that decides "needs nodes the suite starts itself".
    """
    k = kind(name)
    if k.on_remote == VENDOR or (k.on_remote == FAULT_DRIVER and fault_driver):
        return None
    if k.on_remote == FAULT_DRIVER:
        return (f"{k.needs}: needs simulated nodes the suite starts itself, or a fault driver for the "
                "--conformance-ray-address cluster (--fault-driver; docs/recovery.md)")
    return f"{k.needs}: {NO_REMOTE_TAIL}"


def for_run(name: str, manifest: Any, manager: "type | None", ray_address: str | None,
            fault_driver: Callable[[], Any] = lambda: None) -> ClusterShape:
    """The shape a check marked `name` gets in this run: resolved against the manifest, or, on a
    --ray-address cluster, the vendor's cluster as it is (ShapeNotApplicable when it cannot run)."""
    resolved = resolve(name, manifest, manager)     # the manifest can rule a shape out everywhere
    if not ray_address:
        return resolved
    reason = remote_reason(name, fault_driver=kind(name).on_remote == FAULT_DRIVER and fault_driver() is not None)
    if reason is not None:
        raise ShapeNotApplicable(reason)
    return complete(SHARED, manifest)


def first_cluster(name: str, resolved: ClusterShape, manifest: Any, manager: "type | None",
                  ray_address: str | None, fault_driver: Callable[[], Any] = lambda: None) -> ClusterShape:
    """The shape whose cluster a check marked `name` finds when it starts: `resolved` (for_run's
    answer), or the kind's `starts_from` shape when the check starts its own afresh."""
    first = kind(name).starts_from
    return for_run(first, manifest, manager, ray_address, fault_driver) if first else resolved


def mark_name(item: Any) -> str | None:
    """The shape a test's mark names (None: the test needs no cluster of its own)."""
    mark = item.get_closest_marker(MARK)
    return str(mark.args[0]) if mark is not None and mark.args else None


def mark_problems(items: Iterable[Any]) -> list[str]:
    """Registry lint: every cluster mark names exactly one registered shape."""
    problems = []
    for item in items:
        mark = item.get_closest_marker(MARK)
        if mark is None:
            continue
        if len(mark.args) != 1 or mark.kwargs:
            problems.append(f"{item.nodeid}: @pytest.mark.cluster takes exactly one shape name")
        elif mark.args[0] not in REGISTRY:
            problems.append(f"{item.nodeid}: {mark.args[0]!r} is not a registered cluster shape "
                            f"(conformance/cluster/shapes.py: {', '.join(REGISTRY)})")
    return problems


def run_order(item: Any) -> tuple[int, str]:
    """Sort key of a test: no cluster first, then by the rank of its shape (stable within one)."""
    name = mark_name(item)
    if name is None:
        return (0, "")
    k = REGISTRY.get(name)
    return (k.rank if k is not None else max(x.rank for x in KINDS) + 1, name)
