"""Fail fast on a wedged plugin: once a node-start call is known to hang, or a cluster failed to
start, later cluster shapes fail at once with that reason instead of waiting out their timeouts."""
from __future__ import annotations

import pytest

from conformance.cluster import ClusterManager, ClusterShape, ClusterStartError
from conformance.contract import CALLING, last_call
from conformance.manifest import load_manifest


def test_probe_names_the_call_it_hung_in() -> None:
    stderr = f"{CALLING}get_resource_name\nsome log line\n{CALLING}get_current_node_num_accelerators\n"
    assert last_call(stderr) == "get_current_node_num_accelerators"
    assert last_call(stderr.encode()) == "get_current_node_num_accelerators"
    assert last_call("") is None and last_call(None) is None


def test_known_plugin_failure_fails_every_later_shape_at_once() -> None:
    manager = ClusterManager(load_manifest("builtin:simulated"))
    manager.known_plugin_failure = "the plugin's get_current_node_num_accelerators() hangs"
    for name in ("shared", "recovery-nodes"):
        with pytest.raises(ClusterStartError, match=f"cluster '{name}' not started: the plugin's"):
            manager.ensure(ClusterShape(name=name))
    assert [h["ok"] for h in manager.history] == [False, False]
    assert manager.current is None
