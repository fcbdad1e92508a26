"""Every topology check has teeth: broken variants it catches, and the good plugin passes.

Each run starts the suite in a fresh pytest process (only the topology check files) on the
3-node base manifest tests/manifests/topology-3node.yaml: two nodes with devices in two
interconnect domains, one node without devices. To fit the time budget, a broken *manager*
(labels) and a broken *provider* (description) share a run when they touch disjoint checks;
the expected failing set is then the union of the two, and each fault's intended check must
fail with a reason that names that fault.
"""
from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml

from suite_runner import BROKEN, CHECKS, outcomes, run_suite, write_manifest

ROOT = Path(__file__).resolve().parent.parent
BASE = ROOT / "tests" / "manifests" / "topology-3node.yaml"
TOPOLOGY_FILES = [str(CHECKS / f"test_topology_{name}.py") for name in ("labels", "description", "placement", "groups")]

# run -> manager class, provider function, {intended check: phrase its reason must contain},
#        every topology check expected to fail, checks expected to be not_applicable.
RUNS: dict[str, dict[str, Any]] = {
    "wrong-type-label+no-islands": {
        "manager": "WrongTypeLabel", "provider": "describe_without_islands",
        "intended": {"TL-001": "SIMACC-X2", "TL-012": "fallback", "TL-013": "did not place", "TL-006": "simlink"},
        "fail": {"TL-001", "TL-006", "TL-007", "TL-009", "TL-010", "TL-012", "TL-013"}, "na": set(),
    },
    "type-on-empty-node+dangling-link": {
        "manager": "TypeOnEmptyNode", "provider": "describe_dangling_link",
        "intended": {"TL-001": "without devices", "TL-009": "should not match", "TL-011": "should not match",
                     "TL-004": "'9'"},
        "fail": {"TL-001", "TL-004", "TL-009", "TL-010", "TL-011", "TL-012"}, "na": set(),
    },
    "domain-lie+one-based-ids": {
        "manager": "DomainLie", "provider": "describe_one_based_ids",
        "intended": {"TL-007": "simlink-b", "TL-010": "stayed pending", "TL-014": "must stay pending",
                     "TL-005": "Ray hands out"},
        "fail": {"TL-005", "TL-006", "TL-007", "TL-008", "TL-009", "TL-010", "TL-011", "TL-012", "TL-013", "TL-014"},
        "na": set(),
    },
    "invalid-label-value+zero-bandwidth": {
        "manager": "InvalidLabelValue", "provider": "describe_zero_bandwidth",
        "intended": {"TL-002": "firmware", "TL-004": "bandwidth_gbps"},
        "fail": {"TL-002", "TL-004"}, "na": {"TL-005", "TL-006"},
    },
    "labels-not-applied": {
        "manager": "LabelsNotApplied", "provider": None,
        "intended": {"TL-003": "Ray label is absent", "TL-008": "carries none"},
        "fail": {"TL-003", "TL-008"}, "na": {"TL-014"},
    },
}


def manifest_for(manager: str | None, provider: str | None, name: str) -> dict[str, Any]:
    data = yaml.safe_load(BASE.read_text())
    data["product"] = f"SimAcc topology {name}"
    if manager or provider:
        data["plugin"]["python_path"] = [str(BROKEN)]
    if manager:
        data["accelerator"]["manager"] = f"broken_topology:{manager}"
    if provider:
        data["topology"]["provider"] = f"broken_topology:{provider}"
    return data


def run_topology(data: dict[str, Any], tmp_path: Path) -> tuple[int, dict[str, Any], dict[str, str]]:
    manifest = write_manifest(data, tmp_path)
    code, report, output = run_suite(manifest, tmp_path / "out", *TOPOLOGY_FILES)
    assert report is not None, output[-3000:]
    return code, report, outcomes(report, "topology")


def test_every_topology_check_has_a_variant() -> None:
    from conformance.data import load_suite_data

    topology_checks = {c.id for c in load_suite_data().checklist.active() if c.area == "topology"}
    intended = {cid for run in RUNS.values() for cid in run["intended"]}
    assert topology_checks == intended, f"without a variant: {sorted(topology_checks - intended)}"


@pytest.mark.slow
def test_good_plugin_passes_every_topology_check(tmp_path: Path) -> None:
    _, report, topo = run_topology(manifest_for(None, None, "good"), tmp_path)
    bad = {k: v for k, v in topo.items() if v != "pass"}
    assert not bad, {c["id"]: c["reason"] for c in report["checks"] if c["id"] in bad}
    view = report["sections"]["Topology"]
    assert view["data"]["differences"] == 0 and len(view["data"]["nodes"]) == 3


@pytest.mark.slow
@pytest.mark.parametrize("name", sorted(RUNS))
def test_broken_variant_is_caught(name: str, tmp_path: Path) -> None:
    run = RUNS[name]
    code, report, topo = run_topology(manifest_for(run["manager"], run["provider"], name), tmp_path)
    reasons = {c["id"]: c["reason"] or "" for c in report["checks"]}
    failed = {k for k, v in topo.items() if v in ("fail", "error")}
    na = {k for k, v in topo.items() if v == "not_applicable"}
    for cid, phrase in run["intended"].items():
        assert topo[cid] == "fail", f"{cid} did not catch {name}: {topo[cid]} ({reasons[cid]})"
        assert phrase in reasons[cid], f"{cid} failed for another reason than {name}: {reasons[cid]}"
    assert failed == run["fail"], (f"{name}: failed {sorted(failed)}, expected {sorted(run['fail'])}; "
                                   + "; ".join(f"{k}: {reasons[k][:200]}" for k in sorted(failed ^ run["fail"])))
    assert na == run["na"], f"{name}: not_applicable {sorted(na)}, expected {sorted(run['na'])}"
    assert all(v == "pass" for k, v in topo.items() if k not in run["fail"] | run["na"])
    assert code == 1
