"""The fault driver of the network-namespace hosts (conformance.cluster.hosts.cluster).

Runs in the suite's driver process (inside the head host) and reads the harness's state file
(`HostCluster.write_state`): each host's namespace, address, environment and `ray start` line.

* kill_node    – SIGKILL every process in the host's namespace (`ip netns pids`): a host crash.
* partition    – the host's link (`eth0` in its namespace) goes down; its processes keep running
                 and can reach nobody. With `seconds`, the link comes back up after that long.
* heal         – the link goes up again. Ray does not take a node it declared dead back: the
                 partitioned raylet exits once it learns, and the host must be restarted.
* restart_node – end what is left in the namespace, link up, `ray start --address` again with the
                 same environment and labels: the host joins as a new node.

Select it with `--fault-driver conformance.cluster.hosts.faults:NamespaceFaultDriver
--fault-driver-options '{"state": "/path/to/hosts.json"}'`.
"""
from __future__ import annotations

import json
import threading
from pathlib import Path
from typing import Any

from conformance.cluster.faults import FaultNotSupported, NodeRef
from conformance.cluster.hosts import netns
from conformance.cluster.hosts.cluster import scrubbed_environ, start_in_namespace


class NamespaceFaultDriver:
    name = "netns"
    supports = frozenset({"kill", "partition", "restart"})

    def __init__(self, state: str) -> None:
        path = Path(state)
        if not path.is_file():
            raise FileNotFoundError(f"state file not found: {state}")
        self.state: dict[str, Any] = json.loads(path.read_text())
        self._timers: list[threading.Timer] = []

    def _host(self, node: NodeRef) -> dict[str, Any]:
        hosts: list[dict[str, Any]] = self.state["hosts"]
        for h in hosts:
            if h["address"] == node.ip:
                return h
        raise FaultNotSupported(f"node {node.node_id[:8]} at {node.ip} is not one of the namespace hosts")

    def _net(self, node: NodeRef) -> netns.HostNet:
        h = self._host(node)
        return netns.HostNet(h["index"], h["namespace"], h["veth"], h["address"])

    def kill_node(self, node: NodeRef) -> None:
        netns.kill_namespace(self._host(node)["namespace"])

    def partition(self, node: NodeRef, seconds: float | None = None) -> None:
        net = self._net(node)
        netns.set_link(net, up=False)
        if seconds is not None:
            timer = threading.Timer(seconds, netns.set_link, args=(net, True))
            timer.daemon = True
            timer.start()
            self._timers.append(timer)

    def heal(self, node: NodeRef) -> None:
        for t in self._timers:
            t.cancel()
        netns.set_link(self._net(node), up=True)

    def restart_node(self, node: NodeRef) -> None:
        h = self._host(node)
        netns.kill_namespace(h["namespace"], grace_s=2.0)
        netns.set_link(self._net(node), up=True)
        start_in_namespace(h["namespace"], h["start_argv"], {**scrubbed_environ(), **h["env"]}, h["role"],
                           h["address"])
