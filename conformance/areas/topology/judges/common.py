"""The topology judges' table and what every group of them shares: the record held to the manifest,
per node (conformance.areas.topology.judges says the rules)."""
from __future__ import annotations

from typing import Any, Callable, Mapping, Sequence

from conformance.areas.topology.evidence import cluster_problems, facts_of
from conformance.areas.topology.facts import NodeFacts
from conformance.areas.topology.selectors import truth_labels
from conformance.catalog.labels import Vocabulary, load_vocabulary
from conformance.report.judges import FAIL, PASS, JudgeTable, MissingEvidence, Verdict

JUDGES = JudgeTable()
NODE_RECORD = ("nodes", "resource")
SHOWN = 3   # knob: problems a reason shows per node


def _failed(what: str, per_node: Mapping[str, list[str]]) -> Verdict | None:
    """A fail naming every node and its first problems (the live check's reason), or None. The
    nodes' problems come first, the record's as a whole last: what the record's plausibility
    finds (a declared domain without its label on a node) is also what a plugin that applies no
    labels shows, and must not crowd out the check's own finding (the reason is cut for width)."""
    per_node = {k: v for k, v in sorted(per_node.items(), key=lambda kv: kv[0] == "record") if v}
    if not per_node:
        return None
    parts = [f"{'the record' if node == 'record' else f'node {node}'}: {'; '.join(problems[:SHOWN])}"
             + (f" (+{len(problems) - SHOWN} more)" if len(problems) > SHOWN else "")
             for node, problems in per_node.items()]
    return Verdict(FAIL, f"{what}: " + " | ".join(parts))


def _nodes(m: Mapping[str, Any], manifest: Mapping[str, Any], probed: bool = True
           ) -> tuple[list[NodeFacts], dict[str, list[str]]]:
    """The recorded facts, and the problems of the record as a whole (keyed "record") and, when
    `probed` (the checks that judge what the plugin said on each node), of nodes with devices the
    probe did not reach (the placement checks judge such a node by its devices and the type)."""
    facts = facts_of(m, manifest)
    problems: dict[str, list[str]] = {"record": cluster_problems(m, facts, manifest)}
    for f in facts:
        if probed and f.probe_error and f.has_devices:
            problems.setdefault(f.short, []).append(f"the probe did not run: {f.probe_error}")
    return facts, problems


def _per_node(m: Mapping[str, Any], manifest: Mapping[str, Any], what: str,
              check: Callable[[NodeFacts], list[str]], ok: str) -> Verdict:
    facts, problems = _nodes(m, manifest)
    for f in facts:
        if not f.probe_error:
            problems.setdefault(f.short, []).extend(check(f))
    return _failed(what, problems) or Verdict(PASS, f"{ok} on {len(facts)} node(s)")


def _vocabulary() -> Vocabulary:
    return load_vocabulary()


def _provider(manifest: Mapping[str, Any]) -> None:
    if not (manifest.get("topology") or {}).get("provider"):
        raise MissingEvidence("the manifest declares no topology.provider: there is no description to judge")


def _truth(facts: Sequence[NodeFacts], vocabulary: Vocabulary, kind: str) -> dict[str, dict[str, str]]:
    return {f.node_id: truth_labels(f, vocabulary, kind) for f in facts}


def _resolve(short: object, facts: Sequence[NodeFacts]) -> str:
    """The full id of a recorded (short) node id; MissingEvidence when no recorded node has it."""
    hits = [f.node_id for f in facts if isinstance(short, str) and short and f.node_id.startswith(short)]
    if len(hits) != 1:
        raise MissingEvidence(f"a run names node {short!r}, which is not one recorded node")
    return hits[0]
