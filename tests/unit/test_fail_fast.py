"""Fail fast on a wedged plugin: once a node-start call is known to hang, or a cluster failed to
start, later cluster shapes fail at once with that reason instead of waiting out their timeouts."""
from __future__ import annotations

import pytest

from conformance.areas.device.contract import CALLING, last_call
from conformance.catalog.manifest import load_manifest
from conformance.catalog.vendor_calls import KnownHang
from conformance.cluster import manager as cluster_module
from conformance.cluster.manager import ClusterHandle, ClusterManager, ClusterShape, ClusterStartError
from conformance.timing.timeouts import CheckTimeout


def test_probe_names_the_call_it_hung_in() -> None:
    stderr = f"{CALLING}get_resource_name\nsome log line\n{CALLING}get_current_node_num_accelerators\n"
    assert last_call(stderr) == "get_current_node_num_accelerators"
    assert last_call(stderr.encode()) == "get_current_node_num_accelerators"
    assert last_call("") is None and last_call(None) is None


def test_a_known_node_start_hang_fails_every_later_shape_at_once() -> None:
    manager = ClusterManager(load_manifest("builtin:simulated"))
    manager.hangs.add(KnownHang("get_current_node_num_accelerators", "the preflight", 20))
    for name in ("shared", "recovery-nodes"):
        with pytest.raises(ClusterStartError, match=f"cluster '{name}' not started: the plugin's "
                           r"get_current_node_num_accelerators\(\) did not return within 20s \(a hang\), "
                           "found by the preflight"):
            manager.ensure(ClusterShape(name=name))
    assert [h["ok"] for h in manager.history] == [False, False]
    assert manager.current is None


class _StartsAfter:
    """Stands in for start_cluster: raises the given errors in turn, then starts."""

    def __init__(self, *errors: BaseException) -> None:
        self.errors = list(errors)
        self.calls = 0

    def __call__(self, manifest, shape, ray_address=None, manager=None):
        self.calls += 1
        if self.errors:
            raise self.errors.pop(0)
        return ClusterHandle(shape, "local", None, 1, started_s=0.1)


RAY_TIMEOUT = Exception("The current node timed out during startup. This could happen because some of the raylet "
                        "failed to startup or the GCS has become overloaded.")


def test_rays_own_startup_timeout_is_retried_once_and_recorded(monkeypatch: pytest.MonkeyPatch) -> None:
    fake = _StartsAfter(RAY_TIMEOUT)
    monkeypatch.setattr(cluster_module, "start_cluster", fake)
    monkeypatch.setattr(cluster_module, "_shutdown_after_failed_start", lambda: None)
    manager = ClusterManager(load_manifest("builtin:simulated"))
    handle = manager.ensure(ClusterShape(name="shared"))
    assert fake.calls == 2 and handle.mode == "local"
    assert [(h["ok"], h.get("retried")) for h in manager.history] == [(False, True), (True, None)]
    assert "timed out during startup" in manager.history[0]["reason"]
    assert manager.hangs.blocks_node_start() is None
    assert any("registration wait ran out once" in n for n in manager.notes)


def test_a_second_startup_timeout_or_a_plugin_error_is_not_retried(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(cluster_module, "_shutdown_after_failed_start", lambda: None)
    twice = _StartsAfter(RAY_TIMEOUT, RAY_TIMEOUT)
    monkeypatch.setattr(cluster_module, "start_cluster", twice)
    manager = ClusterManager(load_manifest("builtin:simulated"))
    with pytest.raises(ClusterStartError, match="timed out during startup"):
        manager.ensure(ClusterShape(name="shared"))
    assert twice.calls == 2
    assert manager.hangs.blocks_node_start() is None      # the host's wait, not the plugin's: no fail-fast

    plugin = _StartsAfter(RuntimeError("get_current_node_num_accelerators() raised ValueError"))
    monkeypatch.setattr(cluster_module, "start_cluster", plugin)
    manager = ClusterManager(load_manifest("builtin:simulated"))
    with pytest.raises(ClusterStartError, match="raised ValueError"):
        manager.ensure(ClusterShape(name="shared"))
    assert plugin.calls == 1


def test_only_a_start_that_hung_fails_later_shapes_at_once(monkeypatch: pytest.MonkeyPatch) -> None:
    """A start that raised may be the shape's own (a node without the device); one that hung would
    cost every later shape its whole start timeout."""
    monkeypatch.setattr(cluster_module, "_shutdown_after_failed_start", lambda: None)
    raised = _StartsAfter(RuntimeError("no device on this node"))
    monkeypatch.setattr(cluster_module, "start_cluster", raised)
    manager = ClusterManager(load_manifest("builtin:simulated"))
    with pytest.raises(ClusterStartError, match="no device on this node"):
        manager.ensure(ClusterShape(name="host-without-device"))
    assert manager.hangs.blocks_node_start() is None
    monkeypatch.setattr(cluster_module, "start_cluster", _StartsAfter())
    assert manager.ensure(ClusterShape(name="shared")).mode == "local"

    hung = _StartsAfter(CheckTimeout("cluster start: no result within the hard timeout of 240s"))
    monkeypatch.setattr(cluster_module, "start_cluster", hung)
    manager = ClusterManager(load_manifest("builtin:simulated"))
    with pytest.raises(ClusterStartError, match="hard timeout"):
        manager.ensure(ClusterShape(name="shared"))
    with pytest.raises(ClusterStartError, match="not started: an earlier cluster .'shared'. hung while starting"):
        manager.ensure(ClusterShape(name="recovery-nodes"))
    assert hung.calls == 1


def _wrapped_timeout() -> BaseException:
    """A hard timeout as Ray's compiled get re-raises it: another error, the timeout as its cause."""
    outer = SystemError("<built-in method get> returned a result with an exception set")
    outer.__cause__ = CheckTimeout("cluster start: no result within the hard timeout of 240s")
    return outer


def test_a_wrapped_hang_counts_a_hang_on_the_retry_does_not_and_an_interrupt_propagates(
        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(cluster_module, "_shutdown_after_failed_start", lambda: None)
    monkeypatch.setattr(cluster_module, "start_cluster", _StartsAfter(_wrapped_timeout()))
    manager = ClusterManager(load_manifest("builtin:simulated"))
    with pytest.raises(ClusterStartError):
        manager.ensure(ClusterShape(name="shared"))
    known = manager.hangs.blocks_node_start()
    assert known is not None and "hung while starting" in known.reason()

    # Ray's registration wait ran out, then the retry hung: the loaded host is as likely as the plugin
    monkeypatch.setattr(cluster_module, "start_cluster", _StartsAfter(RAY_TIMEOUT, CheckTimeout("hard timeout")))
    manager = ClusterManager(load_manifest("builtin:simulated"))
    with pytest.raises(ClusterStartError, match="hard timeout"):
        manager.ensure(ClusterShape(name="shared"))
    assert manager.hangs.blocks_node_start() is None

    stopped = []
    monkeypatch.setattr(cluster_module, "_shutdown_after_failed_start", lambda: stopped.append(True))
    monkeypatch.setattr(cluster_module, "start_cluster", _StartsAfter(KeyboardInterrupt()))
    manager = ClusterManager(load_manifest("builtin:simulated"))
    with pytest.raises(KeyboardInterrupt):
        manager.ensure(ClusterShape(name="shared"))
    assert stopped == [True] and manager.history == [] and manager.failures == {}
