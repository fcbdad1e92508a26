"""Fault drivers without a cluster: how one is selected, what is refused, and which nodes the
node scenarios use when a manifest has CPU-only nodes (no Ray is started here)."""
from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import yaml

from conformance.areas.recovery.nodes import NODE_NAME_ENV, ROLES, device_node_envs, node_shape
from conformance.catalog.manifest import load_manifest
from conformance.cluster.faults import (
    ClusterUtilsFaultDriver,
    DriverSpec,
    FaultNotSupported,
    NodeRef,
    driver_spec,
    load_driver,
)
from conformance.errors import UserError
from conformance.simulated.manager import SimAccManager
from suite_runner import SIM_MANIFEST, write_manifest

NS = "conformance.cluster.hosts.faults:NamespaceFaultDriver"


def manifest_with(tmp_path: Path, **cluster: Any) -> Any:
    data = yaml.safe_load(SIM_MANIFEST.read_text())
    data["cluster"] = {**data.get("cluster", {}), **cluster}
    return load_manifest(write_manifest(data, tmp_path))


def test_the_manifest_names_a_driver_and_the_cli_wins(tmp_path: Path) -> None:
    m = manifest_with(tmp_path, fault_driver={"driver": "pkg.mod:Driver", "options": {"a": 1}})
    assert driver_spec(m, None, None) == DriverSpec("pkg.mod:Driver", {"a": 1})
    assert driver_spec(m, None, '{"b": 2}') == DriverSpec("pkg.mod:Driver", {"a": 1, "b": 2})
    assert driver_spec(m, NS, '{"state": "x.json"}') == DriverSpec(NS, {"state": "x.json"})
    assert driver_spec(manifest_with(tmp_path / "none"), None, None) is None


@pytest.mark.parametrize("options, fragment", [("{bad", "invalid JSON"), ("[1]", "JSON object")])
def test_bad_driver_options_are_one_line_errors(tmp_path: Path, options: str, fragment: str) -> None:
    with pytest.raises(UserError, match=fragment):
        driver_spec(None, NS, options)


def test_the_schema_refuses_a_driver_that_is_no_reference(tmp_path: Path) -> None:
    with pytest.raises(UserError, match="fault_driver"):
        manifest_with(tmp_path, fault_driver={"driver": "not a ref"})


def test_load_driver_refuses_what_is_no_fault_driver(tmp_path: Path) -> None:
    with pytest.raises(UserError, match="cannot import"):
        load_driver(DriverSpec("no_such_module_x:Driver", {}))
    with pytest.raises(UserError, match="no fault driver"):
        load_driver(DriverSpec("conformance.cluster.faults:DriverSpec", {"ref": "a", "options": {}}))
    with pytest.raises(UserError, match="rejected"):
        load_driver(DriverSpec(NS, {"state": str(tmp_path / "missing.json")}))


def test_the_namespace_driver_loads_from_a_state_file_and_knows_its_hosts(tmp_path: Path) -> None:
    state = tmp_path / "hosts.json"
    state.write_text(json.dumps({"hosts": [{"index": 1, "role": "b", "namespace": "rcns1ah1", "veth": "rcns1av1",
                                            "address": "198.51.100.3", "start_argv": [], "env": {}}]}))
    driver = load_driver(DriverSpec(NS, {"state": str(state)}))
    assert driver.supports == {"kill", "partition", "restart"}
    with pytest.raises(FaultNotSupported, match="not one of the namespace hosts"):
        driver.kill_node(NodeRef("abc", "10.0.0.9"))


def test_cluster_utils_cannot_partition() -> None:
    driver = ClusterUtilsFaultDriver(lab=None)
    assert "partition" not in driver.supports
    with pytest.raises(FaultNotSupported, match="one network stack"):
        driver.partition(NodeRef("abc", "127.0.0.1"))


def test_node_roles_skip_a_cpu_only_node(tmp_path: Path) -> None:
    """issue 11 item 8: a manifest whose node_env gives one node no devices stays certifiable."""
    m = manifest_with(tmp_path, nodes=2, node_env=[{"SIMACC_NUM_DEVICES": "0"}, {"SIMACC_NUM_DEVICES": "4"}])
    assert device_node_envs(m, SimAccManager) == [{"SIMACC_NUM_DEVICES": "4"}]
    shape = node_shape(m, SimAccManager)
    assert [e["SIMACC_NUM_DEVICES"] for e in shape.node_env] == ["4"] * len(ROLES)
    assert [e[NODE_NAME_ENV] for e in shape.node_env] == list(ROLES)


# ------------------------------------------------------------------------------ a host's `ray start`
class _RayStart:
    """What `ip netns exec <ns> ray start ...` answered, one answer per try (no namespace is used)."""

    def __init__(self, *answers: tuple[int, str]) -> None:
        self.answers, self.calls = list(answers), 0

    def __call__(self, argv: list[str], **_kwargs: Any) -> Any:
        self.calls += 1
        rc, stderr = self.answers.pop(0)
        return type("Proc", (), {"returncode": rc, "stderr": stderr, "stdout": ""})()


TIMED_OUT = ("Traceback ...\n  raise Exception(\nException: The current node timed out during startup. "
             "This could happen because some of the raylet failed to startup or the GCS has become overloaded.")


def test_a_hosts_ray_start_is_tried_again_once_when_rays_registration_wait_ran_out() -> None:
    from conformance.cluster.hosts.cluster import start_in_namespace

    ended: list[str] = []
    run = _RayStart((1, TIMED_OUT), (0, ""))
    start_in_namespace("ns-b", ["ray", "start"], {}, "b", "198.51.100.3", run=run, end_namespace=ended.append)
    assert run.calls == 2 and ended == ["ns-b"]     # what the first try left is ended before the second


def test_a_hosts_ray_start_fails_with_rays_last_words_otherwise() -> None:
    from conformance.cluster.hosts.cluster import HostClusterError, start_in_namespace

    ended: list[str] = []
    run = _RayStart((1, "ValueError: bad --labels"))
    with pytest.raises(HostClusterError, match=r"ray start on host b \(198.51.100.3\) failed: ValueError: bad --labels"):
        start_in_namespace("ns-b", ["ray", "start"], {}, "b", "198.51.100.3", run=run, end_namespace=ended.append)
    assert run.calls == 1 and ended == []
    twice = _RayStart((1, TIMED_OUT), (1, TIMED_OUT))
    with pytest.raises(HostClusterError, match="timed out during startup"):
        start_in_namespace("ns-b", ["ray", "start"], {}, "b", "198.51.100.3", run=twice, end_namespace=ended.append)
    assert twice.calls == 2 and ended == ["ns-b"]
