"""Cluster shapes as data: the registry of the shapes checks name in the checklist (`cluster:`).

A check names its shape only through its checklist entry (tiers/checklist.yaml, read by
`shape_of`); each check's context (conformance.run.check_context) reads it and gets the cluster. A *kind* here is frozen data: what
the shape is for, when it runs (its rank), what happens to it with `--ray-address`, and a pure
function that resolves it against the run's manifest (and the vendor's manager, and the run's
record of Ray's machinery, for a shape whose nodes' settings stretch with it) into a concrete,
frozen `ClusterShape`. Two kinds whose concrete shapes have equal parameters are one
cluster: conformance.cluster.manager.ClusterManager starts it once, and the rank keeps them adjacent
in the run so that it does not have to start it twice.

Every decision "this shape needs nodes the suite starts itself" is made in one place,
`remote_reason`, from the kind's `on_remote` policy.
"""
from __future__ import annotations

import functools
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Callable, Iterable

from conformance.catalog.data import Checklist
from conformance.catalog.manifest import Manifest
from conformance.cluster.manager import SHARED, ClusterShape, complete
from conformance.timing.host_load import MachineryRecord

if TYPE_CHECKING:
    import pytest

# What a kind does on a `--ray-address` cluster (the suite cannot start, kill or configure its nodes):
VENDOR = "vendor"              # runs on the vendor's cluster as it is
FAULT_DRIVER = "fault-driver"  # runs there when a fault driver can kill and restart its nodes
OWN_NODES = "own-nodes"        # not applicable: only nodes the suite starts itself can give what it needs
REMOTE_POLICIES = (VENDOR, FAULT_DRIVER, OWN_NODES)

MARK = "cluster"              # the mark that once named a test's shape: refused now (mark_problems)
NO_REMOTE_TAIL = "needs nodes the suite starts itself (not possible with --ray-address)"


# (manifest, manager, the run's machinery record) -> the concrete shape
Resolver = Callable[[Manifest, "type | None", MachineryRecord], ClusterShape]


class ShapeNotApplicable(Exception):
    """The shape cannot exist in this run (the manifest, the manager or --ray-address rule it out):
    the check that names it is not applicable, with this message as the reason."""


class UnknownShape(KeyError):
    """A shape the registry does not hold."""

    def __str__(self) -> str:
        return str(self.args[0])


@dataclass(frozen=True)
class ShapeKind:
    """One registered shape: frozen data plus the pure function that makes it concrete."""

    name: str
    rank: int                                  # run order; kinds that resolve alike sit side by side
    summary: str                               # what the shape is for (docs, errors)
    resolve: Resolver                          # (manifest, manager, machinery) -> concrete shape
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
def named_shape(name: str, shape: ClusterShape, manifest: Manifest) -> ClusterShape:
    from dataclasses import replace
    return complete(replace(shape, name=name), manifest)


def manifest_nodes(name: str) -> Resolver:
    """The manifest's own nodes, as they are."""
    return lambda manifest, manager, machinery: named_shape(name, SHARED, manifest)


# ---------------------------------------------------------------------------------------------- the registry
CORE_KINDS: tuple[ShapeKind, ...] = (
    ShapeKind("shared", 10, "the manifest's own cluster, shared by every check that does not disturb it",
              manifest_nodes("shared")),
)


def all_kinds() -> tuple[ShapeKind, ...]:
    """The core shapes and every area's (each area names the module holding its KINDS)."""
    from conformance.areas import AREAS
    from conformance.catalog.area import load_ref

    kinds = list(CORE_KINDS)
    for area in AREAS:
        if area.shapes:
            kinds += load_ref(area.shapes + ":KINDS")
    return tuple(kinds)


@functools.cache
def registry() -> dict[str, ShapeKind]:
    """name -> ShapeKind, built on first use: the areas' shape modules import cluster code, which
    imports this module, so reading them at import time would loop."""
    kinds = all_kinds()
    names = [k.name for k in kinds]
    dup = sorted({n for n in names if names.count(n) > 1})
    if dup:
        raise ValueError(f"cluster shapes declared twice: {', '.join(dup)}")
    return {k.name: k for k in kinds}


def kind(name: str) -> ShapeKind:
    try:
        return registry()[name]
    except KeyError:
        raise UnknownShape(f"unknown cluster shape {name!r} (known: {', '.join(registry())}; "
                           "conformance/cluster/shapes.py and the areas' shapes modules)") from None


def resolve(name: str, manifest: Manifest, manager: "type | None", machinery: MachineryRecord) -> ClusterShape:
    """The concrete shape of `name` for this manifest and the run whose record `machinery` is
    (ShapeNotApplicable when it cannot exist)."""
    return kind(name).resolve(manifest, manager, machinery)


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


def for_run(name: str, manifest: Manifest, manager: "type | None", ray_address: str | None, machinery: MachineryRecord,
            fault_driver: Callable[[], Any] = lambda: None) -> ClusterShape:
    """The shape a check of shape `name` gets in this run (`machinery`: its record): resolved against
    the manifest, or, on a --ray-address cluster, the vendor's cluster as it is (ShapeNotApplicable
    when it cannot run)."""
    resolved = resolve(name, manifest, manager, machinery)     # the manifest can rule a shape out everywhere
    if not ray_address:
        return resolved
    reason = remote_reason(name, fault_driver=kind(name).on_remote == FAULT_DRIVER and fault_driver() is not None)
    if reason is not None:
        raise ShapeNotApplicable(reason)
    return complete(SHARED, manifest)


def first_cluster(name: str, resolved: ClusterShape, manifest: Manifest, manager: "type | None",
                  ray_address: str | None, machinery: MachineryRecord,
                  fault_driver: Callable[[], Any] = lambda: None) -> ClusterShape:
    """The shape whose cluster a check of shape `name` finds when it starts: `resolved` (for_run's
    answer), or the kind's `starts_from` shape when the check starts its own afresh."""
    first = kind(name).starts_from
    return for_run(first, manifest, manager, ray_address, machinery, fault_driver) if first else resolved


def shape_of(check_id: str | None, checklist: Checklist) -> str | None:
    """The shape the checklist names for the check `check_id` (its `cluster:`; None: no such check,
    or it needs no cluster of the run). The one reader of a check's shape in a run: the hooks that
    start the shared cluster, the run order, the shards and each check's context."""
    check = checklist.by_id().get(check_id) if check_id is not None else None
    return check.shape() if check is not None else None


def shapes_needed(check_ids: Iterable[str | None], checklist: Checklist) -> set[str]:
    """The shapes the checks `check_ids` run on (empty: none of them needs a cluster of the run)."""
    return {name for name in (shape_of(cid, checklist) for cid in check_ids) if name is not None}


def mark_problems(items: Iterable[pytest.Item]) -> list[str]:
    """Registry lint: a test that still carries a `cluster` mark (the suite's shapes were marks
    once, and a vendor's own test may carry one) is refused rather than silently run on the shape
    the checklist names."""
    return [f"{item.nodeid}: @pytest.mark.cluster is not read: a check's cluster shape is its checklist entry's "
            "`cluster` (tiers/checklist.yaml); drop the mark" for item in items if item.get_closest_marker(MARK)]


def run_order(name: str | None) -> tuple[int, str]:
    """Sort key of a test whose check runs on shape `name`: no cluster first, then by the rank of
    its shape (stable within one)."""
    if name is None:
        return (0, "")
    k = registry().get(name)
    return (k.rank if k is not None else max(x.rank for x in registry().values()) + 1, name)
