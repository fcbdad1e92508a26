"""The suite against a real multi-host Ray cluster: three network-namespace hosts on this machine.

One namespace cluster (conformance.cluster.hosts) is shared by the tests of this module: started once,
certified with `ray-conformance run --ray-address` from inside the head host exactly as a vendor
would type it, then torn down; the last tests check that nothing was left behind, also when the
code inside the cluster's `with` block fails. Needs root and iproute2 (both in CI): not skipped.
"""
from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Iterator

import pytest
import yaml

from conformance.cluster.hosts import netns
from conformance.cluster.hosts.cluster import HostCluster, bin_path
from conformance.simulated.transport import SEGMENTS
from suite_runner import BROKEN, CHECKS, ROOT, SIM_MANIFEST, outcomes

# The tier the same manifest reaches on ray.cluster_utils nodes the suite starts itself:
# tests/test_device_teeth.py::test_good_plugin_passes_every_device_check asserts it.
CLUSTER_UTILS_TIER = "experimental"
HOSTS = 4          # one past the roles head, b, c: a host of no role must not turn a correct plugin's check red
PARTITION_HOSTS = 3
XFER_MANIFEST = ROOT / "tests" / "manifests" / "recovery-simxfer.yaml"   # the same accelerator + SIMXFER
NS_DRIVER = "conformance.cluster.hosts.faults:NamespaceFaultDriver"
NODE_CHECKS = ("FR-007", "FR-008", "FR-009", "FR-010", "FR-011", "FR-017")
PARTITION_FILES = (str(CHECKS / "recovery/test_recovery_nodes.py"),
                   f"{CHECKS / 'recovery/test_recovery_transfers.py'}::test_transfer_across_partition_ends_in_data_or_error")


@pytest.fixture(scope="module")
def hosts() -> Iterator[HostCluster]:
    with HostCluster(SIM_MANIFEST, hosts=HOSTS, segments=SEGMENTS) as hc:
        yield hc
    assert not any(hc.leftovers().values()), hc.leftovers()


def certify(hc: HostCluster, out: Path, *extra: str, env: dict[str, str] | None = None,
            manifest: Path = SIM_MANIFEST) -> tuple[Any, dict[str, Any]]:
    """`ray-conformance run --manifest M --ray-address HEAD:6379 --out DIR` inside the head host."""
    proc = hc.run_in(0, [bin_path("ray-conformance"), "run", "--manifest", str(manifest),
                         "--ray-address", hc.address, "--out", str(out), *extra], env=env, timeout_s=600,
                     cwd=str(ROOT))
    report_path = out / "report.json"
    assert report_path.exists(), (proc.stdout[-3000:], proc.stderr[-2000:])
    return proc, json.loads(report_path.read_text())


def test_plan_uses_documentation_range_and_short_names() -> None:
    net = netns.plan(3, owner_pid=4194304)
    assert [h.address for h in net.hosts] == ["198.51.100.2", "198.51.100.3", "198.51.100.4"]
    assert all(len(n) <= 15 for n in [net.bridge] + [h.veth for h in net.hosts])   # IFNAMSIZ
    with pytest.raises(ValueError, match="hosts"):
        netns.plan(0)
    assert len({netns.plan(1).bridge for _ in range(3)}) == 3   # instances of one process never collide


def test_each_host_is_a_node_with_its_own_ip_devices_and_labels(hosts: HostCluster) -> None:
    nodes = [n for n in hosts.nodes() if n["Alive"]]
    assert sorted(n["NodeManagerAddress"] for n in nodes) == [h.net.address for h in hosts.members]
    assert all(n["Resources"].get("SIMACC") == 4.0 for n in nodes), nodes
    assert {n["Labels"].get("ray.io/accelerator-type") for n in nodes} == {"SIMACC-X1"}
    # The bridge has no address in the root namespace: only the hosts can reach the cluster.
    assert "198.51.100." not in netns.ip("-o", "addr", "show")


def test_hosts_require_the_token(hosts: HostCluster) -> None:
    token = hosts.token_path.read_text().strip()
    assert len(token) == 64
    for h in hosts.members:
        assert hosts.host_env(h.net.index)["RAY_AUTH_MODE"] == "token"


def test_certified_over_ray_address_reaches_the_cluster_utils_tier(hosts: HostCluster, tmp_path: Path) -> None:
    # The driver gets the token as RAY_AUTH_TOKEN (the hosts read it from RAY_AUTH_TOKEN_PATH).
    env = hosts.driver_env(RAY_AUTH_TOKEN=hosts.token_path.read_text().strip())
    env.pop("RAY_AUTH_TOKEN_PATH")
    proc, report = certify(hosts, tmp_path / "out", env=env)
    assert proc.returncode == 0, proc.stdout[-3000:]
    assert report["cluster"]["mode"] == "remote" and report["cluster"]["nodes"] == HOSTS
    device = outcomes(report, "device")
    assert device.pop("DP-015") == "not_applicable"   # needs a node started with a pre-set variable
    assert set(device.values()) == {"pass"}, device
    assert report["tier"] == CLUSTER_UTILS_TIER


