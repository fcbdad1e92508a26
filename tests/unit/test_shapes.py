"""The cluster-shape registry (conformance.cluster.shapes): resolution against manifests, which shapes
share a cluster, the --ray-address rule, the checklist's shapes, and the cluster manager's reuse. No Ray."""
from __future__ import annotations

import dataclasses
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

from conformance.areas.device import shapes as device_shapes
from conformance.catalog.clusters import NO_CLUSTER
from conformance.catalog.data import load_checklist
from conformance.catalog.manifest import Manifest, load_manifest
from conformance.cluster import manager as cluster_mod
from conformance.cluster import shapes
from conformance.cluster.manager import SHARED, ClusterHandle, ClusterManager, ClusterShape, complete, same_cluster
from conformance.simulated.manager import SimAccManager
from conformance.timing.host_load import MachineryRecord

CHECKS = Path(__file__).resolve().parents[2] / "conformance" / "checks"
MANIFESTS = ("builtin:simulated", "builtin:simulated-2node")


def resolved(manifest_ref: str) -> dict[str, ClusterShape]:
    m = load_manifest(manifest_ref)
    return {k.name: shapes.resolve(k.name, m, SimAccManager, MachineryRecord()) for k in shapes.all_kinds()}


@pytest.mark.parametrize("ref", MANIFESTS)
def test_every_kind_resolves_to_a_complete_frozen_shape(ref: str) -> None:
    for name, shape in resolved(ref).items():
        assert shape.name == name
        assert isinstance(shape.nodes, int) and shape.nodes >= 1
        assert shape.node_env is not None and len(shape.node_env) == shape.nodes
        with pytest.raises(dataclasses.FrozenInstanceError):
            shape.nodes = 5  # type: ignore[misc]
        with pytest.raises(TypeError):
            shape.node_env[0]["X"] = "1"  # type: ignore[index]


@pytest.mark.parametrize("ref", MANIFESTS)
def test_shapes_with_equal_parameters_share_a_cluster(ref: str) -> None:
    r = resolved(ref)
    groups: dict[int, set[str]] = {}
    for name, shape in r.items():
        key = next((i for i, other in enumerate(r.values()) if same_cluster(other, shape)), -1)
        groups.setdefault(key, set()).add(name)
    together = sorted(sorted(g) for g in groups.values())
    if load_manifest(ref).view.transport is not None:   # FR-006's fresh start is the cluster the transfer checks run on
        assert ["recovery-devices", "shared"] in together
        assert ["recovery-fetch-timeout", "recovery-restart", "recovery-transfers"] in together
    else:
        assert ["recovery-devices", "recovery-restart", "shared"] in together
        assert ["recovery-fetch-timeout", "recovery-transfers"] in together
    assert ["recovery-nodes"] in together and ["host-without-device"] in together and ["preset-visible"] in together


@pytest.mark.parametrize("ref", MANIFESTS)
def test_the_runs_nodes_are_read_on_any_cluster_of_the_manifests_own_nodes(ref: str) -> None:
    """environment.devices is read on the first cluster of the manifest's nodes as they are (session.cluster):
    the shared one, or recovery-devices in a recovery-only run; never on a shape that changes them."""
    m = load_manifest(ref)
    own = {name for name, shape in resolved(ref).items() if cluster_mod.manifests_own(shape, m)}
    assert {"shared", "recovery-devices"} <= own
    assert not own & {"recovery-nodes", "host-without-device", "preset-visible", "recovery-transfers"}
    assert cluster_mod.manifests_own(SHARED, m)   # the preflight's unresolved SHARED too


@pytest.mark.parametrize("ref", MANIFESTS)
def test_rank_keeps_shapes_of_one_cluster_side_by_side(ref: str) -> None:
    r = resolved(ref)
    ordered = [r[k.name] for k in sorted(shapes.all_kinds(), key=lambda k: k.rank)]
    seen: list[ClusterShape] = []
    for prev, shape in zip([None] + ordered, ordered):
        if prev is not None and same_cluster(prev, shape):
            continue
        assert not any(same_cluster(s, shape) for s in seen), f"{shape.name} would start its cluster twice"
        seen.append(shape)
    assert len({k.rank for k in shapes.all_kinds()}) == len(shapes.all_kinds())


