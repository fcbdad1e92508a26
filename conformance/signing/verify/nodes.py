"""`nodes`: the per-node checks exercised the nodes the run's node mode gives (issue 48).

A sampled run (`run --nodes sample`, the default) records its seed and size (selection.nodes);
the nodes its visibility checks ran on (DP-008/010/011/012: metrics.node_coverage and per_node)
must be the seed's choice among the run's own list of its nodes (environment.devices.nodes), as
conformance.catalog.node_sample recomputes it, so a vendor cannot run the sample on the nodes it
likes. A run under `--nodes all` must have run them on every node of that list that can hold the
scenario: a node missing from a check's per_node is a failure. Under either mode the recovery
checks that kill a process on each node (FR-001..FR-005) must have run on the seed's choice of
sample_size node(s) per failure domain (the label keys of the domains the manifest declares). The sample size is the
claimed release's (its tiers/tiers.yaml nodes.sample_size, Ladder.knobs.nodes; a release before the key:
release_knobs.LEGACY_KNOBS), never the verifier's own data: a later release's larger sample must not refuse an
older honest run. A report of a release before the seeded sample (no seed) passes with a line saying so.
"""
from __future__ import annotations

from conformance.catalog.labels import load_vocabulary
from conformance.catalog.node_sample import choice_problems, manifest_domain_keys
from conformance.signing.node_mode import recorded_mode_problems
from conformance.signing.verify.case import Judged
from conformance.signing.verify.lines import Verification


def exercised_nodes_are_the_runs_choice(v: Verification, case: Judged) -> None:
    """`nodes`: the per-node checks' exercised nodes are the seed's choice (sample) or every node (all)."""
    report = case.report.document   # the node records, judged as signed (node_sample, node_mode)
    release_data, why = case.release_data
    if release_data is None:
        v.judge("nodes", [f"the release's sample size cannot be read: {why or 'the release is unknown'}"], "")
        return
    keys = manifest_domain_keys(case.report.manifest, load_vocabulary())
    problems, summary = choice_problems(report, release_data[1].knobs.nodes, keys)
    v.judge("nodes", recorded_mode_problems(report) + problems, summary + sample_word(report))


# Held-out round 25, N25_05: the sample's seed is the vendor's. Its run draws it (or takes --node-seed),
# and the per-node records name no fact of their node that another record holds (the tasks' device ids are
# alike on every node), so a run redrawn until its sample passes, or its records relabelled with a seed
# that chooses another node, reads as an honest sample. Only a seed from another party, or --nodes all,
# leaves nothing to choose (redteam/FINDINGS.md, round 27; docs/signing.md "What verify cannot recompute").
SAMPLE_WORD = ("; which nodes the sample covered rests on the vendor's word (its seed is the vendor's: drawn by its "
               "run or given with --node-seed); --nodes all leaves nothing to choose")


def sample_word(report: object) -> str:
    """The nodes line's note on a sampled run (nothing for --nodes all or a release before it)."""
    from conformance.report.coverage import node_mode

    return SAMPLE_WORD if isinstance(report, dict) and node_mode(report) == "sample" else ""