def with_driver(hc: HostCluster) -> list[str]:
    state = hc.write_state(hc.workdir / "hosts.json")
    return ["--fault-driver", NS_DRIVER, "--fault-driver-options", json.dumps({"state": str(state)})]


def test_node_and_partition_checks_run_with_the_namespace_fault_driver(hosts: HostCluster, tmp_path: Path) -> None:
    proc, report = certify(hosts, tmp_path / "out", *with_driver(hosts), "--", *PARTITION_FILES,
                           manifest=XFER_MANIFEST)
    got = outcomes(report, "recovery")
    reasons = {c["id"]: c["reason"] for c in report["checks"]}
    bad = {c: (got[c], reasons[c]) for c in NODE_CHECKS + ("FR-018",) if got[c] != "pass"}
    assert not bad, (bad, proc.stdout[-3000:])
    metrics = {c["id"]: c["metrics"] for c in report["checks"]}
    assert metrics["FR-017"]["declared_dead_s"] <= 30
    assert metrics["FR-018"]["result"] == "data" or metrics["FR-018"]["result"].startswith("error")


def faulty_manifest(folder: Path) -> Path:
    """The same accelerator and transport with the faults the partition checks must catch."""
    doc = yaml.safe_load(XFER_MANIFEST.read_text())
    doc["plugin"]["python_path"] = [str(BROKEN)]
    doc["product"] = "SimAcc X1 faulty partition"
    doc["accelerator"]["manager"] = "faulty:CollideAfterRestart"       # a moved actor sees a neighbour's device
    doc["transport"]["manager"] = "partition_faulty:HandshakeForever"   # a receive waits forever for its peer
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "manifest.yaml").write_text(yaml.safe_dump(doc, sort_keys=False))
    return folder / "manifest.yaml"


def test_partition_checks_have_teeth(tmp_path: Path) -> None:
    manifest = faulty_manifest(tmp_path / "m")
    with HostCluster(manifest, hosts=PARTITION_HOSTS, extra_env={"RAY_rdt_fetch_fail_timeout_milliseconds": "10000"},
                     segments=SEGMENTS) as hc:
        proc, report = certify(hc, tmp_path / "out", *with_driver(hc), "--",
                               f"{PARTITION_FILES[0]}::test_partitioned_node_is_replaced_and_rejoins_as_new_node",
                               PARTITION_FILES[1], "--conformance-retries=0", manifest=manifest)   # caught defects: no re-run
    got = outcomes(report, "recovery")
    reasons = {c["id"]: c["reason"] for c in report["checks"]}
    assert got["FR-017"] == "fail" and "pool actor after the partition" in reasons["FR-017"], reasons["FR-017"]
    assert got["FR-018"] == "fail", (reasons["FR-018"], proc.stdout[-3000:])
    assert not any(hc.leftovers().values()), hc.leftovers()


def test_nothing_left_when_the_body_fails() -> None:
    hc = HostCluster(SIM_MANIFEST, hosts=1, segments=SEGMENTS)
    with pytest.raises(RuntimeError, match="a failing test"):
        with hc:
            assert netns.pids(hc.members[0].net.namespace), "the host runs Ray"
            raise RuntimeError("a failing test")
    assert not any(hc.leftovers().values()), hc.leftovers()


def test_shm_leftovers_count_the_clusters_creators_not_processes_outside_it() -> None:
    """A teeth run beside this module keeps SIMXFER segments in /dev/shm, and leaves some for a
    moment when a check kills their source: they are not the cluster's, alive or gone. A segment
    whose creator was one of the cluster's processes is counted (after stop() that is every one of
    ours), and so is an entry whose creator its name does not say."""
    import os

    from conformance.cluster.hosts.cluster import _shm_entries

    hc = HostCluster(SIM_MANIFEST, hosts=1, segments=SEGMENTS)
    hc._shm_before = set(_shm_entries())
    hc._pids = {4194305}                                           # as stop() records the hosts' processes
    ours = Path("/dev/shm/simxfer-4194305-leftovertest")           # above any pid_max: gone
    live = Path(f"/dev/shm/simxfer-{os.getpid()}-leftovertest")   # this process: alive, not in the cluster
    gone = Path("/dev/shm/simxfer-4194306-leftovertest")           # gone, never the cluster's
    folder = Path(f"/dev/shm/conformance-vendor-{os.getpid()}-leftovertest")   # a transport's own folder
    theirs = Path(f"/dev/shm/rc-teeth-staging-{os.getpid()}-leftovertest")     # a run beside it stages here
    try:
        for p in (ours, live, gone):
            p.write_bytes(b"x")
        folder.mkdir()
        (folder / "staged").write_bytes(b"x")
        theirs.mkdir()
        (theirs / gone.name).write_bytes(b"x")
        shm = hc.leftovers()["shm"]
        assert ours.name in shm
        assert live.name not in shm and gone.name not in shm
        assert f"{folder.name}/" in shm and f"{folder.name}/staged" in shm     # below the top, too
        assert not [e for e in shm if e.startswith(theirs.name)]               # a folder of only theirs is theirs
    finally:
        for p in (ours, live, gone, theirs / gone.name):
            p.unlink(missing_ok=True)
        (folder / "staged").unlink(missing_ok=True)
        for f in (folder, theirs):
            if f.exists():
                f.rmdir()