def test_a_shape_started_afresh_starts_from_an_earlier_one() -> None:
    m = load_manifest("builtin:simulated-2node")
    for k in shapes.all_kinds():
        if k.starts_from:
            assert shapes.kind(k.starts_from).rank < k.rank
    restart = shapes.resolve("recovery-restart", m, SimAccManager, MachineryRecord())
    first = shapes.first_cluster("recovery-restart", restart, m, SimAccManager, None, MachineryRecord())
    assert first.name == "recovery-devices" and same_cluster(first, shapes.resolve("shared", m, None, MachineryRecord()))
    assert shapes.first_cluster("recovery-nodes", restart, m, SimAccManager, None, MachineryRecord()) is restart


def test_manifest_dependent_shapes() -> None:
    two = load_manifest("builtin:simulated-2node")
    transfers = shapes.resolve("recovery-transfers", two, SimAccManager, MachineryRecord())
    assert transfers.nodes == 2
    for i, env in enumerate(two.view.cluster.node_env):
        assert transfers.env(i) == {**env, "RAY_rdt_fetch_fail_timeout_milliseconds": "5000"}
    host = shapes.resolve("host-without-device", two, SimAccManager, MachineryRecord())
    assert host.env(0) == two.view.cluster.node_env[0] and host.env(1) == {"SIMACC_DRIVER": "absent"}
    preset = shapes.resolve("preset-visible", two, SimAccManager, MachineryRecord())
    assert preset.nodes == 1 and preset.env(0) == {"SIMACC_VISIBLE_DEVICES": ",".join(device_shapes.PRESET_IDS)}
    nodes = shapes.resolve("recovery-nodes", two, SimAccManager, MachineryRecord())
    assert nodes.nodes == 3 and nodes.system_config["health_check_period_ms"] > 0
    assert shapes.resolve("shared", two, None, MachineryRecord()) == complete(SHARED, two)


def test_shapes_a_manifest_or_manager_rules_out_are_not_applicable() -> None:
    m = load_manifest("builtin:simulated")
    accelerator = {k: v for k, v in m.data["accelerator"].items() if k != "hosts"}
    bare = Manifest(data={**m.data, "accelerator": accelerator}, path=m.path, sha256=m.sha256)
    with pytest.raises(shapes.ShapeNotApplicable, match="accelerator.hosts.without_device"):
        shapes.resolve("host-without-device", bare, SimAccManager, MachineryRecord())
    no_var = SimpleNamespace(get_visible_accelerator_ids_env_var=lambda: None)
    with pytest.raises(shapes.ShapeNotApplicable, match="no visible-devices variable"):
        shapes.resolve("preset-visible", m, no_var, MachineryRecord())  # type: ignore[arg-type]


def test_remote_reason_comes_from_the_kind() -> None:
    for k in shapes.all_kinds():
        reason = shapes.remote_reason(k.name, fault_driver=False)
        if k.on_remote == shapes.VENDOR:
            assert reason is None
        else:
            assert reason and reason.startswith(k.needs) and "suite starts itself" in reason
    assert shapes.remote_reason("recovery-nodes", fault_driver=True) is None
    assert shapes.remote_reason("recovery-restart", fault_driver=True) is not None
    with pytest.raises(shapes.UnknownShape, match="unknown cluster shape 'nope'"):
        shapes.remote_reason("nope")


def test_for_run_on_a_remote_cluster() -> None:
    m = load_manifest("builtin:simulated-2node")
    addr = "10.0.0.1:6379"
    assert shapes.for_run("recovery-transfers", m, SimAccManager, addr, MachineryRecord()) == complete(SHARED, m)
    assert shapes.for_run("recovery-transfers", m, SimAccManager, None, MachineryRecord()).name == "recovery-transfers"
    with pytest.raises(shapes.ShapeNotApplicable, match="lowered on every node: needs nodes the suite starts"):
        shapes.for_run("recovery-fetch-timeout", m, SimAccManager, addr, MachineryRecord())
    with pytest.raises(shapes.ShapeNotApplicable, match="or a fault driver"):
        shapes.for_run("recovery-nodes", m, SimAccManager, addr, MachineryRecord(), fault_driver=lambda: None)
    assert shapes.for_run("recovery-nodes", m, SimAccManager, addr, MachineryRecord(), fault_driver=lambda: object()).name == "shared"


class Item:
    def __init__(self, nodeid: str, *args: Any, **kwargs: Any) -> None:
        self.nodeid = nodeid
        self.mark = SimpleNamespace(args=args, kwargs=kwargs) if args or kwargs else None

    def get_closest_marker(self, name: str) -> Any:
        return self.mark if name == shapes.MARK else None


