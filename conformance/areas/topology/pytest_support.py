"""The topology area's check context: TopologyCtx, the one argument of every TL check
(`topology_ctx`, the core's one fixture; `open_context` opens it, the area's Area.context
`opens`), holding the shared cluster's per-node facts, and the helpers its checks share.

The facts are collected once per cluster and shared: they are kept in the run's config stash
(conformance.areas.topology.area.FACTS), keyed by the set of alive node ids, so every topology
check of a run sees the same probe results and the cluster is probed once (again only if the
shared cluster restarted).
Collecting them also (re)writes the "Topology" section of the report.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Iterator

from conformance.areas.topology.area import AREA, FACTS
from conformance.areas.topology.collect import collect_node_facts
from conformance.areas.topology.facts import NodeFacts
from conformance.areas.topology.placement import nodes_labels
from conformance.areas.topology.plans import published_domains
from conformance.areas.topology.selectors import truth_labels
from conformance.areas.topology.view import build_view
from conformance.catalog.labels import Vocabulary, load_vocabulary
from conformance.catalog.manifest_view import TopologyExpected
from conformance.run.check_context import CheckContext
from conformance.run.state import stash_of

if TYPE_CHECKING:
    from conformance.run.check_context import RunView
    from conformance.run.contexts import Lifetimes


@dataclass(kw_only=True)
class TopologyCtx(CheckContext):
    """One TL check's context: the base (run, check and its thresholds, metrics, cluster) and the
    facts of every alive node of the shared cluster, with what the manifest expects of them."""

    facts: list[NodeFacts]
    vocabulary: Vocabulary
    resource: str
    expected_type: str
    provider_ref: str | None
    expected_topology: TopologyExpected | None
    remote: bool

    def device_nodes(self) -> list[NodeFacts]:
        return [f for f in self.facts if f.has_devices]

    def labels(self) -> dict[str, dict[str, str]]:
        return nodes_labels(self.facts)

    def truth(self) -> dict[str, dict[str, str]]:
        return {f.node_id: truth_labels(f, self.vocabulary, self.expected_type) for f in self.facts}

    def published_domains(self) -> list[tuple[str, str]]:
        """(key, value) of every domain label on an alive node (plans.published_domains)."""
        return published_domains(self.facts, self.vocabulary)


def topology_section_notes(run: RunView) -> list[str]:
    notes = []
    if run.ray_address:
        notes.append("remote cluster: the plugin's labels must have been applied by whoever started the nodes")
    else:
        notes.append("Ray 2.60 applies get_current_node_accelerator_labels() only for TPU; the suite applied the "
                     "plugin's labels to the nodes it started")
    return notes


def context_for(base: CheckContext) -> TopologyCtx:
    """The context of the check `base` belongs to: the facts of the cluster that is up now (probed
    once per set of alive nodes), and the report's "Topology" section written from them."""
    import ray

    run = base.run
    manifest = run.manifest
    topology = manifest.view.topology
    provider, expected = (topology.provider, topology.expected) if topology else (None, None)
    key = tuple(sorted(n["NodeID"] for n in ray.nodes() if n.get("Alive")))
    stash = stash_of(run)
    cached = stash.get(FACTS, None)
    if cached is not None and cached[0] == key:
        facts = cached[1]
    else:
        facts = collect_node_facts(manifest.resource_name, manifest.view.accelerator.manager, provider)
        stash[FACTS] = (key, facts)
    ctx = TopologyCtx.derive(base, facts=facts, vocabulary=load_vocabulary(), resource=manifest.resource_name,
                             expected_type=manifest.accelerator_type, provider_ref=provider,
                             expected_topology=expected, remote=bool(run.ray_address))
    ctx.exercised([f.node_id for f in facts], alive=len(key))   # every alive node's facts, probed in one wave
    run.publish(AREA.section, build_view(facts, resource=ctx.resource, vocabulary=ctx.vocabulary,
                                          expected_type=ctx.expected_type, expected_topology=ctx.expected_topology,
                                          notes=topology_section_notes(run)))
    return ctx


def open_context(kind: type[TopologyCtx], base: CheckContext, lifetimes: Lifetimes) -> Iterator[TopologyCtx]:
    """The shared cluster's per-node facts (Ray's view and the plugin's, per node). Every TL check
    runs on the shared cluster (its checklist entry); afterwards every device must be free again
    (Ray's accounting, through the check's budget: conformance.run.release)."""
    base.cluster()
    try:
        base.manager()
        yield context_for(base)
    finally:
        base.budget.released(base.manifest.resource_name, "every device to be free after the check")


def require_provider(ctx: TopologyCtx) -> None:
    from conformance.run.fixtures import not_applicable

    if not ctx.provider_ref:
        not_applicable("the manifest declares no topology.provider, so there is no description to check")


def probe_gaps(ctx: TopologyCtx) -> tuple[dict[str, list[str]], list[str]]:
    """Nodes the probe could not run on: a problem on nodes with devices; a note elsewhere
    (e.g. a CPU-only head of a real cluster without the plugin installed)."""
    problems: dict[str, list[str]] = {}
    notes = []
    for f in ctx.facts:
        if f.probe_error:
            if f.has_devices:
                problems.setdefault(f.short, []).append(f"the probe did not run: {f.probe_error}")
            else:
                notes.append(f"{f.short}: not probed ({f.probe_error})")
    return problems, notes


def assert_no_problems(per_node: dict[str, list[str]], what: str, metrics: dict[str, Any] | None = None) -> None:
    """Fail with one line naming every node and its first problems (the report's reason)."""
    per_node = {k: v for k, v in per_node.items() if v}
    if metrics is not None:
        metrics["problems"] = per_node
    if per_node:
        parts = [f"node {node}: {'; '.join(problems[:3])}" + (f" (+{len(problems) - 3} more)" if len(problems) > 3 else "")
                 for node, problems in per_node.items()]
        raise AssertionError(f"{what}: " + " | ".join(parts))