def test_stop_records_the_processes_ray_logged_before_their_logs_go(tmp_path: Path) -> None:
    """What a cluster's processes left below a folder of /dev/shm (stop() reaps only the top) is
    counted once they are gone, by the pids Ray logged, read before the temp folder is removed;
    a new empty folder is counted too."""
    import os

    from conformance.cluster.hosts.cluster import _shm_entries

    hc = HostCluster(SIM_MANIFEST, hosts=1, segments=SEGMENTS)
    hc._shm_before = set(_shm_entries())
    logs = tmp_path / "work" / "ray" / "session_1" / "logs" / "old"
    logs.mkdir(parents=True)
    (logs / "python-core-worker-00f6fc60_4194305.log").write_text("")
    hc.workdir = tmp_path / "work"
    staged = Path(f"/dev/shm/conformance-vendor-{os.getpid()}-stoptest")
    empty = Path(f"/dev/shm/conformance-empty-{os.getpid()}-stoptest")
    try:
        staged.mkdir()
        (staged / "simxfer-4194305-x").write_bytes(b"x")
        empty.mkdir()
        hc.stop()
        assert 4194305 in hc._pids and not (tmp_path / "work").exists()
        shm = hc.leftovers()["shm"]
        assert f"{staged.name}/simxfer-4194305-x" in shm and f"{staged.name}/" in shm and f"{empty.name}/" in shm
    finally:
        (staged / "simxfer-4194305-x").unlink(missing_ok=True)
        for f in (staged, empty):
            if f.exists():
                f.rmdir()


def test_ray_logs_name_every_process_of_a_session(tmp_path: Path) -> None:
    from conformance.cluster.process_owners import logged_pids, session_pids

    assert logged_pids(["python-core-worker-9e4223ee3de2_23625.log", "python-core-driver-02000000ffff_20341.log",
                        "raylet.out", "worker-9e4223ee-02000000-23625.err", "python-core-worker-x_1.log"]) == {23625, 20341}
    logs = tmp_path / "ray" / "session_2026-12-06_21-59-00_000000_1" / "logs"
    logs.mkdir(parents=True)
    (logs / "python-core-worker-00f6fc60_23062.log").write_text("")
    assert session_pids(str(tmp_path)) == {23062}


def test_stale_namespaces_of_a_dead_owner_are_swept() -> None:
    dead_pid = 4194305   # above the largest pid_max (2**22): never a live process
    net = netns.plan(1, owner_pid=dead_pid)
    netns.create(net)
    assert netns.ours(dead_pid)["namespaces"]
    removed = netns.sweep_stale()
    assert net.hosts[0].namespace in removed
    assert not any(netns.ours(dead_pid).values())


def test_certification_runs_as_a_ray_job(tmp_path: Path) -> None:
    """`ray job submit --working-dir … -- ray-conformance run --ray-address auto --out …` on the hosts."""
    import importlib.util
    if importlib.util.find_spec("aiohttp") is None:   # the job server is part of Ray's dashboard: ray[default]
        pytest.fail("ray job submit needs ray[default] (Ray's dashboard and job server): `make install` installs "
                    "it (the [jobs] extra)")
    work = tmp_path / "cert"
    work.mkdir()
    (work / "manifest.yaml").write_text(SIM_MANIFEST.read_text())
    out = tmp_path / "reports"
    with HostCluster(SIM_MANIFEST, hosts=2, dashboard=True, segments=SEGMENTS) as hc:
        head = hc.members[0].net.address
        proc = hc.run_in(0, [bin_path("ray"), "job", "submit", "--address", f"http://{head}:8265",
                             "--working-dir", str(work), "--",
                             bin_path("ray-conformance"), "run", "--manifest", "manifest.yaml", "--ray-address", "auto",
                             "--out", str(out), "--", str(CHECKS / "device/test_device_live.py")],
                         timeout_s=600, cwd=str(ROOT))
    assert proc.returncode == 0, (proc.stdout[-3000:], proc.stderr[-2000:])
    assert "tier achieved" in proc.stdout, proc.stdout[-2000:]
    report = json.loads((out / "report.json").read_text())
    assert report["cluster"]["mode"] == "remote" and report["cluster"]["nodes"] == 2
    assert {"report.md", "junit.xml"} <= {p.name for p in out.iterdir()}
    assert set(outcomes(report, "device").values()) - {"skip", "not_applicable"} == {"pass"}
