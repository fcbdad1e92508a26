"""Topology and labels: what a plugin says about its nodes, and whether Ray can act on it.

A plugin describes each node twice: as node labels (get_current_node_accelerator_labels(),
which the scheduler reads) and as a topology description (the manifest's topology.provider,
which people and the transport checks read). The modules here are small and mostly pure, so
the checks and the `ray-conformance topology` view share them and they are unit-tested
without Ray:

* (the label vocabulary, tiers/labels.yaml, is data: conformance.catalog.labels)
* description  validating a description and comparing it with Ray's view and the manifest
* selectors    Ray's label-selector semantics, and the labels a node *should* carry
* consistency  labels against Ray's node labels, the manager and the description
* probe        runs inside a task pinned to a node and reports what the plugin says there
* collect      runs the probe on every node (driver side)
* placement    label-selector and placement-group probes against that ground truth
* view         the per-node hardware view (report section and CLI)
* facts        what one node's probe found (Ray's view and the plugin's)
* pytest_support  TopologyCtx (`topology_ctx`, every check's one argument), how it is opened, the checks' helpers
* area         the topology area's declaration (conformance.areas.AREAS)
"""
