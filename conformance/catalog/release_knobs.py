"""The knobs a report is judged by that are no check's threshold: release data (issue 48 item 1).

`merge` and `verify` judge a sharded run by the most shards one run may be split into, the window
its shards must fit and the mandatory core every shard runs (tiers/tiers.yaml `shards`), and a
sampled run by its sample size (`nodes.sample_size`). They once lived in tiers/run.yaml, which no
release binds: the VERIFIER's file then judged every report, so a later edit (a wider window, a
larger sample) refused older honest reports or accepted reports under knobs their release never
had. tiers/tiers.yaml is release data (every report binds it as `suite.tiers_sha256`, and
tiers/releases/<version>/ archives it), so each report is judged by the knobs of the release it
claims (conformance.catalog.releases.load_release_data(...)[1].knobs), never by the verifier's.

Pure: a schema-validated tiers.yaml document in, typed knobs out.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import AbstractSet, Any, Mapping, Protocol

from conformance.catalog.node_sample import NodePolicy
from conformance.catalog.shards import ShardPolicy
from conformance.errors import UserError


class IdVocabulary(Protocol):
    """What the knobs need of catalog.data.Vocabulary (a Protocol: data imports this module)."""

    def check_id(self, where: str, cid: str) -> None: ...


@dataclass(frozen=True)
class ReleaseKnobs:
    """A release's shard policy (tiers.yaml `shards`) and node sample (tiers.yaml `nodes`)."""

    shards: ShardPolicy
    nodes: NodePolicy


# The knobs every release before these keys moved into tiers/tiers.yaml ran with (their archived
# tiers.yaml lacks them; tiers/run.yaml said so from the release that introduced shards and the
# seeded sample until this move, unchanged): a report of such a release is judged by them, not
# by whatever this verifier's data says today.
LEGACY_KNOBS = ReleaseKnobs(
    shards=ShardPolicy(max_count=16, window_h=72.0,
                       core=("DP-001", "DP-002", "DP-003", "DP-004", "DP-005", "DP-016")),
    nodes=NodePolicy(sample_size=1))


def _shards(block: Mapping[str, Any] | None, vocabulary: IdVocabulary, known: AbstractSet[str] | None,
            where: str) -> ShardPolicy:
    """tiers.yaml `shards` (schema-validated), or the legacy policy when the release has none. A
    core id with no area's prefix, or (given `known`, the checklist's ids) no check, is a one-line
    UserError naming the field (the legacy core is no document's: nothing to check)."""
    if block is None:
        return LEGACY_KNOBS.shards
    core = tuple(str(c) for c in block["core"])
    for cid in core:
        vocabulary.check_id(f"{where}: shards.core", cid)
        if known is not None and cid not in known:
            raise UserError(f"{where}: shards.core: unknown check id {cid}")
    return ShardPolicy(int(block["max_count"]), float(block["window_h"]), core)


def parse_release_knobs(doc: Mapping[str, Any], vocabulary: IdVocabulary, known: AbstractSet[str] | None = None,
                        where: str = "tiers") -> ReleaseKnobs:
    """The knobs of a validated tiers.yaml document; each block a release lacks is LEGACY_KNOBS'."""
    nodes = doc.get("nodes")
    return ReleaseKnobs(_shards(doc.get("shards"), vocabulary, known, where),
                        NodePolicy(int(nodes["sample_size"])) if nodes is not None else LEGACY_KNOBS.nodes)
