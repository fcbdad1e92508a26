"""Several Ray hosts on one machine, as network namespaces (root and iproute2 needed).

* `netns`   – the network: a bridge, one veth per host, 198.51.100.0/24 only inside the hosts.
* `cluster` – `HostCluster`: `ray start` on each host the way a vendor starts a node, token
              authentication, stop by namespace PIDs, nothing left behind.
* `faults`  – the fault driver for these hosts (kill, partition, heal, restart), used by the
              recovery checks under `--ray-address`.
* `__main__`– `python -m conformance.cluster.hosts demo|nodes` (`make hosts-demo`).

See docs/hosts.md.
"""
