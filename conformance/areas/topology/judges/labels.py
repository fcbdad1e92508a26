"""The topology judges of the labels and the description (TL checks that judge what the plugin put
on each node and what its description says)."""
from __future__ import annotations

from typing import Any, Mapping

from conformance.areas.topology import consistency
from conformance.areas.topology.evidence import expected
from conformance.areas.topology.judges.common import JUDGES, NODE_RECORD, _failed, _nodes, _per_node, _provider, _vocabulary
from conformance.areas.topology.view import description_checks
from conformance.catalog.manifest_view import TopologyExpected
from conformance.report.judges import ERROR, PASS, MissingEvidence, Verdict


# ---------------------------------------------------------------------------------------------- labels
@JUDGES.rule(needs=NODE_RECORD)
def type_label_on_exactly_the_device_nodes(m: Mapping[str, Any], p: Mapping[str, Any],
                                           manifest: Mapping[str, Any]) -> Verdict:
    """TL-001: every node with devices carries the manager's type (the manifest's), no node without
    devices carries it, and the plugin returns no type label there."""
    kind = expected(manifest)[0]
    return _per_node(m, manifest, "ray.io/accelerator-type is wrong",
                     lambda f: consistency.type_label_problems(f, kind), f"the type label is {kind!r} exactly")


@JUDGES.rule(needs=NODE_RECORD)
def plugin_labels_are_valid(m: Mapping[str, Any], p: Mapping[str, Any], manifest: Mapping[str, Any]) -> Verdict:
    """TL-002: every label the plugin returned passes Ray's label rules and the vocabulary's."""
    vocabulary = _vocabulary()
    return _per_node(m, manifest, "invalid plugin labels",
                     lambda f: consistency.validity_problems(f, vocabulary)[0], "the plugin's labels are valid")


@JUDGES.rule(needs=NODE_RECORD)
def plugin_labels_are_on_the_nodes(m: Mapping[str, Any], p: Mapping[str, Any], manifest: Mapping[str, Any]) -> Verdict:
    """TL-003: every label the plugin returned on a node is one of its Ray labels, same value."""
    return _per_node(m, manifest, "the plugin's labels are missing from the nodes", consistency.applied_problems,
                     "the plugin's labels are applied")


@JUDGES.rule(needs=NODE_RECORD)
def labels_agree_with_description(m: Mapping[str, Any], p: Mapping[str, Any], manifest: Mapping[str, Any]) -> Verdict:
    """TL-007: every vocabulary label that describes a topology field equals the description."""
    _provider(manifest)
    vocabulary = _vocabulary()
    return _per_node(m, manifest, "labels disagree with the topology description",
                     lambda f: consistency.agreement_problems(f, vocabulary), "labels agree with the description")


@JUDGES.rule(needs=NODE_RECORD)
def described_domains_are_published(m: Mapping[str, Any], p: Mapping[str, Any], manifest: Mapping[str, Any]) -> Verdict:
    """TL-008: every domain a node's description names is one of its labels (a vocabulary key)."""
    _provider(manifest)
    facts, _ = _nodes(m, manifest)
    if not any(f.described and f.description.get("domains") for f in facts if not f.probe_error):
        raise MissingEvidence("no recorded description names a domain (the check is not applicable)")
    vocabulary = _vocabulary()
    return _per_node(m, manifest, "described domains are not published as labels",
                     lambda f: consistency.publication_problems(f, vocabulary), "described domains are published")


# ---------------------------------------------------------------------------------------------- description
def _description(m: Mapping[str, Any], manifest: Mapping[str, Any], check_id: str, what: str,
                 topology_expected: TopologyExpected | None = None) -> Verdict:
    _provider(manifest)
    facts, problems = _nodes(m, manifest)
    uncomparable = []
    for f in facts:
        found = description_checks(f, topology_expected)
        problems.setdefault(f.short, []).extend(found[check_id])
        if found["uncomparable"]:
            uncomparable.append(f.short)
    failed = _failed(what, problems)
    if failed:
        return failed
    if check_id != "TL-004" and uncomparable:
        return Verdict(ERROR, f"no schema-valid description to compare on node(s) {', '.join(sorted(uncomparable))} "
                              "(TL-004 reports why)")
    return Verdict(PASS, f"{sum(1 for f in facts if f.described)} description(s) hold")


@JUDGES.rule(needs=NODE_RECORD)
def description_is_well_formed(m: Mapping[str, Any], p: Mapping[str, Any], manifest: Mapping[str, Any]) -> Verdict:
    """TL-004: each node's description validates against the schema, with consistent references."""
    return _description(m, manifest, "TL-004", "invalid topology description")


@JUDGES.rule(needs=NODE_RECORD)
def described_devices_are_rays_devices(m: Mapping[str, Any], p: Mapping[str, Any],
                                       manifest: Mapping[str, Any]) -> Verdict:
    """TL-005: the described device ids are the ids Ray handed the node's probe, the described
    type the manager's; a node without devices describes none."""
    return _description(m, manifest, "TL-005", "the description's devices are not the ones Ray schedules")


@JUDGES.rule(needs=NODE_RECORD)
def description_matches_manifest_expectation(m: Mapping[str, Any], p: Mapping[str, Any],
                                             manifest: Mapping[str, Any]) -> Verdict:
    """TL-006: each node with devices describes what the manifest's topology.expected says (the
    manifest's expectation, never one the record carries)."""
    want = (manifest.get("topology") or {}).get("expected")
    if not want:
        raise MissingEvidence("the manifest declares no topology.expected (the check is not applicable)")
    try:   # the embedded manifest as the typed view reads it (verify's `manifest` line holds it to the schema)
        declared = TopologyExpected.from_json(want)
    except (KeyError, TypeError, AttributeError):
        raise MissingEvidence("the manifest's topology.expected is not what the manifest schema allows") from None
    return _description(m, manifest, "TL-006", "the description differs from topology.expected", declared)
