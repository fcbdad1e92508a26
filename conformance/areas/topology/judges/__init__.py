"""The topology area's judges: each check's recorded evidence + the release's params -> its outcome.

The checklist names a check's judge (`judge: <function name>`); the live check decides with it
(CheckContext.decide) and `verify` decides again with it (conformance/report/judges.py says the
rules every judge keeps). Pure: no Ray, no clock, no I/O beyond the release's own label
vocabulary (tiers/labels.yaml, a digested data file of the release, read once).

Every TL check records `nodes` (each node's facts: devices, Ray labels, what the plugin returned
there; conformance.areas.topology.evidence) and `resource`. The judges rebuild the facts from
that record and run the same pure problem functions the live check ran, after holding the record
to the manifest: its resource, its node count (exactly, on a cluster the suite started, with at
least as many nodes with devices as the manifest's declared environment gives; at least, on the
vendor's own), devices_per_node on every node with devices, the domain labels the manifest expects,
the plugin's labels behind every label only they put on a node the suite started, and the declared
accelerator type (the type the labels are judged against is the
manifest's, never the record's). The placement checks also record the selectors they submitted
and where every submission ran: the judge rebuilds the plan the check runs on the recorded nodes
(conformance.areas.topology.plans) and refuses a record that drops a selector, a pinned node or a
run, then judges every run against the nodes' labels and truth.

One module per group of checks, each registering its judges in the one table (common.JUDGES, the
area's `Area.judges` reads it here): labels (the plugin's labels and the description), placement
(label selectors), groups (placement groups). Every judge stays importable from here.
"""
from __future__ import annotations

from conformance.areas.topology.judges.common import JUDGES
from conformance.areas.topology.judges.groups import (
    bundles_land_on_matching_nodes,
    packing_keeps_groups_in_one_domain,
    unschedulable_groups_are_reported_pending,
)
from conformance.areas.topology.judges.labels import (
    described_devices_are_rays_devices,
    described_domains_are_published,
    description_is_well_formed,
    description_matches_manifest_expectation,
    labels_agree_with_description,
    plugin_labels_are_on_the_nodes,
    plugin_labels_are_valid,
    type_label_on_exactly_the_device_nodes,
)
from conformance.areas.topology.judges.placement import (
    fallback_strategy_is_honoured,
    feasible_primary_wins_over_fallback,
    in_and_multi_key_selectors_place_rightly,
    negative_selectors_avoid_matching_nodes,
    selectors_place_only_on_matching_nodes,
    unmatched_selectors_stay_pending,
)

__all__ = [
    "JUDGES",
    "bundles_land_on_matching_nodes",
    "described_devices_are_rays_devices",
    "described_domains_are_published",
    "description_is_well_formed",
    "description_matches_manifest_expectation",
    "fallback_strategy_is_honoured",
    "feasible_primary_wins_over_fallback",
    "in_and_multi_key_selectors_place_rightly",
    "labels_agree_with_description",
    "negative_selectors_avoid_matching_nodes",
    "packing_keeps_groups_in_one_domain",
    "plugin_labels_are_on_the_nodes",
    "plugin_labels_are_valid",
    "selectors_place_only_on_matching_nodes",
    "type_label_on_exactly_the_device_nodes",
    "unmatched_selectors_stay_pending",
    "unschedulable_groups_are_reported_pending",
]
