"""Each check's cluster shape is checklist data (`cluster:` in tiers/checklist.yaml, issues 43 and 47):
every check names one, the run's hooks start clusters by it, and verify holds a report to the shapes
of the release it names (a release from before the field: the verifier's own checklist). No Ray."""
from __future__ import annotations

import copy
from types import SimpleNamespace
from typing import Any

import pytest

from conformance.catalog import datafiles
from conformance.catalog.clusters import NO_CLUSTER, names_clusters
from conformance.catalog.data import Checklist, checklist_path, load_checklist, parse_checklist
from conformance.cluster import shapes
from conformance.errors import UserError
from conformance.run.hooks import RunHelp
from conformance.signing.coverage_rule import coverage_problems, release_shapes


def raw_checklist() -> dict[str, Any]:
    raw: dict[str, Any] = datafiles.read_yaml_or_json(checklist_path(), what="checklist")
    return raw


def with_clusters(change: dict[str, str | None]) -> dict[str, Any]:
    """The current checklist's document with the `cluster:` of some checks changed (None: dropped)."""
    raw = copy.deepcopy(raw_checklist())
    for entry in raw["checks"]:
        if entry["id"] in change:
            if change[entry["id"]] is None:
                del entry["cluster"]
            else:
                entry["cluster"] = change[entry["id"]]
    return raw


def without_clusters() -> dict[str, Any]:
    """The current checklist as a release from before the field wrote it."""
    return with_clusters({c["id"]: None for c in raw_checklist()["checks"]})


def test_every_check_names_a_registered_shape_or_none() -> None:
    checklist = load_checklist()
    assert names_clusters(checklist.checks)
    known = set(shapes.registry()) | {NO_CLUSTER}
    assert {c.id: c.cluster for c in checklist.checks if c.cluster not in known} == {}
    enum = datafiles.load_schema("checklist")["properties"]["checks"]["items"]["properties"]["cluster"]["enum"]
    assert set(enum) == known, "the schema's shapes are the registry's, and none"


def test_a_check_without_its_cluster_is_refused_in_one_line() -> None:
    with pytest.raises(UserError, match=r"^checklist: DP-006\.cluster: missing; name the cluster shape"):
        parse_checklist(with_clusters({"DP-006": None}))
    with pytest.raises(UserError, match="cluster"):
        parse_checklist(with_clusters({"DP-006": "recovery-nodez"}))   # the schema's enum
    old = parse_checklist(without_clusters())   # a release from before the field still loads
    assert not names_clusters(old.checks) and old.by_id()["FR-007"].shape() is None


@pytest.mark.parametrize(("ids", "needed"), [
    (["DP-001", "CC-001"], set()),                                 # no cluster of the run: none started, no probe
    (["DP-001", "DP-006"], {"shared"}),                            # the shared cluster starts at the preflight
    (["FR-007", "DP-015"], {"recovery-nodes", "preset-visible"}),  # a cluster, but not the shared one
])
def test_the_hooks_start_the_clusters_the_checklist_names(ids: list[str], needed: set[str]) -> None:
    checklist = load_checklist()
    items = [SimpleNamespace(nodeid=f"t::{cid}") for cid in ids]
    run = SimpleNamespace(item_checks={f"t::{cid}": cid for cid in ids}, data=SimpleNamespace(checklist=checklist))
    assert RunHelp._shapes_needed(SimpleNamespace(run=run), items) == needed   # type: ignore[arg-type]  # the one attribute it reads
    moved = parse_checklist(with_clusters({cid: "shared" for cid in ids}))
    run.data.checklist = moved                                     # the data decides, not the test
    assert RunHelp._shapes_needed(SimpleNamespace(run=run), items) == {"shared"}   # type: ignore[arg-type]


# reports/example's run (tests/unit/test_signing_round27.py): FR-007 ran on the 3-node recovery lab
LAB = {"id": "FR-007", "outcome": "pass", "metrics": {"node_coverage": {
    "alive": 3, "mode": "sample", "nodes": ["2b7348c2", "330b06f7", "cfce3f35"]}}}
ENVIRONMENT = {"devices": {"nodes": [{"node_id": "31bf8eb2" + "0" * 48}, {"node_id": "7ee44d4b" + "0" * 48}]}}
CLUSTER = {"history": [{"shape": "shared", "nodes": 2, "ok": True}, {"shape": "recovery-nodes", "nodes": 3, "ok": True}]}


def _coverage(checklist: Checklist) -> list[str]:
    return coverage_problems([LAB], ENVIRONMENT, CLUSTER, remote=False, merged=False, shapes=release_shapes(checklist))


def test_verify_reads_the_shapes_of_the_reports_release() -> None:
    assert _coverage(load_checklist()) == []
    # a release whose checklist put FR-007 on the shared cluster holds its report to that cluster
    shared = parse_checklist(with_clusters({"FR-007": "shared"}))
    assert release_shapes(shared)["FR-007"] == "shared"
    assert any("FR-007" in p and "not the run's" in p for p in _coverage(shared))


def test_a_release_before_the_field_falls_back_to_the_verifiers_checklist() -> None:
    old = parse_checklist(without_clusters())
    assert release_shapes(old) == release_shapes(load_checklist())
    assert release_shapes(old)["FR-007"] == "recovery-nodes" and "DP-001" not in release_shapes(old)
    assert _coverage(old) == []