def test_the_run_order_follows_the_checklists_shapes() -> None:
    checklist = load_checklist()
    ids = ["FR-007", "DP-001", "DP-006", "FR-001", "TL-001"]
    assert [shapes.shape_of(c, checklist) for c in ids] == ["recovery-nodes", None, "shared", "recovery-devices", "shared"]
    ordered = sorted(ids, key=lambda c: shapes.run_order(shapes.shape_of(c, checklist)))
    assert ordered == ["DP-001", "DP-006", "TL-001", "FR-001", "FR-007"]


def test_a_cluster_mark_is_refused() -> None:
    """The shape is data (the checklist's `cluster:`): a test that still carries the mark is refused."""
    assert shapes.mark_problems([Item("t::a")]) == []
    bad = shapes.mark_problems([Item("t::x", "recovery-nodes"), Item("t::y")])
    assert len(bad) == 1 and bad[0].startswith("t::x: @pytest.mark.cluster is not read")


def test_the_checklist_names_registered_shapes_only() -> None:
    named = {c.cluster for c in load_checklist().checks}
    assert named == set(shapes.registry()) | {NO_CLUSTER}, "a registered shape no check uses, or an unknown one"
    for path in CHECKS.rglob("test_*.py"):
        text = path.read_text()
        assert "ClusterShape(" not in text, f"{path.name} builds a shape: name it in the checklist"
        assert "mark.cluster" not in text, f"{path.name} marks a shape: name it in the checklist"


# ---------------------------------------------------------------------------------------------- reuse
@pytest.fixture
def fake_starts(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    started: list[str] = []

    def start(manifest: Any, shape: ClusterShape, ray_address: Any = None, manager: Any = None) -> ClusterHandle:
        started.append(shape.name)
        return ClusterHandle(shape, "simulated", "addr", shape.nodes or 0, started_s=0.5)

    monkeypatch.setattr(cluster_mod, "start_cluster", start)
    monkeypatch.setattr(cluster_mod, "stop_cluster", lambda handle: None)
    return started


def test_manager_reuses_a_cluster_of_equal_parameters(fake_starts: list[str]) -> None:
    m = load_manifest("builtin:simulated-2node")
    mgr = ClusterManager(m)
    for name in ("shared", "recovery-devices"):
        mgr.ensure(shapes.resolve(name, m, SimAccManager, MachineryRecord()))
    mgr.ensure(ClusterShape(name="shared"))           # written with the manifest's defaults: still equal
    assert fake_starts == ["shared"]
    mgr.ensure(shapes.resolve("recovery-restart", m, SimAccManager, MachineryRecord()), fresh=True)
    mgr.ensure(shapes.resolve("recovery-transfers", m, SimAccManager, MachineryRecord()))
    mgr.ensure(shapes.resolve("recovery-fetch-timeout", m, SimAccManager, MachineryRecord()))
    assert fake_starts == ["shared", "recovery-restart"]     # the transfer checks run on FR-006's fresh start
    assert mgr.history[0]["also"] == ["recovery-devices"]
    assert mgr.history[1]["also"] == ["recovery-transfers", "recovery-fetch-timeout"]
    mgr.shutdown()
    assert all("stop_s" in h for h in mgr.history)
    assert (mgr.last_mode, mgr.last_nodes) == ("simulated", 2)


def test_a_run_without_the_shared_shape_records_the_manifests_cluster(fake_starts: list[str]) -> None:
    """A recovery-only run starts recovery-devices (the manifest's nodes), never "shared": the report's
    cluster mode and nodes are still its (the tier's min_nodes then agrees with verify's, which counts
    environment.devices), and never a shape's that changes the nodes."""
    m = load_manifest("builtin:simulated-2node")
    mgr = ClusterManager(m)
    mgr.ensure(shapes.resolve("recovery-nodes", m, SimAccManager, MachineryRecord()))
    assert (mgr.last_mode, mgr.last_nodes) == (None, 0)
    mgr.ensure(shapes.resolve("recovery-devices", m, SimAccManager, MachineryRecord()))
    assert fake_starts == ["recovery-nodes", "recovery-devices"] and (mgr.last_mode, mgr.last_nodes) == ("simulated", 2)
    mgr.shutdown()
